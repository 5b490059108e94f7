"""Running sweep chunks on this machine's cores: this process and ``jobs - 1`` worker processes.

The calling process evaluates chunks too (it would otherwise sit idle waiting for results), and
merges every chunk front as it arrives. Workers are plain processes of a
:class:`concurrent.futures.ProcessPoolExecutor`: no scheduler, no task threads, nothing to
start but the processes themselves. A worker that dies (killed, out of memory) breaks the
pool; its chunks, and those in flight on the others, are submitted again to a new pool, so a
sweep survives a killed worker with the same front (the chunk fronts are deterministic and the
archive's order does not depend on arrival order).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass

from dse.model.study_model import StudyModel
from dse.search.sweep_chunks import ChunkFront, SweepPlan, chunks_per_task, evaluate_chunk
from dse.spec.errors import DseError

#: Tasks queued per worker: one running, one waiting, so a worker never waits for this
#: process (busy with a chunk of its own when a result arrives).
IN_FLIGHT_PER_WORKER = 2
#: At most this many consecutive chunks per task (:func:`chunks_per_task`). A task's
#: submission and its result pass through the pool's manager thread, which waits for the GIL
#: while this process evaluates; with one chunk per task the worker went idle ~20 % of the
#: time on 2 cores (measured), with four it does not.
MAX_CHUNKS_PER_TASK = 4
#: Times the pool may break (a worker died) before the sweep gives up: a chunk that kills
#: its worker every time (out of memory) must not loop forever.
MAX_POOL_RESTARTS = 3


class WorkerDiedError(DseError):
    """Local sweep workers kept dying (out of memory? killed?)."""


@dataclass
class LocalRun:
    """What a local multi-process sweep used."""

    workers: int
    startup_s: float
    worker_cpu_s: float
    chunks_in_client: int
    restarts: int = 0


# -- in the worker process ----------------------------------------------------------------------

_LOADED: dict[str, tuple[StudyModel, SweepPlan]] = {}


def _watch_parent(parent: int) -> None:
    """Exit when the process that started this worker is gone (the sweep SIGKILLed, say; with
    a forkserver, the forkserver, which exits with the sweep): a worker blocked on its task
    queue would otherwise wait forever."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGKILL)


def _init_worker(blob: bytes) -> None:
    # Ctrl-C reaches the whole process group: the sweep stops its workers itself (they finish
    # the task in hand and exit), instead of each printing a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _LOADED["run"] = pickle.loads(blob)
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()


def _evaluate(indices: tuple[int, ...]) -> list[ChunkFront]:
    model, plan = _LOADED["run"]
    return [evaluate_chunk(model, plan, index) for index in indices]


# -- in the calling process ---------------------------------------------------------------------


def start_method() -> str:
    """``fork`` on Linux while this process has a single thread (no imports or pickling in the
    workers: they start in milliseconds), otherwise ``forkserver`` where the platform has one
    (forking a multi-threaded process can deadlock the child; on macOS system libraries start
    threads of their own, which is why Python stopped forking there), else ``spawn``."""
    methods = multiprocessing.get_all_start_methods()
    if sys.platform.startswith("linux") and "fork" in methods and threading.active_count() == 1:
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


@contextmanager
def _main_script_hidden() -> Iterator[None]:
    """While workers start, hide the main script's path from multiprocessing, which otherwise
    re-runs the script in every spawned worker (or the forkserver) so that functions defined in
    it can be unpickled (for ``dse``: pandas, typer, rich, the whole CLI, ~0.5 CPU-s); the
    workers need only the sweep code and the evaluators' modules."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or path is None or getattr(main, "__spec__", None) is not None:
        yield
        return
    del main.__file__
    try:
        yield
    finally:
        main.__file__ = path


def preload_modules(model: StudyModel) -> list[str]:
    """Modules a forkserver imports once for every worker: the sweep code and the evaluators'."""
    names = {"numpy", __name__}
    for ev in model.evaluators.values():
        names.add(getattr(ev.fn, "__module__", None) or "")
    return sorted(n for n in names if n and not n.startswith("__"))


def _children_cpu_s() -> float:
    """CPU seconds so far of every process below this one, running or reaped (workers forked
    from a forkserver are its children, not ours)."""
    import psutil  # a dependency of dask.distributed

    try:
        import resource  # Unix
    except ImportError:
        total = 0.0
    else:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        total = r.ru_utime + r.ru_stime
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def run_chunks_local(
    model: StudyModel,
    plan: SweepPlan,
    todo: Iterable[int],
    on_chunk: Callable[[ChunkFront], None],
    *,
    jobs: int,
    method: str | None = None,
) -> LocalRun:
    """Evaluate chunks ``todo`` on ``jobs`` processes (this one included); call ``on_chunk``
    here for every finished chunk, in the order they finish.

    ``method`` is the multiprocessing start method (default :func:`start_method`).
    """
    t0 = time.perf_counter()
    cpu0 = _children_cpu_s()
    queue = deque(todo)
    blob = pickle.dumps((model, plan), protocol=pickle.HIGHEST_PROTOCOL)
    method = method or start_method()
    ctx = multiprocessing.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(preload_modules(model))
    workers = jobs - 1
    in_flight: dict[Future[list[ChunkFront]], tuple[int, ...]] = {}
    in_client = restarts = 0

    def new_pool() -> ProcessPoolExecutor:
        with _main_script_hidden():
            pool = ProcessPoolExecutor(
                workers, mp_context=ctx, initializer=_init_worker, initargs=(blob,)
            )
            # Start every worker now (the pool would start them one per submit otherwise).
            for f in [pool.submit(int, 0) for _ in range(workers)]:
                f.result()
        return pool

    def refill(pool: ProcessPoolExecutor) -> None:
        """Queue tasks up to the window; raises BrokenProcessPool (the batch still queued)
        once a worker has died."""
        while queue and len(in_flight) < workers * IN_FLIGHT_PER_WORKER:
            k = chunks_per_task(len(queue), jobs, MAX_CHUNKS_PER_TASK)
            batch = tuple(itertools.islice(queue, k))
            fut = pool.submit(_evaluate, batch)
            for _ in batch:
                queue.popleft()
            in_flight[fut] = batch

    def collect(block: bool) -> bool:
        """Hand finished chunk fronts to ``on_chunk``; False once the pool is broken."""
        done, _ = wait(in_flight, timeout=None if block else 0, return_when=FIRST_COMPLETED)
        ok = True
        for fut in done:
            try:
                fronts = fut.result()
            except BrokenProcessPool:
                ok = False  # stays in flight: re-queued with the others
                continue
            del in_flight[fut]
            for cf in fronts:
                on_chunk(cf)
        return ok

    pool: ProcessPoolExecutor | None = None
    if workers and method == "fork":
        pool = new_pool()  # milliseconds
    elif workers:
        # A forkserver imports numpy and the evaluators first (~0.3 s): evaluate chunks here
        # meanwhile, so no core waits for it.
        box: dict[str, object] = {}

        def start() -> None:
            try:
                box["pool"] = new_pool()
            except BaseException as exc:  # noqa: BLE001 - re-raised in this thread
                box["error"] = exc

        starter = threading.Thread(target=start, name="dse-start-workers", daemon=True)
        starter.start()
        while starter.is_alive() and queue:
            on_chunk(evaluate_chunk(model, plan, queue.popleft()))
            in_client += 1
        starter.join()
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        pool = box["pool"]  # type: ignore[assignment]
    startup_s = time.perf_counter() - t0
    try:
        while queue or in_flight:
            if pool is not None:
                try:
                    refill(pool)
                    # Results that came in while this process evaluated its own chunk.
                    healthy = collect(block=not queue)
                except BrokenProcessPool:  # raised by submit once a worker has died
                    healthy = False
                if not healthy:
                    restarts += 1
                    # Every task of a broken pool fails: all of them go back to the queue.
                    lost = sorted(i for batch in in_flight.values() for i in batch)
                    if restarts > MAX_POOL_RESTARTS:
                        raise WorkerDiedError(
                            f"sweep worker processes died {restarts} times ({len(lost)} chunks "
                            "in flight the last time); out of memory? try a smaller --chunk or "
                            "fewer --jobs"
                        )
                    in_flight.clear()
                    queue.extendleft(reversed(lost))
                    pool.shutdown(wait=True, cancel_futures=True)
                    pool = new_pool()
                    continue
            if queue:
                index = queue.popleft()
                on_chunk(evaluate_chunk(model, plan, index))
                in_client += 1
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return LocalRun(
        workers=jobs,
        startup_s=startup_s,
        worker_cpu_s=_children_cpu_s() - cpu0,
        chunks_in_client=in_client,
        restarts=restarts,
    )
