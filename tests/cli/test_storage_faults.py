"""Storage faults: a torn last journal line, a full disk, a read-only folder. Each leaves the
study readable and resumable, and the user gets one line, not a traceback."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tests.cli.test_crash_resume import slow_spec
from tests.conftest import run_dse


def test_torn_last_journal_line_is_repaired_and_the_study_goes_on(
    tmp_path: Path, studies_dir: Path
) -> None:
    env = {"DSE_STUDIES_DIR": str(studies_dir)}
    spec = slow_spec(tmp_path, study="torn", trials=12, sleep_s=0.0)
    res = run_dse("run", str(spec), "--no-progress", env=env)
    assert res.returncode == 0, res.stderr
    journal = studies_dir / "torn" / "journal.log"
    data = journal.read_bytes()
    # A disk that filled up mid-append: the last line is cut short and has no newline.
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    torn = data[: last + (len(data) - last) // 2]
    assert not torn.endswith(b"\n")
    journal.write_bytes(torn)
    for trials in ("20", "28"):
        res = run_dse("run", str(spec), "--no-progress", "--trials", trials, env=env)
        assert res.returncode == 0, res.stderr
        res = run_dse("status", "torn", "--json", env=env)
        assert res.returncode == 0, res.stderr
        assert f'"finished": {trials}' in res.stdout
    t = pd.read_csv(studies_dir / "torn" / "trials.csv")
    # The torn record was the last trial's result: that trial is retired and its design re-run.
    assert (~t["stale"]).sum() == 28 and t["stale"].sum() <= 1
    assert (t["state"] != "RUNNING").all()
    # Every line is whole JSON again; the cut-off half is kept aside, not replayed.
    lines = journal.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(line.startswith(b"{") for line in lines[:-1])
    assert (studies_dir / "torn" / "journal.log.torn").read_bytes().strip() == torn[last:]
