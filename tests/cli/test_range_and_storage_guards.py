"""Ranges the run can use, and nothing created before it can work, through the real CLI.

A searched range numpy cannot span, integers a float does not hold exactly (Optuna stores
parameters as floats), a log range through zero, a step that does not divide its range, a
grid too large to sweep, a ``--scheduler`` that is malformed or where nothing listens, a
database server that is down, an SQLite file in a missing folder, a studies folder that is a
file: each is one line, exit 2, no traceback, and no study folder or file is made. The bulk
runs through the entry point in this process; a sample runs as real processes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli.inprocess import run_in_process
from tests.cli.test_bad_spec_corpus import _listing, _run_process_env

EVALUATOR = "import numpy as np\n\n\ndef f(design):\n    return {'a': float(design['x'])}\n"
SPEC = (
    "study: ranges\n"
    "space:\n"
    "  x: {RANGE}\n"
    "evaluators:\n"
    "  e: rmod:f\n"
    "objectives:\n"
    "  - {metric: e.a, direction: minimize}\n"
    "search: {sampler: random, trials: 3, seed: 0}\n"
)


@dataclass(frozen=True)
class Guard:
    name: str
    range: str  # the x parameter's mapping
    args: tuple[str, ...]  # the command after 'dse'
    start: str  # how the one line starts ("{spec}" is the spec's path)
    fragment: str
    env: tuple[tuple[str, str], ...] = ()  # with {dir}


def spec_range(name: str, rng: str, key: str, fragment: str) -> Guard:
    return Guard(
        name, rng, ("run", "spec.yaml", "--no-progress"), f"spec.yaml:3: space.x.{key}:", fragment
    )


def sweep(name: str, rng: str, fragment: str, *extra: str, env=()) -> Guard:
    args = ("sweep", "spec.yaml", "--no-progress", *extra)
    return Guard(name, rng, args, "error: ", fragment, env)


def run_with(name: str, fragment: str, *extra: str, env=()) -> Guard:
    rng = "{type: float, low: 0, high: 1}"
    return Guard(
        name, rng, ("run", "spec.yaml", "--no-progress", *extra), "error: ", fragment, env
    )


GUARDS: list[Guard] = [
    spec_range(
        "float_span_overflows", "{type: float, low: -1e308, high: 1e308}", "high", "overflows"
    ),
    spec_range(
        "float_span_at_max", "{type: float, low: -1.7e308, high: 1.7e308}", "high", "overflows"
    ),
    spec_range(
        "int_below_2_53", "{type: int, low: -1180591620717411303424, high: 5}", "low", "2**53"
    ),
    spec_range("int_above_2_53", "{type: int, low: 0, high: 9007199254740993}", "high", "2**53"),
    spec_range(
        "int_beyond_int64", "{type: int, low: 0, high: 100000000000000000000000}", "high", "2**53"
    ),
    spec_range(
        "float_log_negative_low", "{type: float, low: -1, high: 5, log: true}", "log", "low > 0"
    ),
    spec_range(
        "float_log_zero_low", "{type: float, low: 0, high: 5, log: true}", "log", "low > 0"
    ),
    spec_range(
        "int_log_negative_low", "{type: int, low: -4, high: 5, log: true}", "log", "low > 0"
    ),
    spec_range(
        "float_step_not_dividing",
        "{type: float, low: 0, high: 1, step: 0.3}",
        "step",
        "does not divide",
    ),
    spec_range(
        "float_step_most_of_range",
        "{type: float, low: 0, high: 1, step: 0.7}",
        "step",
        "would be 0.7",
    ),
    spec_range(
        "int_step_not_dividing", "{type: int, low: 0, high: 10, step: 3}", "step", "would be 9"
    ),
    spec_range(
        "int_step_not_dividing_neg",
        "{type: int, low: -7, high: 7, step: 4}",
        "step",
        "does not divide",
    ),
    sweep(  # a typo must not fork a process per number (the limit: 4 per core, at least 8)
        "jobs_beyond_the_machine",
        "{type: float, low: 0, high: 1}",
        "is more than",
        "--samples",
        "10",
        "--jobs",
        "100000",
    ),
    run_with("run_jobs_beyond_the_machine", "is more than", "--jobs", "100000"),
    Guard(  # numpy's SeedSequence took it and raised a traceback
        "sweep_negative_seed",
        "{type: float, low: 0, high: 1}",
        ("sweep", "spec.yaml", "--no-progress", "--samples", "10", "--seed", "-1"),
        "error: Invalid value for '--seed'",
        "greater than or equal to 0",
    ),
    sweep(
        "grid_over_the_cap", "{type: float, low: 0, high: 1, step: 0.0000000001}", "--samples N"
    ),
    sweep(
        "grid_axis_of_1e15",
        "{type: float, low: 0, high: 1e15, step: 1}",
        "more than a sweep takes",
    ),
    spec_range(
        "float_step_count_beyond_2_53",
        "{type: float, low: 0, high: 1e300, step: 1}",
        "step",
        "more than a float tells apart",
    ),
    spec_range(
        "float_step_1e-300",
        "{type: float, low: 0, high: 1, step: 1e-300}",
        "step",
        "cuts high - low into 1e+300 values",
    ),
    spec_range(
        "categorical_int_beyond_2_53",
        "{type: categorical, choices: [1, 100000000000000000000000]}",
        "choices",
        "integer choices must lie within +/-2**53",
    ),
    spec_range(
        "categorical_negative_int_beyond_2_53",
        "{type: categorical, choices: [1, -9007199254740993]}",
        "choices",
        "within +/-2**53",
    ),
    sweep(
        "scheduler_host_too_long",
        "{type: float, low: 0, high: 1, step: 0.5}",
        "nothing accepts connections",
        "--scheduler",
        "tcp://" + "a" * 300 + ":1",
    ),
    run_with(
        "journal_path_is_a_folder_name",
        "names a folder",
        "--storage",
        "journal:studies/",
    ),
    run_with(
        "sqlite_path_is_a_folder_name",
        "names a folder",
        "--storage",
        "sqlite:///somewhere/",
    ),
    run_with(
        "studies_folder_is_a_symlink_loop",
        "points back to itself",
        env=(("DSE_STUDIES_DIR", "{dir}/loop/studies"),),
    ),
    sweep("grid_of_a_huge_int", "{type: int, low: 0, high: 9007199254740992}", "9.01e+15 designs"),
    sweep(
        "scheduler_no_scheme",
        "{type: float, low: 0, high: 1, step: 0.5}",
        "no scheme",
        "--scheduler",
        "localhost:8786",
    ),
    sweep(
        "scheduler_other_scheme",
        "{type: float, low: 0, high: 1, step: 0.5}",
        "scheme 'http'",
        "--scheduler",
        "http://127.0.0.1:8786",
    ),
    sweep(
        "scheduler_bad_port",
        "{type: float, low: 0, high: 1, step: 0.5}",
        "out of range",
        "--scheduler",
        "tcp://127.0.0.1:99999",
    ),
    sweep(
        "scheduler_no_port",
        "{type: float, low: 0, high: 1, step: 0.5}",
        "needs a host and a port",
        "--scheduler",
        "tcp://127.0.0.1",
    ),
    sweep(
        "scheduler_path",
        "{type: float, low: 0, high: 1, step: 0.5}",
        "unexpected path",
        "--scheduler",
        "tcp://127.0.0.1:1/x",
    ),
    sweep(
        "scheduler_not_listening",
        "{type: float, low: 0, high: 1, step: 0.5}",
        "nothing accepts connections",
        "--scheduler",
        "tcp://127.0.0.1:1",
    ),
    run_with(
        "postgres_down",
        "cannot connect to the database",
        "--storage",
        "postgresql://u:secret@127.0.0.1:1/db",
    ),
    run_with(
        "sqlite_in_missing_folder",
        "missing/dir does not exist",
        "--storage",
        "sqlite:///missing/dir/x.db",
    ),
    run_with(  # /proc takes no new file, also for root (permission bits say nothing there)
        "sqlite_in_a_folder_that_takes_no_file",
        "cannot create files in /proc",
        "--storage",
        "sqlite:////proc/dse-x.db",
    ),
    run_with(
        "studies_folder_is_a_file",
        "is not a folder",
        env=(("DSE_STUDIES_DIR", "{dir}/notes.txt"),),
    ),
    run_with(
        "studies_folder_in_proc",
        "cannot create the study folder /proc/",
        env=(("DSE_STUDIES_DIR", "/proc/self"),),
    ),
    run_with(
        "studies_folder_below_a_file",
        "cannot create the study folder",
        env=(("DSE_STUDIES_DIR", "{dir}/notes.txt/studies"),),
    ),
    sweep(
        "sweep_studies_folder_in_proc",
        "{type: float, low: 0, high: 1, step: 0.5}",
        "cannot create the study folder /proc/",
        env=(("DSE_STUDIES_DIR", "/proc/self"),),
    ),
]


def _prepare(g: Guard, base: Path) -> Path:
    folder = base / g.name
    folder.mkdir()
    (folder / "rmod.py").write_text(EVALUATOR)
    (folder / "spec.yaml").write_text(SPEC.replace("{RANGE}", g.range))
    (folder / "notes.txt").write_text("not a folder\n")
    (folder / "loop").symlink_to("loop")
    return folder


def _env(g: Guard, folder: Path) -> dict[str, str | None]:
    env: dict[str, str | None] = {"DSE_STUDIES_DIR": str(folder / "studies")}
    env.update({k: v.replace("{dir}", str(folder)) for k, v in g.env})
    return env


def _assert_refused(g: Guard, code: int, stderr: str, created: list[str]) -> None:
    shown = stderr[-3000:]
    assert code == 2, (code, shown)
    assert "Traceback" not in stderr, shown
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, shown
    assert lines[0].startswith(g.start), (g.start, shown)
    assert g.fragment in lines[0], (g.fragment, shown)
    assert "secret" not in lines[0], "a password reached the message"
    assert created == [], created


def test_every_class_is_covered() -> None:
    assert len({g.name for g in GUARDS}) == len(GUARDS) >= 28
    assert {g.args[0] for g in GUARDS} == {"run", "sweep"}


@pytest.mark.parametrize("g", GUARDS, ids=lambda g: g.name)
def test_refused_in_one_line_before_anything_is_made(tmp_path: Path, g: Guard) -> None:
    folder = _prepare(g, tmp_path)
    before = _listing(folder)
    res = run_in_process(*g.args, cwd=folder, env=_env(g, folder))
    _assert_refused(g, res.returncode, res.stderr, sorted(_listing(folder) - before))


SAMPLE = [
    g
    for g in GUARDS
    if g.name
    in {
        "float_span_overflows",
        "int_beyond_int64",
        "grid_over_the_cap",
        "scheduler_no_scheme",
        "postgres_down",
        "float_step_1e-300",
        "studies_folder_is_a_symlink_loop",
        "studies_folder_in_proc",
    }
]


@pytest.mark.parametrize("g", SAMPLE, ids=lambda g: g.name)
def test_a_real_process_refuses_the_same_way(tmp_path: Path, g: Guard) -> None:
    folder = _prepare(g, tmp_path)
    before = _listing(folder)
    res = _run_process_env(folder, _env(g, folder), *g.args)
    _assert_refused(g, res.returncode, res.stderr, sorted(_listing(folder) - before))


def test_a_dividing_step_and_a_large_exact_int_are_accepted(tmp_path: Path) -> None:
    """The guards are the limits, not stricter: 0..1 by 0.1 and 2**53 itself are fine."""
    ranges = ("{type: float, low: 0, high: 1, step: 0.1}", "{type: int, low: 0, high: 2**53}")
    for i, rng in enumerate(ranges):
        rng = rng.replace("2**53", str(2**53))
        g = Guard(f"ok{i}", rng, ("validate", "spec.yaml"), "", "")
        folder = _prepare(g, tmp_path)
        res = run_in_process("validate", "spec.yaml", cwd=folder, env=_env(g, folder))
        assert res.returncode == 0, res.stderr


def test_a_relative_sqlite_path_outside_the_studies_folder_works(tmp_path: Path) -> None:
    """``sqlite:///../x.db`` is relative to the working folder, as in SQLAlchemy, wherever the
    studies folder is: the run makes it, the lock records it absolute (so a command run from
    another folder reads the same file), and the same command resumes the study."""
    g = Guard("rel", "{type: float, low: 0, high: 1}", (), "", "")
    folder = _prepare(g, tmp_path)
    env = _env(g, folder)
    args = ("run", "spec.yaml", "--no-progress", "--storage", "sqlite:///../outside.db")
    res = _run_process_env(folder, env, *args)
    assert res.returncode == 0, res.stderr
    db = tmp_path / "outside.db"
    assert db.read_bytes().startswith(b"SQLite format 3\x00")
    lock = (folder / "studies" / "ranges" / "spec.lock.yaml").read_text()
    assert f"sqlite:///{db}" in lock
    res = _run_process_env(tmp_path, env, "status", "ranges", "--json")
    assert res.returncode == 0 and '"finished": 3' in res.stdout, res.stderr
    res = _run_process_env(folder, env, *args, "--trials", "5")
    assert res.returncode == 0, res.stderr
    assert "2 new this run" in res.stdout, res.stdout
