"""The damaged-study corpus: a recorded study broken one way at a time, through the real CLI.

One small study is run once (a real ``dse run``); each case copies it and damages its journal
or its ``spec.lock.yaml``: a corrupt or cut line, binary garbage, an unknown op code, an edited
record, a journal deleted, linked out of the studies folder or replaced by a FIFO, a lock edited
or not YAML, a lock whose storage points elsewhere. ``dse status``, ``pareto`` and ``report``
must answer with one line naming the file (and the line, where one is wrong), exit 2, no
traceback, and create or change nothing anywhere in the case's folder. The bulk runs through
the entry point in this process; ``dashboard`` and a sample run as real processes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli.inprocess import run_in_process
from tests.cli.test_bad_spec_corpus import _run_process_env

EVALUATOR = "def f(design):\n    x = float(design['x'])\n    return {'a': x, 'b': (1 - x) ** 2}\n"
SPEC = textwrap.dedent(
    """\
    study: dmg
    space:
      x: {type: float, low: 0, high: 1}
    evaluators:
      lin: lin:f
    objectives:
      - {metric: lin.a, direction: minimize}
      - {metric: lin.b, direction: minimize}
    search: {sampler: random, trials: 5, seed: 0}
    """
)
STUDY = Path("studies") / "dmg"
JOURNAL = STUDY / "journal.log"
LOCK = STUDY / "spec.lock.yaml"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished study, recorded by a real ``dse run``."""
    folder = tmp_path_factory.mktemp("damaged-template")
    (folder / "lin.py").write_text(EVALUATOR)
    (folder / "spec.yaml").write_text(SPEC)
    (folder / "notes.txt").write_text("a user's notes, not a journal\n")
    res = _run_process_env(
        folder, {"DSE_STUDIES_DIR": str(folder / "studies")}, "run", "spec.yaml", "--no-progress"
    )
    assert res.returncode == 0, res.stderr
    return folder


# --- damage: functions of the case's folder ------------------------------------------------------


def _append(folder: Path, data: bytes) -> int:
    """``data`` appended as the journal's last line; returns its line."""
    with open(folder / JOURNAL, "ab") as f:
        f.write(data)
    return len(_lines(folder))


def _lines(folder: Path) -> list[bytes]:
    return (folder / JOURNAL).read_bytes().splitlines(keepends=True)


def _write_lines(folder: Path, lines: list[bytes]) -> None:
    (folder / JOURNAL).write_bytes(b"".join(lines))


def _first(folder: Path, op: int) -> int:
    """Index of the first journal record with op code ``op``."""
    return next(i for i, ln in enumerate(_lines(folder)) if json.loads(ln)["op_code"] == op)


def _middle(folder: Path) -> int:
    return len(_lines(folder)) // 2


def journal_line(fn: Callable[[dict], object], *, op: int | None = None) -> Callable[[Path], int]:
    """Edit one record (the middle one, or the first of op code ``op``); ``fn`` returns the new
    line (bytes, or an object to dump as JSON). Returns the 1-based line edited."""

    def damage(folder: Path) -> int:
        lines = _lines(folder)
        i = (
            len(lines) - 1
            if op == -1
            else _first(folder, op)
            if op is not None
            else _middle(folder)
        )
        new = fn(json.loads(lines[i]))
        lines[i] = new if isinstance(new, bytes) else json.dumps(new).encode() + b"\n"
        _write_lines(folder, lines)
        return i + 1

    return damage


def _bind_unix_socket(path: Path) -> None:
    """A Unix socket at ``path``, bound by its name from its folder: a socket's path may hold
    at most ~107 bytes, less than a deep pytest temporary folder (pytest-153/...) needs."""
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(path.name)
    finally:
        os.chdir(here)


def insert_line(data: bytes) -> Callable[[Path], int]:
    def damage(folder: Path) -> int:
        lines = _lines(folder)
        i = _middle(folder)
        _write_lines(folder, [*lines[:i], data, *lines[i:]])
        return i + 1

    return damage


def cut_first_line(folder: Path) -> int:
    lines = _lines(folder)
    lines[0] = lines[0][: len(lines[0]) // 2] + b"\n"
    _write_lines(folder, lines)
    return 1


def garbage_file(folder: Path) -> int:
    (folder / JOURNAL).write_bytes(bytes(range(256)) * 8 + b"\n")
    return 1


def without(key: str, *, op: int) -> Callable[[Path], int]:
    return journal_line(lambda r: {k: v for k, v in r.items() if k != key}, op=op)


def replace_path(
    make: Callable[[Path, Path], None], what: Path = JOURNAL
) -> Callable[[Path], None]:
    """Replace ``what`` with what ``make(path, folder)`` puts there."""

    def damage(folder: Path) -> None:
        path = folder / what
        path.unlink()
        make(path, folder)

    return damage


def edit_lock(old: str, new: str, *, at: str | None = None) -> Callable[[Path], int]:
    """The lock with ``old`` replaced by ``new``; the line is where ``at`` (or ``new``'s first
    line, or ``old``'s when deleting) is in the result."""

    def damage(folder: Path) -> int:
        path = folder / LOCK
        text = path.read_text()
        assert old in text, old
        text = text.replace(old, new.replace("{dir}", str(folder)), 1)
        path.write_text(text)
        mark = at or (new.replace("{dir}", str(folder)).splitlines() or [""])[0]
        if not mark:
            return 1
        return text[: text.index(mark)].count("\n") + 1

    return damage


def lock_storage(url: str) -> Callable[[Path], int]:
    """The lock's storage line replaced by ``url`` (``{dir}``: the case's folder)."""

    def damage(folder: Path) -> int:
        path = folder / LOCK
        lines = path.read_text().splitlines(keepends=True)
        i = next(n for n, ln in enumerate(lines) if ln.startswith("storage:"))
        lines[i] = f"storage: {url.replace('{dir}', str(folder))}\n"
        path.write_text("".join(lines))
        return i + 1

    return damage


def lock_bytes(data: bytes) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        (folder / LOCK).write_bytes(data)

    return damage


@dataclass(frozen=True)
class DamageCase:
    """``damage(folder)`` breaks the copy and may return the line it broke; ``file`` is the
    file the message must name (relative to the folder, or absolute), ``line`` True to expect
    the line ``damage`` returned, a number, or None for none."""

    name: str
    damage: Callable[[Path], int | None]
    file: str
    line: bool | int | None
    fragment: str
    field: str = ""


def journal(name: str, damage, fragment: str, *, line: bool | int | None = True) -> DamageCase:
    return DamageCase(name, damage, str(JOURNAL), line, fragment)


def lock(name: str, damage, fragment: str, *, field: str = "", line=True) -> DamageCase:
    return DamageCase(name, damage, str(LOCK), line, fragment, field)


CREATE_STUDY, SET_STUDY_USER_ATTR, CREATE_TRIAL, SET_TRIAL_PARAM, SET_TRIAL_STATE = 0, 2, 4, 5, 6
CASES: list[DamageCase] = [
    # --- the journal's lines ------------------------------------------------------------------
    journal("corrupt_line_in_the_middle", journal_line(lambda r: b"{not json\n"), "not a JSON"),
    journal("cut_first_line", cut_first_line, "not a JSON journal record"),
    journal("binary_garbage_line", insert_line(b"\x00\xff\xfe\x80garbage\n"), "binary data"),
    journal("binary_garbage_file", garbage_file, "binary data"),
    journal("empty_line_in_the_middle", insert_line(b"\n"), "empty line"),
    journal("blank_line_in_the_middle", insert_line(b"   \n"), "empty line"),
    journal("record_is_a_list", journal_line(lambda r: [1, 2]), "a JSON list"),
    journal("record_is_a_number", journal_line(lambda r: 5), "a JSON int"),
    journal("unknown_op_code", journal_line(lambda r: {**r, "op_code": 99}), "unknown op code 99"),
    journal("negative_op_code", journal_line(lambda r: {**r, "op_code": -1}), "unknown op code"),
    journal("op_code_text", journal_line(lambda r: {**r, "op_code": "x"}), "integer op_code"),
    journal("op_code_missing", without("op_code", op=SET_TRIAL_PARAM), "integer op_code"),
    journal("op_code_bool", journal_line(lambda r: {**r, "op_code": True}), "integer op_code"),
    journal(
        "two_records_glued", journal_line(lambda r: json.dumps(r).encode() * 2 + b"\n"), "Extra"
    ),
    journal("trial_id_missing", without("trial_id", op=SET_TRIAL_STATE), "KeyError"),
    journal(
        "state_values_edited", journal_line(lambda r: {**r, "state": 42}, op=SET_TRIAL_STATE), "42"
    ),
    journal(
        "param_edited",
        journal_line(lambda r: {**r, "distribution": "{}"}, op=SET_TRIAL_PARAM),
        "replayed",
    ),
    journal("study_record_edited", journal_line(lambda r: {**r, "directions": [9]}, op=0), "9"),
    journal("trial_record_edited", without("study_id", op=CREATE_TRIAL), "KeyError"),
    # --- the journal as a file ----------------------------------------------------------------
    journal("journal_deleted", lambda f: (f / JOURNAL).unlink(), "journal is missing", line=None),
    journal(
        "journal_is_a_folder",
        replace_path(lambda p, f: p.mkdir()),
        "is not a regular file",
        line=None,
    ),
    journal(
        "journal_is_a_fifo", replace_path(lambda p, f: os.mkfifo(p)), "not a regular", line=None
    ),
    journal(
        "journal_links_out_of_studies",
        replace_path(lambda p, f: p.symlink_to(f / "notes.txt")),
        "outside the studies folder",
        line=None,
    ),
    journal(
        "journal_links_to_dev_zero",
        replace_path(lambda p, f: p.symlink_to("/dev/zero")),
        "outside the studies folder",
        line=None,
    ),
    journal(
        "journal_symlink_loop",
        replace_path(lambda p, f: p.symlink_to(p.name)),
        "cannot be used",
        line=None,
    ),
    journal(
        "journal_dangling_link",
        replace_path(lambda p, f: p.symlink_to("gone.log")),
        "cannot be used",
        line=None,
    ),
    # --- the lock -------------------------------------------------------------------------------
    lock(
        "lock_not_yaml",
        edit_lock("study: dmg", "study: [dmg", at="description:"),
        "invalid YAML",
    ),
    lock("lock_empty", lock_bytes(b""), "got an empty file", line=1),
    lock("lock_a_list", lock_bytes(b"- a\n- b\n"), "expected a mapping", line=1),
    lock("lock_nul", lock_bytes(b"study: dmg\n\x00\n"), "a NUL byte", line=2),
    lock("lock_not_utf8", lock_bytes(b"study: dmg\nstorage: \xff\n"), "byte 0xff", line=2),
    lock("lock_too_deep", lock_bytes(b"a: " + b"[" * 3000 + b"]" * 3000), "nested deeper", line=1),
    lock(
        "lock_alias_bomb",
        lock_bytes(
            b'a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]\n'
            + b"".join(
                f"a{i}: &a{i} [".encode() + b", ".join([f"*a{i - 1}".encode()] * 9) + b"]\n"
                for i in range(1, 10)
            )
        ),
        "once aliases are expanded",
        line=6,
    ),
    lock(
        "lock_duplicate_key",
        edit_lock("study: dmg\n", "study: dmg\nstudy: dmg\n", at="study: dmg\nd"),
        "duplicate key",
        field="study",
    ),
    lock(
        "lock_study_missing",
        edit_lock("study: dmg\n", ""),
        "expected a string",
        field="study",
        line=1,
    ),
    lock("lock_study_number", edit_lock("study: dmg", "study: 5"), "got 5", field="study"),
    lock(
        "lock_storage_number",
        edit_lock("storage: journal:", "storage: 3\nx: journal:", at="storage: 3"),
        "got 3",
        field="storage",
    ),
    lock(
        "lock_objectives_not_list",
        edit_lock("objectives:\n", "objectives: 3\nold_objectives:\n", at="objectives: 3"),
        "expected a list",
        field="objectives",
    ),
    lock(
        "lock_direction_edited",
        edit_lock("direction: minimize", "direction: sideways"),
        "minimize or maximize",
        field="objectives.0.direction",
    ),
    lock(
        "lock_metric_missing",
        edit_lock("- metric: lin.a\n  direction", "- direction", at="- direction"),
        "expected a metric name",
        field="objectives.0.metric",
    ),
    lock(
        "lock_search_not_mapping",
        edit_lock("search:\n", "search: fast\nold_search:\n", at="search: fast"),
        "expected a mapping",
        field="search",
    ),
    lock(
        "lock_journal_flag_text",
        edit_lock("journal_outside_studies: false", "journal_outside_studies: perhaps"),
        "true or false",
        field="journal_outside_studies",
    ),
    DamageCase(
        "lock_storage_elsewhere",
        lock_storage("journal:{dir}/elsewhere/deep/j.log"),
        "elsewhere/deep/j.log",
        None,
        "journal is missing",
    ),
    DamageCase(
        "lock_storage_sqlite_missing",
        lock_storage("sqlite:///{dir}/none.db"),
        "none.db",
        None,
        "SQLite database is missing",
    ),
    DamageCase(
        "lock_storage_user_file",
        lock_storage("journal:{dir}/notes.txt"),
        "notes.txt",
        None,
        "is outside the studies folder",
    ),
    # --- round 3: the same classes, other examples ----------------------------------------------
    lock(
        "lock_unknown_key",
        edit_lock("study: dmg\n", "study: dmg\nfrobnicate: 3\n", at="frob"),
        "unknown field",
        field="frobnicate",
    ),
    lock(
        "lock_unknown_search_key",
        edit_lock("trials: 5", "trials: 5\n  turbo: true", at="turbo"),
        "unknown field",
        field="search.turbo",
    ),
    lock(
        "lock_version_newer",
        edit_lock("dse_version: 0.1.0", "dse_version: 99.0.0"),
        "newer than this dse",
        field="dse_version",
    ),
    lock(
        "lock_version_missing",
        edit_lock("dse_version: 0.1.0\n", ""),
        "expected a dse version",
        field="dse_version",
        line=1,
    ),
    lock(
        "lock_version_a_list",
        edit_lock("dse_version: 0.1.0", "dse_version: [0, 1]"),
        "expected a dse version",
        field="dse_version",
    ),
    lock(
        "lock_threshold_text",
        edit_lock("threshold: null", "threshold: high"),
        "valid number",
        field="objectives.0.threshold",
    ),
    lock("lock_low_text", edit_lock("low: 0.0", "low: zero"), "valid number", field="space.x.low"),
    lock(
        "lock_param_type_unknown",
        edit_lock("type: float", "type: complex"),
        "expected 'type' to be one of",
        field="space.x",
        line=6,  # the parameter's key,
    ),
    lock(
        "lock_trials_negative",
        edit_lock("trials: 5", "trials: -5"),
        "greater than or equal to 1",
        field="search.trials",
    ),
    lock(
        "lock_trials_text",
        edit_lock("trials: 5", "trials: many"),
        "valid integer",
        field="search.trials",
    ),
    lock(
        "lock_fixed_a_list",
        edit_lock("fixed: {}", "fixed: [1]"),
        "valid dictionary",
        field="fixed",
    ),
    lock(
        "lock_evaluators_number",
        edit_lock("evaluators:\n  lin: lin:f\n", "evaluators: 5\n", at="evaluators: 5"),
        "",
        field="evaluators",
    ),
    lock(
        "lock_constraints_mapping",
        edit_lock("constraints: []", "constraints: {a: 1}"),
        "valid list",
        field="constraints",
    ),
    lock(
        "lock_derived_a_list",
        edit_lock("derived: {}", "derived: [1]"),
        "valid dictionary",
        field="derived",
    ),
    lock(
        "lock_overrides_a_list",
        edit_lock("fixed_overrides: {}", "fixed_overrides: [1]"),
        "expected a mapping",
        field="fixed_overrides",
    ),
    lock(
        "lock_description_a_list",
        edit_lock("description: ''", "description: [1]"),
        "valid string",
        field="description",
    ),
    lock(
        "lock_objectives_empty",
        edit_lock("objectives:\n", "objectives: []\nold_objectives:\n", at="objectives: []"),
        "expected a list",
        field="objectives",
    ),
    lock(
        "lock_objective_metric_unknown",
        edit_lock("metric: lin.b", "metric: lin.zz"),
        "'lin.zz' is no metric the study's trials recorded",
        field="objectives.1.metric",
    ),
    lock(
        "lock_objectives_more_than_the_study",
        edit_lock(
            "- metric: lin.b\n",
            "- metric: lin.a\n  direction: maximize\n- metric: lin.b\n",
            at="objectives:",
        ),
        "3 objectives, but the study in the storage has 2",
        field="objectives",
    ),
    lock(
        "lock_python_tag",
        edit_lock("study: dmg", "study: !!python/name:os.system"),
        "could not determine a constructor",
    ),
    lock(
        "lock_utf16",
        lambda f: (f / LOCK).write_bytes((f / LOCK).read_text().encode("utf-16")),
        "not UTF-8",
        line=1,
    ),
    lock(
        "lock_links_to_proc_mem",
        replace_path(lambda p, f: p.symlink_to("/proc/self/mem"), LOCK),
        "Input/output error",
        line=None,
    ),
    DamageCase(
        "lock_storage_postgres_down",
        lock_storage("postgresql://u:secret@127.0.0.1:1/db"),
        "postgresql://u:***@127.0.0.1:1/db",
        None,
        "cannot connect to the database",
    ),
    DamageCase(
        "lock_storage_sqlite_is_a_text_file",
        lock_storage("sqlite:///{dir}/notes.txt"),
        "notes.txt",
        None,
        "not an SQLite file",
    ),
    DamageCase("lock_storage_unknown_scheme", lock_storage("foo://x"), "foo://x", None, "scheme"),
    journal("corrupt_last_line", journal_line(lambda r: b"{garbage\n", op=-1), "not a JSON"),
    journal("binary_last_line", lambda f: _append(f, b"\xff\xfe\x00\n"), "binary data"),
    journal(
        "deeply_nested_line",
        insert_line(b"[" * 100_000 + b"]" * 100_000 + b"\n"),
        "nested too deeply",
    ),
    journal("null_record", insert_line(b"null\n"), "a JSON NoneType"),
    journal("string_record", insert_line(b'"op_code"\n'), "a JSON str"),
    journal("record_without_op_code", insert_line(b'{"a": 1}\n'), "integer op_code"),
    journal("op_code_float", journal_line(lambda r: {**r, "op_code": 4.5}), "integer op_code"),
    journal("op_code_huge", journal_line(lambda r: {**r, "op_code": 10**30}), "unknown op code"),
    journal("only_newlines", lambda f: (f / JOURNAL).write_bytes(b"\n\n"), "empty line", line=1),
    journal(
        "datetime_edited",
        journal_line(lambda r: {**r, "datetime_complete": "yesterday"}, op=SET_TRIAL_STATE),
        "yesterday",
    ),
    journal(
        "distribution_not_json",
        journal_line(lambda r: {**r, "distribution": "{nope"}, op=SET_TRIAL_PARAM),
        "replayed",
    ),
    journal(
        "journal_is_a_users_file",
        replace_path(lambda p, f: os.link(f / "notes.txt", p)),
        "not a JSON",
        line=1,
    ),
    journal(
        "journal_is_a_socket",
        replace_path(lambda p, f: _bind_unix_socket(p)),
        "not a regular file",
        line=None,
    ),
    journal(
        "journal_links_to_proc_mem",
        replace_path(lambda p, f: p.symlink_to("/proc/self/mem")),
        "outside the studies folder",
        line=None,
    ),
    DamageCase(
        "study_folder_symlink_loop",
        lambda f: (shutil.rmtree(f / STUDY), (f / STUDY).symlink_to(STUDY.name)),
        str(STUDY),
        None,
        "points back to itself",
    ),
    DamageCase(
        "studies_folder_symlink_loop",
        lambda f: (shutil.rmtree(f / "studies"), (f / "studies").symlink_to("studies")),
        "studies",
        None,
        "points back to itself",
    ),
    lock("lock_is_a_folder", replace_path(lambda p, f: p.mkdir(), LOCK), "is a folder", line=None),
    lock("lock_is_a_fifo", replace_path(lambda p, f: os.mkfifo(p), LOCK), "is a FIFO", line=None),
    lock(
        "lock_links_to_dev_zero",
        replace_path(lambda p, f: p.symlink_to("/dev/zero"), LOCK),
        "character device",
        line=None,
    ),
]


def _snapshot(folder: Path) -> dict[str, object]:
    """Every path under ``folder`` with what it is and, for files, a digest of its bytes."""
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(folder))
            if "__pycache__" in rel:
                continue
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_file():
                out[rel] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
            else:
                out[rel] = ("other", p.stat().st_mode)
    return out


@dataclass
class Prepared:
    folder: Path
    line: int | None
    file: str


def _prepare(case: DamageCase, template: Path, base: Path) -> Prepared:
    folder = base / case.name
    shutil.copytree(template, folder, symlinks=True)
    lock_path = folder / LOCK
    lock_path.write_text(lock_path.read_text().replace(str(template), str(folder)))
    returned = case.damage(folder)
    line = returned if case.line is True else case.line
    file = case.file if os.path.isabs(case.file) else str(folder / case.file)
    return Prepared(folder, line, file)


def _assert_refused(case: DamageCase, p: Prepared, code: int, stderr: str, before: dict) -> None:
    shown = stderr[-3000:]
    assert code == 2, (code, shown)
    assert "Traceback" not in stderr, shown
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, shown
    if case.file.endswith((".log", ".yaml")) and case.file.startswith("studies"):
        where = f"{p.file}:{p.line}:" if p.line else f"{p.file}: "
        where += f" {case.field}:" if case.field else ""
        assert lines[0].startswith(where), (where, shown)
    else:  # the message names a file the lock points at
        assert case.file in lines[0], (case.file, shown)
    assert case.fragment in lines[0], (case.fragment, shown)
    assert "secret" not in stderr, "a password reached the message"
    assert _snapshot(p.folder) == before, "a reading command created or changed files"


def test_the_corpus_covers_journal_and_lock() -> None:
    assert len({c.name for c in CASES}) == len(CASES) >= 80
    assert sum(c.file == str(JOURNAL) for c in CASES) >= 20
    assert sum(c.file == str(LOCK) for c in CASES) >= 15


@pytest.mark.parametrize("command", ["status", "pareto", "report"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_reading_commands_refuse_in_one_line_and_change_nothing(
    template: Path, tmp_path: Path, case: DamageCase, command: str
) -> None:
    p = _prepare(case, template, tmp_path)
    before = _snapshot(p.folder)
    env = {"DSE_STUDIES_DIR": str(p.folder / "studies")}
    res = run_in_process(command, "dmg", cwd=p.folder, env=env)
    _assert_refused(case, p, res.returncode, res.stderr, before)


PROCESS_SAMPLE = [
    c
    for c in CASES
    if c.name
    in {
        "corrupt_line_in_the_middle",
        "binary_garbage_line",
        "unknown_op_code",
        "journal_links_out_of_studies",
        "lock_direction_edited",
        "corrupt_last_line",
        "lock_unknown_key",
        "lock_storage_postgres_down",
    }
]


@pytest.mark.parametrize("command", ["status", "dashboard"])
@pytest.mark.parametrize("case", PROCESS_SAMPLE, ids=lambda c: c.name)
def test_a_real_process_refuses_the_same_way(
    template: Path, tmp_path: Path, case: DamageCase, command: str
) -> None:
    p = _prepare(case, template, tmp_path)
    before = _snapshot(p.folder)
    env = {"DSE_STUDIES_DIR": str(p.folder / "studies")}
    res = _run_process_env(p.folder, env, command, "dmg")
    _assert_refused(case, p, res.returncode, res.stderr, before)


def test_a_torn_last_line_is_not_damage(template: Path, tmp_path: Path) -> None:
    """A write cut short (a kill, a full disk) leaves a last line with no newline: it was never
    acknowledged, Optuna skips it, and the study reads as before."""
    case = journal("torn", lambda f: None, "")
    p = _prepare(case, template, tmp_path)
    with open(p.folder / JOURNAL, "ab") as f:
        f.write(b'{"op_code": 4, "worker_id": "x", "study_')
    env = {"DSE_STUDIES_DIR": str(p.folder / "studies")}
    res = run_in_process("status", "dmg", "--json", cwd=p.folder, env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["finished"] == 5


def test_a_run_never_appends_to_a_linked_journal(template: Path, tmp_path: Path) -> None:
    """``studies/dmg/journal.log -> ../../notes.txt``: ``dse run`` refuses before writing, and
    the user's file is as it was (a real process)."""
    case = journal("linked", replace_path(lambda p, f: p.symlink_to(f / "notes.txt")), "")
    p = _prepare(case, template, tmp_path)
    before = (p.folder / "notes.txt").read_bytes()
    env = {"DSE_STUDIES_DIR": str(p.folder / "studies")}
    res = _run_process_env(p.folder, env, "run", "spec.yaml", "--no-progress", "--trials", "8")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith(f"{p.folder / JOURNAL}: is a symlink to"), line
    assert (p.folder / "notes.txt").read_bytes() == before


def test_report_replaces_links_to_users_files_never_writes_through(
    template: Path, tmp_path: Path
) -> None:
    """``report.html`` and a figure linked to a user's files: the report replaces the links
    with its own files and the user's files are as they were."""
    case = journal("report_links", lambda f: None, "")
    p = _prepare(case, template, tmp_path)
    study = p.folder / STUDY
    (study / "figures").mkdir()
    (study / "report.html").symlink_to(p.folder / "notes.txt")
    (study / "figures" / "pareto_pairs.png").symlink_to(p.folder / "lin.py")
    before = {n: (p.folder / n).read_bytes() for n in ("notes.txt", "lin.py")}
    res = run_in_process("report", "dmg", cwd=p.folder, env={"DSE_STUDIES_DIR": str(study.parent)})
    assert res.returncode == 0, res.stderr
    assert {n: (p.folder / n).read_bytes() for n in before} == before
    assert not (study / "report.html").is_symlink() and (study / "report.html").stat().st_size
    assert not (study / "figures" / "pareto_pairs.png").is_symlink()


@pytest.mark.parametrize("what", ["file", "link"])
def test_report_refuses_a_figures_path_it_cannot_use_before_writing(
    template: Path, tmp_path: Path, what: str
) -> None:
    """``figures`` a file, or a link to a user's folder: one line, exit 2, and no half report
    (``report.html`` is not written; the user's folder is untouched)."""
    case = journal(f"figures_{what}", lambda f: None, "")
    p = _prepare(case, template, tmp_path)
    study = p.folder / STUDY
    if what == "file":
        (study / "figures").write_text("notes")
    else:
        (p.folder / "mine").mkdir()
        (study / "figures").symlink_to(p.folder / "mine")
    res = run_in_process("report", "dmg", cwd=p.folder, env={"DSE_STUDIES_DIR": str(study.parent)})
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    line = res.stderr.strip().splitlines()[-1]
    assert line.startswith(f"error: {study / 'figures'} is "), line
    assert not (study / "report.html").exists()
    if what == "link":
        assert not any((p.folder / "mine").iterdir())


def test_a_record_file_that_is_a_folder_is_named_in_one_line(template: Path, tmp_path: Path):
    """``trials.csv`` replaced by a folder: the resumed run says which file, not its temp."""
    case = journal("records_folder", lambda f: None, "")
    p = _prepare(case, template, tmp_path)
    (p.folder / STUDY / "trials.csv").unlink()
    (p.folder / STUDY / "trials.csv").mkdir()
    env = {"DSE_STUDIES_DIR": str(p.folder / "studies")}
    res = run_in_process(
        "run", "spec.yaml", "--no-progress", "--trials", "7", cwd=p.folder, env=env
    )
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert f"cannot use {p.folder / STUDY / 'trials.csv'}: Is a directory" in line, line
