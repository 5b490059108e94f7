"""The command-line corpus: options and arguments that are wrong, for every command.

A missing argument, an unknown option or command, a value out of its range or not of its
type, an extra argument, a ``--set`` nested without end: one line ``error: ...`` naming the
option and where to read more, exit 2, no usage box, no traceback, nothing created. The bulk
runs through the entry point in this process; a sample runs as real processes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.inprocess import run_in_process
from tests.cli.test_bad_spec_corpus import GOOD, _listing, _run_process_env

DEEP_SET = "gpu." + ".".join(["a"] * 500) + "=1"
#: A billion laughs in one flow value: nine anchors, each nine of the one before.
BOMB_VALUE = (
    "["
    + ", ".join(
        f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 9 if i else ["x"] * 9) + "]" for i in range(9)
    )
    + "]"
)
CASES: list[tuple[str, tuple[str, ...], str]] = [
    ("run_without_spec", ("run",), "Missing argument 'spec'"),
    ("run_trials_zero", ("run", "spec.yaml", "--trials", "0"), "'--trials'"),
    ("run_trials_text", ("run", "spec.yaml", "--trials", "many"), "'--trials'"),
    ("run_unknown_option", ("run", "spec.yaml", "--trails", "5"), "--trails"),
    ("unknown_command", ("frobnicate",), "No such command 'frobnicate'"),
    ("validate_extra_argument", ("validate", "spec.yaml", "x.yaml"), "extra argument"),
    ("schema_extra_argument", ("schema", "x"), "extra argument"),
    ("sweep_grid_with_a_value", ("sweep", "spec.yaml", "--grid", "lots"), "extra argument"),
    ("sweep_samples_negative", ("sweep", "spec.yaml", "--samples", "-1"), "at least 1 (got -1)"),
    ("sweep_samples_text", ("sweep", "spec.yaml", "--samples", "lots"), "'--samples'"),
    ("sweep_chunk_zero", ("sweep", "spec.yaml", "--chunk", "0"), "'--chunk'"),
    ("sensitivity_method_unknown", ("sensitivity", "spec.yaml", "--method", "magic"), "magic"),
    ("sensitivity_samples_negative", ("sensitivity", "spec.yaml", "--samples", "-5"), "samples"),
    ("dashboard_port_too_big", ("dashboard", "corpus", "--port", "99999"), "'--port'"),
    ("pareto_without_study", ("pareto",), "Missing argument"),
    ("status_option_unknown", ("status", "corpus", "--jsn"), "--jsn"),
    ("compare_option_unknown", ("compare", "a", "--cvs", "-"), "--cvs"),
    ("worker_without_spec", ("worker",), "Missing argument"),
    (
        "evaluate_set_nested_500_deep",
        ("evaluate", "spec.yaml", "--set", DEEP_SET),
        "deeper than 50",
    ),
    (
        "evaluate_set_value_3000_brackets",
        ("evaluate", "spec.yaml", "--set", "gpu=" + "[" * 3000 + "]" * 3000),
        "nested deeper than 50 levels",
    ),
    (
        "evaluate_set_value_recursive_alias",
        ("evaluate", "spec.yaml", "--set", "gpu={a: &a [*a]}"),
        "recursive alias",
    ),
    (
        "sensitivity_set_value_alias_bomb",
        ("sensitivity", "spec.yaml", "--set", "gpu=" + BOMB_VALUE),
        "once aliases are expanded",
    ),
]


def _folder(base: Path, name: str) -> Path:
    folder = base / name
    folder.mkdir()
    (folder / "spec.yaml").write_text(GOOD)
    return folder


def _assert_one_line(code: int, stderr: str, fragment: str, created: list[str]) -> None:
    shown = stderr[-3000:]
    assert code == 2, (code, shown)
    assert "Traceback" not in stderr and "╭" not in stderr and "Usage:" not in stderr, shown
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), shown
    assert fragment in lines[0], (fragment, shown)
    assert created == [], created


def test_the_corpus_covers_every_command() -> None:
    commands = {args[0] for _, args, _ in CASES}
    assert {"run", "validate", "sweep", "sensitivity", "dashboard", "pareto", "status"} <= commands
    assert {"compare", "worker", "evaluate", "schema"} <= commands
    assert len({name for name, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(("name", "args", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_a_usage_error_is_one_line(
    tmp_path: Path, name: str, args: tuple[str, ...], fragment: str
):
    folder = _folder(tmp_path, name)
    before = _listing(folder)
    res = run_in_process(*args, cwd=folder, env={"DSE_STUDIES_DIR": str(folder / "studies")})
    _assert_one_line(res.returncode, res.stderr, fragment, sorted(_listing(folder) - before))


@pytest.mark.parametrize("name", ["run_trials_zero", "unknown_command", "sweep_samples_text"])
def test_a_real_process_says_the_same(tmp_path: Path, name: str) -> None:
    _, args, fragment = next(c for c in CASES if c[0] == name)
    folder = _folder(tmp_path, name)
    before = _listing(folder)
    res = _run_process_env(folder, {"DSE_STUDIES_DIR": str(folder / "studies")}, *args)
    _assert_one_line(res.returncode, res.stderr, fragment, sorted(_listing(folder) - before))


def test_help_and_a_bare_dse_still_show_the_help(tmp_path: Path) -> None:
    res = run_in_process("--help", cwd=tmp_path)
    assert res.returncode == 0 and "Commands" in res.stdout, res.stderr
    res = run_in_process(cwd=tmp_path)
    assert res.returncode == 2 and "Commands" in res.stdout + res.stderr
