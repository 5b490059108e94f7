"""Sweeps on dask.distributed: the front never depends on where or in which order chunks ran.

Real processes throughout: a `dask scheduler` with two `dask worker` processes on 127.0.0.1
(one of them SIGKILLed mid-sweep); interrupted sweeps (an exception, then a SIGKILLed
`dse sweep` process) resume from their finished chunks. Local `--jobs N` workers:
tests/dse/test_sweep_local.py.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from dse import api
from dse.search.sweep.chunks import CHUNKS_DIR
from dse.search.sweep.sweep import sweep
from tests.dse.search.test_sweep import SMALL_SPACE, _small_spec

pytestmark = pytest.mark.slow

# 380 die areas x 8 HBM x 2 optics x 33 cluster sizes = 200,640 designs.
MID_SPACE = {
    **SMALL_SPACE,
    "die_area_mm2": {"type": "float", "low": 100, "high": 858, "step": 2},
    "hbm_stacks_per_die": {"type": "int", "low": 1, "high": 8},
    "cluster_size": {"type": "int", "low": 8, "high": 40},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def dask_cluster(tmp_path: Path) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """A real `dask scheduler` and two single-threaded `dask worker` processes (no nanny, so
    a killed worker stays dead)."""
    from dask.distributed import Client

    address = f"tcp://127.0.0.1:{_free_port()}"
    log = open(tmp_path / "dask.log", "w")  # noqa: SIM115 - closed below
    dask = [sys.executable, "-m", "dask"]
    procs = [
        subprocess.Popen(
            [*dask, "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1]]
            + ["--no-dashboard"],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
        )
    ]
    workers = [
        subprocess.Popen(
            [*dask, "worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard"]
            + ["--name", f"w{i}", "--death-timeout", "60"],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
        )
        for i in range(2)
    ]
    procs += workers
    try:
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield address, workers
    finally:
        for p in reversed(procs):  # workers first, then the scheduler
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        log.close()


def test_interrupted_sweep_resumes_from_its_finished_chunks(
    tmp_path: Path, studies_dir: Path
) -> None:
    model = api.load(_small_spec(tmp_path, space=MID_SPACE, name="resume"))
    fresh = sweep(model, chunk=20_000, write=False)

    calls = []

    def stop_after_three(done: int, total: int, front: int) -> None:
        calls.append(done)
        if len(calls) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(model, chunk=20_000, on_progress=stop_after_three)
    chunk_files = list((studies_dir / "resume" / CHUNKS_DIR).glob("*/chunk-*.pkl"))
    assert len(chunk_files) == 3
    assert not (studies_dir / "resume" / "sweep_front.csv").exists()

    chunk_files[0].write_bytes(chunk_files[0].read_bytes()[:100])  # torn: that chunk re-runs
    resumed = sweep(model, chunk=20_000)
    assert resumed.chunks_resumed == 2
    assert resumed.designs_evaluated == fresh.designs_evaluated
    assert (resumed.finite, resumed.feasible) == (fresh.finite, fresh.feasible)
    pd.testing.assert_frame_equal(resumed.front, fresh.front, check_exact=True)
    assert not (studies_dir / "resume" / CHUNKS_DIR).exists()  # cleared once complete
    # A different chunk size is a different sweep: nothing is reused.
    with pytest.raises(KeyboardInterrupt):
        sweep(model, chunk=20_000, on_progress=lambda *a: (_ for _ in ()).throw(KeyboardInterrupt))
    assert sweep(model, chunk=30_000).chunks_resumed == 0
    assert sweep(model, chunk=20_000, resume=False).chunks_resumed == 0


def test_a_killed_dask_worker_chunks_are_rerun_and_the_front_is_unchanged(
    tmp_path: Path, studies_dir: Path, dask_cluster: tuple[str, list[subprocess.Popen]]
) -> None:
    from dask.distributed import Client

    address, workers = dask_cluster
    model = api.load(_small_spec(tmp_path, space=MID_SPACE, name="victim"))
    expected = sweep(model, chunk=5_000, write=False)
    killed: dict[str, object] = {}

    with Client(address, timeout=30) as spy:
        pids = spy.run(os.getpid)  # worker address -> pid

        def kill_a_busy_worker(done: int, total: int, front: int) -> None:
            if killed:
                return
            busy = {w: keys for w, keys in spy.processing().items() if keys}
            if not busy:
                return
            address_, keys = next(iter(busy.items()))
            os.kill(pids[address_], signal.SIGKILL)
            killed.update(worker=address_, keys=list(keys), done=done)

        result = sweep(model, chunk=5_000, scheduler=address, on_progress=kill_a_busy_worker)
        assert len(spy.nthreads()) == 1  # the scheduler saw the worker go
    assert killed and killed["keys"], "no worker was busy when chunks came back"
    assert killed["done"] < result.designs_evaluated
    assert sum(w.poll() is not None for w in workers) == 1
    assert result.designs_evaluated == expected.designs_evaluated == 200_640
    assert (result.finite, result.feasible) == (expected.finite, expected.feasible)
    pd.testing.assert_frame_equal(result.front, expected.front, check_exact=True)
