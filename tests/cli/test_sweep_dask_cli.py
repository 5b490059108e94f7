"""The tests of tests/dse/search/test_sweep_dask.py that run the ``dse`` command."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from dse import api
from dse.search.sweep.chunks import CHUNKS_DIR
from dse.search.sweep.sweep import sweep
from tests.conftest import ROOT, run_dse
from tests.dse.search.test_sweep import _small_spec
from tests.dse.search.test_sweep_dask import (
    MID_SPACE,
    dask_cluster,  # noqa: F401 (fixture)
)


def test_sigkilled_cli_sweep_resumes(tmp_path: Path, studies_dir: Path) -> None:
    spec = _small_spec(tmp_path, space=MID_SPACE, name="killed")
    args = ["sweep", str(spec), "--chunk", "4000", "--no-progress", "--json"]
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "dse"), *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    chunks = studies_dir / "killed" / CHUNKS_DIR
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(chunks.glob("*/chunk-*.pkl"))) < 3:
        assert proc.poll() is None, "the sweep finished before it could be killed"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = len(list(chunks.glob("*/chunk-*.pkl")))
    assert 3 <= finished < 51

    r = run_dse(*args)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["chunks_resumed"] >= finished  # files, not the ones in flight when killed
    fresh = sweep(api.load(spec), chunk=4000, write=False)
    assert summary["designs_evaluated"] == fresh.designs_evaluated
    assert summary["front_size"] == len(fresh.front)
    written = pd.read_csv(studies_dir / "killed" / "sweep_front.csv")
    expected = pd.read_csv(_csv(fresh.front, tmp_path))
    pd.testing.assert_frame_equal(written, expected, check_exact=True)


def _csv(front: pd.DataFrame, tmp_path: Path) -> Path:
    path = tmp_path / "expected.csv"
    front.to_csv(path, index=False)
    return path


def test_dse_sweep_on_a_dask_scheduler_with_two_workers(
    tmp_path: Path,
    studies_dir: Path,
    dask_cluster: tuple[str, list[subprocess.Popen]],  # noqa: F811 (the fixture imported above)
) -> None:
    address, _ = dask_cluster
    spec = _small_spec(tmp_path, space=MID_SPACE, name="remote")
    r = run_dse("sweep", str(spec), "--chunk", "10000", "--scheduler", address, "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["workers"] == 2
    fresh = sweep(api.load(spec), chunk=10_000, write=False)
    assert summary["designs_evaluated"] == fresh.designs_evaluated == 200_640
    assert summary["feasible"] == fresh.feasible
    written = pd.read_csv(studies_dir / "remote" / "sweep_front.csv")
    pd.testing.assert_frame_equal(written, pd.read_csv(_csv(fresh.front, tmp_path)))

    r = run_dse("sweep", str(spec), "--scheduler", "tcp://127.0.0.1:9", "--no-progress")
    assert r.returncode == 2
    assert "nothing accepts connections" in r.stderr and "Traceback" not in r.stderr
