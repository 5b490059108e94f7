"""`dse sweep --jobs N`: this process and N - 1 local worker processes, real ones.

The front is exactly the in-process front whichever start method made the workers; a worker
SIGKILLed mid-sweep, even halfway through a reply, is replaced and its chunks re-run; a worker
that dies every time ends the sweep with one clear error; a SIGKILLed sweep leaves no worker
behind.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from dse import api
from dse.errors import WorkerDiedError
from dse.search.sweep import _local as sweep_local
from dse.search.sweep import chunks as sweep_chunks
from dse.search.sweep.chunks import CHUNKS_DIR
from dse.search.sweep.sweep import sweep
from tests.dse.search.test_sweep import _small_spec
from tests.dse.search.test_sweep_dask import MID_SPACE


@pytest.mark.slow
@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_local_workers_give_the_in_process_front_exactly(
    tmp_path: Path, studies_dir: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    model = api.load(_small_spec(tmp_path, space=MID_SPACE, name="mid"))
    local = sweep(model, chunk=7_000, write=False)
    monkeypatch.setattr(sweep_local, "start_method", lambda: method)
    jobs = sweep(model, chunk=7_000, jobs=3, write=False)
    assert jobs.workers == 3 and local.workers == 1
    assert jobs.designs_evaluated == local.designs_evaluated == 200_640
    assert (jobs.finite, jobs.feasible) == (local.finite, local.feasible)
    pd.testing.assert_frame_equal(jobs.front, local.front, check_exact=True)
    assert len(local.front) >= 5
    # This process evaluated chunks too (all 29 of them, maybe, while spawned workers import).
    assert 0 < jobs.chunks_in_client <= 29
    if method == "fork":  # forked workers are there at once
        assert jobs.chunks_in_client < 29
    assert jobs.worker_cpu_s > 0 and jobs.worker_restarts == 0


def test_start_method_is_fork_only_in_a_single_threaded_process() -> None:
    import threading

    single = threading.active_count() == 1 and sys.platform.startswith("linux")
    assert sweep_local.start_method() == ("fork" if single else "forkserver")
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert sweep_local.start_method() == "forkserver"
    finally:
        stop.set()
        t.join()


def _workers(before: set[int]) -> list[psutil.Process]:
    """This process's sweep workers: new processes below it, but not a forkserver or a
    resource tracker, children of this process that may start during a sweep (a forkserver's
    workers are its children and share its command line)."""
    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            helper = p.ppid() == os.getpid() and any(
                k in " ".join(p.cmdline()) for k in ("forkserver", "resource_tracker")
            )
        except psutil.Error:
            continue
        if p.pid not in before and not helper:
            found.append(p)
    return found


def _wait_dead(p: psutil.Process, timeout: float = 10.0) -> None:
    """Until ``p`` is gone or a zombie, without reaping it (psutil's wait would, and then the
    sweep could not read its exit status)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if p.status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.01)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["fork", "forkserver"])
@pytest.mark.parametrize("settle", [False, True])
def test_a_killed_local_worker_is_replaced_and_the_front_is_unchanged(
    tmp_path: Path, studies_dir: Path, monkeypatch: pytest.MonkeyPatch, settle: bool, method: str
) -> None:
    """``settle``: the worker is dead before this process goes on (then sending it a task
    fails), else the death shows up while this process waits for replies."""
    model = api.load(_small_spec(tmp_path, space=MID_SPACE, name="victim"))
    expected = sweep(model, chunk=5_000, write=False)
    monkeypatch.setattr(sweep_local, "start_method", lambda: method)
    # A cold forkserver imports for a second or more: this process could finish the sweep
    # before any worker is up. Warm it (it outlives the sweep that started it).
    sweep(model, chunk=50_000, jobs=2, write=False)
    killed: list[int] = []
    before = {p.pid for p in psutil.Process().children(recursive=True)}

    def kill_a_worker(done: int, total: int, front: int) -> None:
        if killed:
            return
        workers = _workers(before)
        if workers and done > 0:
            os.kill(workers[0].pid, signal.SIGKILL)
            killed.append(workers[0].pid)
            if settle:
                _wait_dead(workers[0])

    result = sweep(model, chunk=5_000, jobs=3, on_progress=kill_a_worker)
    assert killed and result.worker_restarts == 1
    assert result.designs_evaluated == expected.designs_evaluated == 200_640
    assert (result.finite, result.feasible) == (expected.finite, expected.feasible)
    pd.testing.assert_frame_equal(result.front, expected.front, check_exact=True)


#: Where the worker to be killed halfway through its reply writes its pid (fork: the test's
#: tmp_path is not a parameter of ``sweep_local._evaluate``).
_VICTIM: dict[str, Path] = {}


def _reply_then_die_halfway(indices: tuple[int, ...]) -> list:
    """The first task anywhere: the real chunk fronts with 16 MB of ballast, so that writing
    them outlasts the pipe's buffer, and a SIGKILL 0.5 s into writing them."""
    fronts = [sweep_chunks.evaluate_chunk(*sweep_local._LOADED["run"], index) for index in indices]
    flag = _VICTIM["flag"]
    try:
        fd = os.open(flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:  # the replacement worker: no more deaths
        return fronts
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGKILL)).start()
    fronts[0].ballast = bytes(16 << 20)
    return fronts


@pytest.mark.slow
def test_a_worker_killed_halfway_through_a_reply_is_replaced(
    tmp_path: Path, studies_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fault that hung a CI run: concurrent.futures' process pool, used here before, waits
    forever on half a result left in its shared result pipe by a worker killed while writing it.
    Here this process reads the replies itself and does not while the worker writes (it waits
    in the progress callback until the worker is dead), so the kill lands mid-reply every
    time; the half reply is dropped and its chunks run again."""
    model = api.load(_small_spec(tmp_path, space=MID_SPACE, name="halfway"))
    expected = sweep(model, chunk=5_000, write=False)
    flag = tmp_path / "victim.pid"
    monkeypatch.setitem(_VICTIM, "flag", flag)
    monkeypatch.setattr(sweep_local, "_evaluate", _reply_then_die_halfway)
    monkeypatch.setattr(sweep_local, "start_method", lambda: "fork")  # workers see the patch
    waited: list[float] = []

    def wait_for_the_victim(done: int, total: int, front: int) -> None:
        if waited:
            return
        t0 = time.monotonic()
        while not flag.exists() or not flag.read_text():
            assert time.monotonic() - t0 < 60, "no worker replied"
            time.sleep(0.01)
        victim = psutil.Process(int(flag.read_text()))
        while victim.is_running() and victim.status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() - t0 < 60, "the worker outlived its SIGKILL"
            time.sleep(0.01)
        waited.append(time.monotonic() - t0)

    result = sweep(model, chunk=5_000, jobs=2, on_progress=wait_for_the_victim)
    assert waited and result.worker_restarts == 1
    assert result.designs_evaluated == expected.designs_evaluated == 200_640
    assert (result.finite, result.feasible) == (expected.finite, expected.feasible)
    pd.testing.assert_frame_equal(result.front, expected.front, check_exact=True)


def _die(indices: tuple[int, ...]) -> list:
    os._exit(3)


@pytest.mark.slow
def test_a_worker_that_always_dies_ends_the_sweep_with_one_clear_error(
    tmp_path: Path, studies_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = api.load(_small_spec(tmp_path, space=MID_SPACE, name="doomed"))
    monkeypatch.setattr(sweep_local, "_evaluate", _die)  # forked workers see the patch
    monkeypatch.setattr(sweep_local, "start_method", lambda: "fork")
    with pytest.raises(WorkerDiedError, match=r"died 4 times .* fewer --jobs"):
        sweep(model, chunk=5_000, jobs=2)
    # What this process finished meanwhile is kept for the next attempt.
    assert list((studies_dir / "doomed" / CHUNKS_DIR).glob("*/chunk-*.pkl"))


class _Unpicklable(Exception):
    def __reduce__(self) -> tuple:
        raise TypeError("cannot pickle this error")


def _raise(indices: tuple[int, ...]) -> list:
    if indices[0] % 2:
        raise _Unpicklable("an error that cannot cross the pipe")
    raise ValueError(f"chunk {indices[0]} failed in a worker")


@pytest.mark.slow
def test_an_error_in_a_worker_is_raised_by_the_sweep_and_no_worker_is_left(
    tmp_path: Path, studies_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task that raises (an evaluator bug) ends the sweep with that error, as in-process,
    not as a dead worker; one whose error does not pickle comes back as its traceback."""
    model = api.load(_small_spec(tmp_path, space=MID_SPACE, name="raising"))
    monkeypatch.setattr(sweep_local, "_evaluate", _raise)  # forked workers see the patch
    monkeypatch.setattr(sweep_local, "start_method", lambda: "fork")
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises((ValueError, RuntimeError), match=r"failed in a worker|cannot cross the"):
        sweep(model, chunk=5_000, jobs=3)
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    assert not [p for p in left if p.status() != psutil.STATUS_ZOMBIE]


def _raise_os_error(indices: tuple[int, ...]) -> list:
    raise FileNotFoundError(f"chunk {indices[0]}: a file the evaluator reads is missing")


@pytest.mark.slow
def test_an_os_error_in_a_task_is_the_tasks_error_not_a_dead_worker(
    tmp_path: Path, studies_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OSError the evaluator raises travels in the reply like any error: the sweep ends
    with it, and does not mistake it for a broken pipe (and replace the worker)."""
    model = api.load(_small_spec(tmp_path, space=MID_SPACE, name="oserror"))
    monkeypatch.setattr(sweep_local, "_evaluate", _raise_os_error)  # forked workers see it
    monkeypatch.setattr(sweep_local, "start_method", lambda: "fork")
    with pytest.raises(FileNotFoundError, match="a file the evaluator reads is missing"):
        sweep(model, chunk=5_000, jobs=2)


def test_an_unpicklable_error_comes_back_as_its_traceback() -> None:
    here, there = multiprocessing.get_context("fork").Pipe()
    blob = pickle.dumps((None, None))
    worker = multiprocessing.get_context("fork").Process(
        target=_serve_with(_raise), args=(there, blob), daemon=True
    )
    worker.start()
    there.close()
    here.send((1,))
    reply = here.recv()
    assert isinstance(reply, sweep_local._Raised) and isinstance(reply.error, RuntimeError)
    assert "an error that cannot cross the pipe" in str(reply.error)
    assert "cannot pickle this error" in str(reply.error)
    here.send((2,))
    reply = here.recv()
    assert isinstance(reply.error, ValueError) and "chunk 2 failed" in str(reply.error)
    here.send(None)
    worker.join(10)
    assert worker.exitcode == 0


def _serve_with(evaluate):  # noqa: ANN001, ANN202 - a test double's factory
    def serve(conn, blob):  # noqa: ANN001, ANN202
        sweep_local._evaluate = evaluate  # in the forked child only
        sweep_local._serve(conn, blob)

    return serve
