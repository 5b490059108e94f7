"""The tests of tests/dse/search/test_sweep_local.py that run the ``dse`` command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pandas as pd
import psutil
import pytest

from dse import api
from dse.search.sweep.chunks import CHUNKS_DIR
from dse.search.sweep.sweep import sweep
from tests.conftest import run_dse
from tests.dse.search.test_sweep_dask import MID_SPACE
from tests.held_evaluator import HOLD_S, Held, held_spec, start_dse


def _held_sweep(
    tmp_path: Path, name: str, *, group: bool = False
) -> tuple[Held, subprocess.Popen[str], list[psutil.Process], list[str]]:
    """A `dse sweep --jobs 2` held inside the evaluator in its own process, after two chunks of
    its own, and its worker processes; ``group``: in a process group of its own, like a
    terminal job. The held process is the sweep's: its workers go on while it holds."""
    held = held_spec(tmp_path, name=name, space=MID_SPACE)
    args = ["sweep", str(held.spec), "--chunk", "2000", "--jobs", "2", "--no-progress"]
    proc = start_dse(args, group=group)
    assert held.wait_running(proc) == proc.pid
    workers = psutil.Process(proc.pid).children(recursive=True)
    assert workers, "the sweep started no worker process"
    return held, proc, workers, args


def _resumes_exactly(held: Held, args: list[str], study: Path, *, on_disk: int) -> None:
    """The sweep, run again, reuses every chunk left on disk and evaluates every design once:
    the count and the front of one uninterrupted sweep."""
    held.let_go()
    r = run_dse(*args, "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["chunks_resumed"] == on_disk >= 2 and summary["workers"] == 2
    fresh = sweep(api.load(held.spec), chunk=2000, write=False)
    assert summary["designs_evaluated"] == fresh.designs_evaluated == 200_640
    written = pd.read_csv(study / "sweep_front.csv")
    expected = study.parent / "expected.csv"
    fresh.front.to_csv(expected, index=False)
    pd.testing.assert_frame_equal(written, pd.read_csv(expected), check_exact=True)


def _chunks_on_disk(study: Path) -> int:
    return len(list(study.glob(f"{CHUNKS_DIR}/*/chunk-*.pkl")))


@pytest.mark.slow
def test_sigkilled_cli_sweep_with_jobs_leaves_no_worker_and_resumes(
    tmp_path: Path, studies_dir: Path
) -> None:
    held, proc, workers, args = _held_sweep(tmp_path, "killed")
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    gone, alive = psutil.wait_procs(workers, timeout=60)  # a busy machine
    assert not alive, "a worker outlived the killed sweep"
    study = studies_dir / "killed"
    _resumes_exactly(held, args, study, on_disk=_chunks_on_disk(study))


@pytest.mark.slow
def test_ctrl_c_stops_a_jobs_sweep_cleanly_and_it_resumes(
    tmp_path: Path, studies_dir: Path
) -> None:
    """SIGINT to the whole process group, as a terminal's Ctrl-C, while the sweep's own process
    is inside an evaluator: exit 130 with the one "interrupted" line, no traceback from any
    worker, no worker left, and the next run resumes where it stopped."""
    held, proc, workers, args = _held_sweep(tmp_path, "ctrlc", group=True)
    os.killpg(proc.pid, signal.SIGINT)  # never released: a lost Ctrl-C finishes, exit 0
    out, err = proc.communicate(timeout=HOLD_S + 120)
    assert proc.returncode == 130, err
    lines = err.splitlines()
    assert lines[-1] == "interrupted; re-run the same command to resume", err
    assert len(lines) == 2 and lines[0].startswith("sweep ctrlc: 200,640 designs"), err
    gone, alive = psutil.wait_procs(workers, timeout=60)  # a busy machine
    assert not alive, "a worker outlived the interrupted sweep"
    study = studies_dir / "ctrlc"
    _resumes_exactly(held, args, study, on_disk=_chunks_on_disk(study))
