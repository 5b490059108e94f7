"""Commands that write to a study refuse a damaged journal the way reading commands do.

The reading commands check a journal line by line before Optuna sees it; ``dse run`` and
``dse worker`` open the storage to append, where Optuna's replay met a bad line in the middle
and escaped as a ``UnicodeDecodeError`` or ``JSONDecodeError`` traceback. Every damaged-line
case of the corpus goes through ``dse run`` in this process (it would add trials); a sample
runs as real processes of ``run`` and ``worker``. Exit 2, one line naming the journal and its
first wrong line, and nothing created or changed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.inprocess import run_in_process
from tests.cli.test_bad_spec_corpus import _run_process_env
from tests.cli.test_damaged_study_corpus import (
    CASES,
    JOURNAL,
    DamageCase,
    Prepared,
    _prepare,
    _snapshot,
    template,  # noqa: F401 - the fixture
)

#: The cases that damage a line of the journal (not the file, the lock or the folders).
LINE_CASES = [c for c in CASES if c.file == str(JOURNAL) and c.line is not None]
WRITERS = {
    "run": ("run", "spec.yaml", "--no-progress", "--trials", "9"),
    "worker": ("-q", "worker", "spec.yaml", "--trials", "9"),  # -q: no start-up banner
}


def _assert_refused(p: Prepared, code: int, stderr: str, before: dict) -> None:
    """Exit 2, one line that names the journal and its first wrong line (a run checks the first
    and last lines before it opens the storage, and words those as a whole-file problem), and
    nothing created or changed."""
    shown = stderr[-3000:]
    assert code == 2 and "Traceback" not in stderr, (code, shown)
    (line,) = stderr.strip().splitlines()
    assert line.startswith(f"{p.file}:"), (p.file, line)
    named = (f"{p.file}:{p.line}: ", f"line {p.line} is ")
    assert any(n in line for n in named) or (p.line == 1 and "first line" in line), line
    assert _snapshot(p.folder) == before, "a refused command created or changed files"


def test_the_line_cases_cover_the_middle_of_the_journal() -> None:
    names = {c.name for c in LINE_CASES}
    assert len(LINE_CASES) >= 25
    assert {"corrupt_line_in_the_middle", "binary_garbage_line", "unknown_op_code"} <= names


@pytest.mark.parametrize("case", LINE_CASES, ids=lambda c: c.name)
def test_a_run_refuses_a_damaged_journal_in_one_line(
    request: pytest.FixtureRequest, tmp_path: Path, case: DamageCase
) -> None:
    p = _prepare(case, request.getfixturevalue("template"), tmp_path)
    before = _snapshot(p.folder)
    env = {"DSE_STUDIES_DIR": str(p.folder / "studies")}
    res = run_in_process(*WRITERS["run"], cwd=p.folder, env=env)
    _assert_refused(p, res.returncode, res.stderr, before)


SAMPLE = [c for c in LINE_CASES if c.name in {"binary_garbage_line", "trial_id_missing"}]


@pytest.mark.parametrize("command", sorted(WRITERS))
@pytest.mark.parametrize("case", SAMPLE, ids=lambda c: c.name)
def test_a_real_writing_process_refuses_the_same_way(
    request: pytest.FixtureRequest, tmp_path: Path, case: DamageCase, command: str
) -> None:
    p = _prepare(case, request.getfixturevalue("template"), tmp_path)
    before = _snapshot(p.folder)
    env = {"DSE_STUDIES_DIR": str(p.folder / "studies")}
    res = _run_process_env(p.folder, env, *WRITERS[command])
    _assert_refused(p, res.returncode, res.stderr, before)
