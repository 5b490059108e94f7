"""`dse sweep --jobs N`: this process and a local Dask cluster of N - 1 worker processes, real
ones.

The front is exactly the in-process front; a worker SIGKILLed mid-sweep, even halfway through
sending its result, is replaced and its chunks re-run; a worker that dies every time ends the
sweep with one clear error; an error in a task ends the sweep with that error and no worker
left. (A SIGKILLed or interrupted `dse sweep --jobs`: tests/cli/test_sweep_local_cli.py.)
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import dask
import pandas as pd
import psutil
import pytest

from dse import api
from dse.errors import WorkerDiedError
from dse.search.sweep import _dask as sweep_dask
from dse.search.sweep.chunks import CHUNKS_DIR
from dse.search.sweep.sweep import sweep
from tests.dse.search.test_sweep import _small_spec
from tests.dse.search.test_sweep_dask import MID_SPACE

pytestmark = pytest.mark.slow

#: The task function the workers run, before a test replaces it (in this process only: the
#: workers are spawned, and get the replacement by reference, as a function of this module).
_EVALUATE = sweep_dask._evaluate
#: The environment variable naming the file where the worker to be killed writes its pid.
VICTIM_ENV = "DSE_TEST_SWEEP_VICTIM"


def test_local_workers_give_the_in_process_front_exactly(
    tmp_path: Path, studies_dir: Path
) -> None:
    model = api.load(_small_spec(tmp_path, space=MID_SPACE, name="mid"))
    local = sweep(model, chunk=7_000, write=False)
    jobs = sweep(model, chunk=7_000, jobs=3, write=False)
    assert jobs.workers == 3 and local.workers == 1
    assert jobs.designs_evaluated == local.designs_evaluated == 200_640
    assert (jobs.finite, jobs.feasible) == (local.finite, local.feasible)
    pd.testing.assert_frame_equal(jobs.front, local.front, check_exact=True)
    assert len(local.front) >= 5
    # This process evaluated chunks too (all 29 of them, maybe, while the workers start).
    assert 0 < jobs.chunks_in_client <= 29


def _killed_once(*args: object) -> list:
    """The first task anywhere SIGKILLs its worker: ``mid-task`` before it returns; else
    (``mid-reply``) 0.5 s after it returned its real chunk fronts with 16 MB of ballast, so
    that the kill lands while they travel. Later tasks (the replacement worker's) run as
    usual."""
    flag, when = os.environ[VICTIM_ENV].split("|")
    try:
        fd = os.open(flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return _EVALUATE(*args)  # type: ignore[arg-type]
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    if when == "mid-task":
        os.kill(os.getpid(), signal.SIGKILL)
    fronts = _EVALUATE(*args)  # type: ignore[arg-type]
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGKILL)).start()
    fronts[0].ballast = bytes(16 << 20)
    return fronts


@pytest.mark.parametrize("when", ["mid-task", "mid-reply"])
def test_a_killed_local_worker_is_replaced_and_the_front_is_unchanged(
    tmp_path: Path, studies_dir: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """The fault that once hung a CI run: concurrent.futures' process pool waits for ever on
    half a result left in its shared result pipe by a worker killed while writing it. This
    process goes slowly until a worker has a task, then waits in the progress callback until
    the victim is dead, so it cannot finish the sweep alone meanwhile; the victim's chunks run
    again on its replacement."""
    model = api.load(_small_spec(tmp_path, space=MID_SPACE, name="victim"))
    expected = sweep(model, chunk=5_000, write=False)
    flag = tmp_path / "victim.pid"
    # In the workers' environment (a forkserver started by an earlier test has this one's old
    # environment).
    environ = {f"distributed.nanny.environ.{VICTIM_ENV}": f"{flag}|{when}"}
    monkeypatch.setattr(sweep_dask, "_evaluate", _killed_once)
    waited: list[float] = []

    def wait_for_the_victim(done: int, total: int, front: int) -> None:
        if waited:
            return
        if not flag.exists() or not flag.read_text():
            time.sleep(0.25)  # slowly: the workers start meanwhile, and take tasks
            return
        t0 = time.monotonic()
        try:
            victim = psutil.Process(int(flag.read_text()))
            while victim.is_running() and victim.status() != psutil.STATUS_ZOMBIE:
                assert time.monotonic() - t0 < 60, "the worker outlived its SIGKILL"
                time.sleep(0.01)
        except psutil.NoSuchProcess:
            pass  # dead already (and reaped)
        waited.append(time.monotonic() - t0)

    with dask.config.set(environ):
        result = sweep(model, chunk=5_000, jobs=2, on_progress=wait_for_the_victim)
    assert waited and not psutil.pid_exists(int(flag.read_text()))
    assert result.designs_evaluated == expected.designs_evaluated == 200_640
    assert (result.finite, result.feasible) == (expected.finite, expected.feasible)
    pd.testing.assert_frame_equal(result.front, expected.front, check_exact=True)


def _die(*args: object) -> list:
    os._exit(3)


def test_a_worker_that_always_dies_ends_the_sweep_with_one_clear_error(
    tmp_path: Path, studies_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = api.load(_small_spec(tmp_path, space=MID_SPACE, name="doomed"))
    monkeypatch.setattr(sweep_dask, "_evaluate", _die)
    with pytest.raises(WorkerDiedError, match=r"died 4 times .* fewer --jobs"):
        sweep(model, chunk=5_000, jobs=2)
    # What this process finished meanwhile is kept for the next attempt.
    assert list((studies_dir / "doomed" / CHUNKS_DIR).glob("*/chunk-*.pkl"))


class _Unpicklable(Exception):
    def __reduce__(self) -> tuple:
        raise TypeError("cannot pickle this error")


def _raise(digest: str, blob: bytes, indices: tuple[int, ...], folder: str) -> list:
    if indices[0] % 2:
        raise _Unpicklable("an error that cannot cross the pipe")
    raise ValueError(f"chunk {indices[0]} failed in a worker")


def _children() -> list[psutil.Process]:
    """This process's children but a resource tracker, which outlives a sweep by design."""
    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            if "resource_tracker" not in " ".join(p.cmdline()):
                found.append(p)
        except psutil.Error:
            continue
    return found


def test_an_error_in_a_worker_is_raised_by_the_sweep_and_no_worker_is_left(
    tmp_path: Path, studies_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task that raises (an evaluator bug) ends the sweep with that error, as in-process,
    not as a dead worker, even one whose error does not pickle."""
    model = api.load(_small_spec(tmp_path, space=MID_SPACE, name="raising"))
    monkeypatch.setattr(sweep_dask, "_evaluate", _raise)
    before = {p.pid for p in _children()}
    with pytest.raises(Exception, match=r"failed in a worker|cannot cross the"):
        sweep(model, chunk=5_000, jobs=3)
    left = [p for p in _children() if p.pid not in before]
    assert not [p for p in left if p.status() != psutil.STATUS_ZOMBIE]


def _raise_os_error(digest: str, blob: bytes, indices: tuple[int, ...], folder: str) -> list:
    raise FileNotFoundError(f"chunk {indices[0]}: a file the evaluator reads is missing")


def test_an_os_error_in_a_task_is_the_tasks_error_not_a_dead_worker(
    tmp_path: Path, studies_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OSError the evaluator raises travels back like any error: the sweep ends with it,
    and does not mistake it for a lost worker."""
    model = api.load(_small_spec(tmp_path, space=MID_SPACE, name="oserror"))
    monkeypatch.setattr(sweep_dask, "_evaluate", _raise_os_error)
    with pytest.raises(FileNotFoundError, match="a file the evaluator reads is missing"):
        sweep(model, chunk=5_000, jobs=2)
