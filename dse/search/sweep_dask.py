"""Running sweep chunks on dask.distributed: local worker processes or an existing cluster.

Dask does the scheduling, the transport and the fault tolerance: a chunk whose worker dies is
re-run on another worker (``distributed.scheduler.allowed-failures``). This module only keeps a
bounded window of chunks in flight (so memory stays bounded however many chunks a sweep has)
and hands each finished chunk front to the caller as it completes.
"""

from __future__ import annotations

import hashlib
import logging
import multiprocessing
import pickle
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import cloudpickle

from dse.model.study_model import StudyModel
from dse.search.sweep_chunks import ChunkFront, SweepPlan, evaluate_chunk
from dse.spec.errors import DseError

#: Chunks in flight per worker thread: enough to keep every worker busy while results travel.
IN_FLIGHT_PER_THREAD = 2
#: How often one task is submitted again after the scheduler cancelled it.
MAX_RESUBMITS = 3
#: At most this many consecutive chunks per Dask task (each still its own chunk front).
MAX_CHUNKS_PER_TASK = 8


class SchedulerError(DseError):
    """The Dask scheduler cannot be reached or has no workers."""


#: The (model, plan) of the sweep a worker process last ran, by digest: unpickled once per
#: worker, not once per chunk.
_LOADED: dict[str, tuple[StudyModel, SweepPlan]] = {}


def _evaluate(digest: str, blob: bytes, indices: tuple[int, ...]) -> list[ChunkFront]:
    loaded = _LOADED.get(digest)
    if loaded is None:
        _LOADED.clear()
        loaded = _LOADED[digest] = pickle.loads(blob)
    return [evaluate_chunk(*loaded, index) for index in indices]


def _batch_size(remaining: int, threads: int) -> int:
    """Chunks per Dask task: up to :data:`MAX_CHUNKS_PER_TASK` while at least 4 tasks per
    worker thread remain, then fewer, down to one chunk per task for the last ones (the
    scheduler's and client's cost is per task; the tail's imbalance is per task too)."""
    return max(1, min(MAX_CHUNKS_PER_TASK, remaining // (4 * threads)))


@dataclass
class DaskRun:
    """What a Dask sweep used: workers, start-up wall time, and worker CPU seconds."""

    workers: int
    startup_s: float
    worker_cpu_s: float
    chunks_in_client: int = 0


def _cpu_s() -> float:
    """CPU seconds (user + system) of the calling process so far."""
    return time.process_time()


def _children_cpu_s() -> dict[int, float]:
    """CPU seconds so far of every process below this one (a LocalCluster's workers and the
    forkserver they were forked from), by pid."""
    import psutil  # a dependency of dask.distributed

    out = {}
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.Error:
            continue
        out[child.pid] = t.user + t.system
    return out


def preload_modules(model: StudyModel) -> list[str]:
    """Modules a worker needs for the model's chunks: dask, the sweep code and the evaluators'
    modules (imported once, in the forkserver)."""
    names = {"distributed", "numpy", "dse.search.sweep_dask"}
    for ev in model.evaluators.values():
        names.add(getattr(ev.fn, "__module__", None) or "")
    return sorted(n for n in names if n and not n.startswith("__"))


@contextmanager
def _main_script_hidden() -> Iterator[None]:
    """While workers start, hide the main script's path from multiprocessing, which otherwise
    re-runs the script in every worker it starts (for ``dse``: pandas, typer, rich, the whole
    CLI, 0.5 CPU-s a worker) so that functions defined in it can be unpickled; Dask pickles
    those by value (cloudpickle), so workers need only the preloaded modules."""
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


def _start_method_settings(preload: list[str]) -> dict[str, Any]:
    """Worker processes forked from a forkserver that imported ``preload`` once, where the
    platform has one (Linux, macOS): a spawned worker re-imports Python, dask, numpy, the
    evaluators and the script that started it (``dse``: pandas, typer, rich), ~1 CPU-s each
    on every sweep, which on 2 cores was most of the gap to 2x. Elsewhere Dask's default.
    Where a forkserver was already running (a second sweep in one process), it is reused."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return {}
    import dask
    from distributed.utils import get_mp_context

    with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
        ctx = get_mp_context()  # distributed sets its own preload list on the first call
    ctx.set_forkserver_preload(preload)  # read when this process starts its forkserver
    return {"distributed.worker.multiprocessing-method": "forkserver"}


#: Evaluate chunks in the calling process while a LocalCluster starts (about a second of
#: imports and forks that would otherwise leave a core idle); off for tests of the Dask path.
EVALUATE_WHILE_STARTING = True


@contextmanager
def local_cluster(
    jobs: int,
    *,
    preload: list[str] | None = None,
    while_starting: Callable[[], bool] | None = None,
) -> Iterator[Any]:
    """A LocalCluster of ``jobs`` single-threaded worker processes, tuned for numpy chunks.

    Workers are forked from a forkserver that has imported ``preload`` (see
    :func:`_start_method_settings`). Dask's nanny exports ``MALLOC_TRIM_THRESHOLD_`` to its
    workers, which turns off glibc's adaptive mmap threshold: every chunk-sized numpy
    temporary is then mmapped and unmapped afresh, and the page faults made each chunk 4x
    slower (measured); it is removed. A Dask worker runs tasks in a thread, and glibc gives
    each thread its own malloc arena, whose freed blocks go back to the system: 350k page
    faults and +27 % CPU per chunk against the main thread (measured). ``MALLOC_ARENA_MAX=1``
    makes the task thread share the main arena, where freed temporaries are reused. The
    statistical profiler (a stack sample every 10 ms), the nannies' memory monitor (a psutil
    call every 100 ms per worker; chunks bound the memory) and most system-monitor polling are
    turned off as well. Workers started by hand (``dask worker``) are best started with
    ``MALLOC_ARENA_MAX=1`` and ``--no-nanny`` for the same reasons.

    ``while_starting()`` is called again and again in this thread while the cluster starts in
    another, until it returns False or the cluster is up; importing dask and starting the
    cluster both happen in that other thread.
    """
    box: dict[str, Any] = {}

    def start() -> None:
        try:
            import dask
            from dask.distributed import LocalCluster

            environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
            environ.pop("MALLOC_TRIM_THRESHOLD_", None)
            environ.setdefault("MALLOC_ARENA_MAX", "1")
            modules = preload or ["distributed", "numpy", "dse.search.sweep_dask"]
            settings = {
                "distributed.nanny.pre-spawn-environ": environ,
                "distributed.worker.profile.enabled": False,
                "distributed.admin.system-monitor.interval": "5s",
                "distributed.admin.system-monitor.disk": False,
                **_start_method_settings(modules),
            }
            box["config"] = dask.config.set(settings)  # set now, reverted after the cluster
            box["cluster"] = LocalCluster(
                n_workers=jobs,
                threads_per_worker=1,
                processes=True,
                memory_limit=0,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
        except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
            box["error"] = exc

    with ExitStack() as stack:
        try:
            with _main_script_hidden():
                if while_starting is None:
                    start()
                else:
                    thread = threading.Thread(target=start, name="dse-start-cluster", daemon=True)
                    thread.start()
                    try:
                        while thread.is_alive() and while_starting():
                            pass
                    finally:
                        thread.join()
        finally:
            if "config" in box:
                stack.enter_context(box["config"])
            if "cluster" in box:
                stack.callback(box["cluster"].close)
        if "error" in box:
            raise box["error"]
        yield box["cluster"]


def run_chunks_dask(
    model: StudyModel,
    plan: SweepPlan,
    todo: Iterable[int],
    on_chunk: Callable[[ChunkFront], None],
    *,
    jobs: int | None = None,
    scheduler: str | None = None,
    key: str = "sweep",
    connect_timeout_s: float = 10.0,
) -> DaskRun:
    """Evaluate chunks ``todo`` on Dask; call ``on_chunk`` per finished chunk.

    ``scheduler`` (``tcp://host:port``) uses an existing cluster; otherwise a LocalCluster of
    ``jobs`` single-threaded worker processes is started for this sweep and closed after it.
    The worker CPU seconds are those of the workers alive at the end over the sweep's span:
    on a LocalCluster those of every process below this one (workers from their start, and
    the forkserver's imports when this sweep started it).
    """
    t0 = time.perf_counter()
    pending = iter(todo)
    in_client: list[int] = []
    with ExitStack() as stack:
        if scheduler is not None:
            from dask.distributed import Client

            try:
                client = stack.enter_context(
                    Client(scheduler, timeout=connect_timeout_s, set_as_default=False)
                )
            except (OSError, TimeoutError) as exc:
                raise SchedulerError(
                    f"--scheduler {scheduler}: cannot reach the Dask scheduler ({exc})"
                ) from None
            try:
                client.wait_for_workers(1, timeout=connect_timeout_s)
            except TimeoutError:
                raise SchedulerError(
                    f"--scheduler {scheduler}: no Dask worker joined within "
                    f"{connect_timeout_s:g} s (start one with: dask worker {scheduler})"
                ) from None
            cpu_before = client.run(_cpu_s)
        else:
            cpu_before = _children_cpu_s()

            def evaluate_here() -> bool:
                index = next(pending, None)
                if index is not None:
                    on_chunk(evaluate_chunk(model, plan, index))
                    in_client.append(index)
                return index is not None

            cluster = stack.enter_context(
                local_cluster(
                    jobs or 1,
                    preload=preload_modules(model),
                    while_starting=evaluate_here if EVALUATE_WHILE_STARTING else None,
                )
            )
            from dask.distributed import Client  # imported by now, in the starting thread

            client = stack.enter_context(Client(cluster, set_as_default=False))
        from dask.distributed import as_completed

        threads = sum(client.nthreads().values()) or 1
        workers = len(client.nthreads())
        # The model travels inside every task (~20 kB), not scattered once: a scattered value
        # lost with a killed worker cancels every chunk that depends on it ("lost
        # dependencies", seen after SIGKILLs), while a task's own arguments are re-sent.
        blob = cloudpickle.dumps((model, plan))
        digest = hashlib.sha256(blob).hexdigest()[:16]
        startup_s = time.perf_counter() - t0
        token = uuid.uuid4().hex[:8]
        window = as_completed(loop=client.loop)

        todo_left = list(pending)
        todo_left.reverse()  # popped from the end: chunk order kept
        batch_of: dict[str, tuple[int, ...]] = {}
        retries: dict[tuple[int, ...], int] = {}

        def submit(batch: tuple[int, ...]) -> None:
            attempt = retries.get(batch, 0)
            name = f"dse-{key}-{token}-{batch[0]}-{len(batch)}"
            name += f"-retry{attempt}" if attempt else ""
            fut = client.submit(_evaluate, digest, blob, batch, key=name, pure=False)
            batch_of[fut.key] = batch
            window.add(fut)

        def submit_next() -> bool:
            k = _batch_size(len(todo_left), threads)
            batch = tuple(todo_left.pop() for _ in range(min(k, len(todo_left))))
            if batch:
                submit(batch)
            return bool(batch)

        for _ in range(threads * IN_FLIGHT_PER_THREAD):
            if not submit_next():
                break
        for fut in window:
            batch = batch_of.pop(fut.key)
            try:
                fronts = fut.result()
            except CancelledError:
                # A worker died holding the task and the scheduler dropped it instead of
                # re-running it (seen rarely after a SIGKILL): submit the task again.
                retries[batch] = retries.get(batch, 0) + 1
                if retries[batch] > MAX_RESUBMITS:
                    raise
                submit(batch)
                continue
            fut.release()
            for cf in fronts:
                on_chunk(cf)
            submit_next()
        cpu_after = client.run(_cpu_s) if scheduler is not None else _children_cpu_s()
        cpu = sum(v - cpu_before.get(k, 0.0) for k, v in cpu_after.items())
        return DaskRun(workers, startup_s, cpu, chunks_in_client=len(in_client))
