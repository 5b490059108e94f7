"""Running sweep chunks on dask.distributed: an existing cluster (``--scheduler tcp://...``),
or ``--jobs N`` local processes, this one and a :class:`~dask.distributed.LocalCluster` of
``N - 1`` worker processes.

Dask does the scheduling, the transport and the fault tolerance: a chunk whose worker dies is
re-run on another worker (``distributed.scheduler.allowed-failures``), and a local cluster's
nanny starts a new worker in place of a killed one; a worker exits by itself when the process
that started it is gone. This module only keeps a bounded window of chunks in flight (so
memory stays bounded however many chunks a sweep has) and hands each finished chunk front to
the caller as it completes. A hand-written pool with a pipe per worker did this before
(``concurrent.futures``' process pool hangs for ever on a worker killed halfway through a
reply, which Dask's nanny and scheduler survive).
"""

from __future__ import annotations

import hashlib
import logging
import pickle
import signal
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import CancelledError
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import cloudpickle

from dse.errors import SchedulerError, WorkerDiedError
from dse.model.study_model import StudyModel
from dse.search.sweep.chunks import ChunkFront, SweepPlan, chunks_per_task, evaluate_chunk

if TYPE_CHECKING:
    from dask.distributed import Client

#: Chunks in flight per worker thread: enough to keep every worker busy while results travel.
IN_FLIGHT_PER_THREAD = 2
#: How often one task is submitted again after the scheduler cancelled it.
MAX_RESUBMITS = 3
#: At most this many consecutive chunks per Dask task (each still its own chunk front).
MAX_CHUNKS_PER_TASK = 8
#: The workers of a local cluster (``--jobs``): without the nanny's MALLOC_TRIM_THRESHOLD_
#: (glibc's dynamic threshold then stays on: with it every chunk was about 4x slower, page
#: faults on each numpy temporary), no statistical profiler and a slower system monitor (they
#: take the GIL from the chunk: -7 % CPU) (docs/search.md). Not MALLOC_ARENA_MAX=1, advised
#: there for remote workers: in a worker forked from the forkserver, 8 chunks of a 2026
#: benchmark spec took 1.24-1.32 CPU-s with it (230,000 page faults), 0.72 without (85,000).
LOCAL_WORKER_CONFIG = {
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.multiprocessing-method": "forkserver",
}


#: The (model, plan) of the sweep a worker process last ran, by digest: unpickled once per
#: worker, not once per chunk.
_LOADED: dict[str, tuple[StudyModel, SweepPlan]] = {}


def _evaluate(digest: str, blob: bytes, indices: tuple[int, ...], folder: str) -> list[ChunkFront]:
    """Chunks ``indices`` of the pickled sweep; ``folder`` (the spec's) is searched first for
    the evaluators' modules while it is unpickled, as when the spec was loaded."""
    loaded = _LOADED.get(digest)
    if loaded is None:
        _LOADED.clear()
        sys.path.insert(0, folder)
        try:
            loaded = _LOADED[digest] = pickle.loads(blob)
        finally:
            sys.path.remove(folder)
    model, plan = loaded
    return [evaluate_chunk(model, plan, index) for index in indices]


def run_chunks_dask(
    model: StudyModel,
    plan: SweepPlan,
    todo: Iterable[int],
    on_chunk: Callable[[ChunkFront], None],
    *,
    scheduler: str,
    key: str = "sweep",
    connect_timeout_s: float = 10.0,
) -> dict[str, Any]:
    """Evaluate chunks ``todo`` on the Dask cluster at ``scheduler`` (``tcp://host:port``);
    call ``on_chunk`` per finished chunk. Returns what was used, as ``SweepResult`` fields:
    the worker CPU seconds are those of the workers alive at the end, over the sweep's span.
    """
    t0 = time.perf_counter()
    with ExitStack() as stack:
        client = _connect(stack, scheduler, connect_timeout_s)
        cpu_before = client.run(time.process_time)  # each worker's CPU s
        workers = len(client.nthreads())
        startup_s = time.perf_counter() - t0
        _evaluate_on(client, model, plan, list(todo), on_chunk, key=key)
        cpu_after = client.run(time.process_time)
        cpu = sum(v - cpu_before.get(k, 0.0) for k, v in cpu_after.items())
        return {"workers": workers, "startup_s": startup_s, "worker_cpu_s": cpu}


def run_chunks_local(
    model: StudyModel,
    plan: SweepPlan,
    todo: Iterable[int],
    on_chunk: Callable[[ChunkFront], None],
    *,
    jobs: int,
    key: str = "sweep",
) -> dict[str, Any]:
    """Evaluate chunks ``todo`` on ``jobs`` processes of this machine: this one, which evaluates
    chunks while the others' run and while they start, and a local Dask cluster of ``jobs - 1``
    single-threaded worker processes. Returns what was used, as ``SweepResult`` fields."""
    import dask
    from dask.distributed import Client, LocalCluster

    t0 = time.perf_counter()
    with ExitStack() as stack:
        stack.enter_context(dask.config.set(LOCAL_WORKER_CONFIG))
        _start_forkserver(model)
        cluster = LocalCluster(
            n_workers=0,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.CRITICAL,  # a killed worker is expected, not news
        )
        stack.enter_context(cluster)
        client = stack.enter_context(Client(cluster, set_as_default=False))
        cluster.scale(jobs - 1)  # not waited for: this process evaluates chunks meanwhile
        startup_s = time.perf_counter() - t0
        here = _evaluate_on(
            client, model, plan, list(todo), on_chunk, key=key, threads=jobs - 1, here=True
        )
        cpu = sum(client.run(time.process_time).values())
        return {
            "workers": jobs,
            "startup_s": startup_s,
            "worker_cpu_s": cpu,
            "chunks_in_client": here,
        }


def _start_forkserver(model: StudyModel) -> None:
    """Start multiprocessing's forkserver, from which the local workers are forked in
    milliseconds: it imports numpy, Dask and the evaluators' modules once, not the main script
    (for ``dse``: the whole CLI, ~0.5 CPU-s), and ignores SIGINT, as do the workers forked from
    it: Ctrl-C reaches the whole process group, and this process stops the sweep without each
    worker printing a KeyboardInterrupt traceback. A running forkserver is kept."""
    from multiprocessing import forkserver

    modules = {"numpy", "distributed", __name__}
    modules |= {getattr(ev.fn, "__module__", None) or "" for ev in model.evaluators.values()}
    forkserver.set_forkserver_preload(sorted(m for m in modules if m and m != "__main__"))
    main = sys.modules["__main__"]
    path = getattr(main, "__file__", None) if main.__spec__ is None else None
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited by the forkserver
    except ValueError:  # not the main thread: the sweep was not started from a terminal
        previous = None
    try:
        if path is not None:
            del main.__file__  # else the forkserver runs the main script again
        forkserver.ensure_running()
    finally:
        if path is not None:
            main.__file__ = path
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _connect(stack: ExitStack, scheduler: str, timeout_s: float) -> Client:
    """A client of the scheduler with at least one worker (closed with ``stack``)."""
    from dask.distributed import Client

    try:
        client: Client = stack.enter_context(
            Client(scheduler, timeout=timeout_s, set_as_default=False)
        )
    except (OSError, TimeoutError) as exc:
        raise SchedulerError(
            f"--scheduler {scheduler}: cannot reach the Dask scheduler ({exc})"
        ) from None
    try:
        client.wait_for_workers(1, timeout=timeout_s)
    except TimeoutError:
        raise SchedulerError(
            f"--scheduler {scheduler}: no Dask worker joined within "
            f"{timeout_s:g} s (start one with: dask worker {scheduler})"
        ) from None
    return client


def _evaluate_on(
    client: Client,
    model: StudyModel,
    plan: SweepPlan,
    todo: list[int],
    on_chunk: Callable[[ChunkFront], None],
    *,
    key: str,
    threads: int | None = None,
    here: bool = False,
) -> int:
    """Keep IN_FLIGHT_PER_THREAD tasks per worker thread (``threads``, default the cluster's)
    in flight until every chunk of ``todo`` came back; a task the scheduler cancelled (its
    worker died) is submitted again. ``here``: this process evaluates a chunk whenever no
    result is waiting; returns how many it did."""
    from dask.distributed import KilledWorker, as_completed

    threads = threads or sum(client.nthreads().values()) or 1
    # The model travels inside every task (~20 kB), not scattered once: a scattered value
    # lost with a killed worker cancels every chunk that depends on it ("lost
    # dependencies", seen after SIGKILLs), while a task's own arguments are re-sent.
    blob = cloudpickle.dumps((model, plan))
    digest = hashlib.sha256(blob).hexdigest()[:16]
    folder = str(model.loaded.path.parent)
    token = uuid.uuid4().hex[:8]
    window = as_completed(loop=client.loop)

    todo_left = list(todo)
    todo_left.reverse()  # popped from the end: chunk order kept
    batch_of: dict[Any, tuple[int, ...]] = {}
    retries: dict[tuple[int, ...], int] = {}
    done_here = 0

    def submit(batch: tuple[int, ...]) -> None:
        attempt = retries.get(batch, 0)
        name = f"dse-{key}-{token}-{batch[0]}-{len(batch)}"
        name += f"-retry{attempt}" if attempt else ""
        fut = client.submit(_evaluate, digest, blob, batch, folder, key=name, pure=False)
        batch_of[fut.key] = batch
        window.add(fut)

    def submit_next() -> bool:
        k = chunks_per_task(len(todo_left), threads, MAX_CHUNKS_PER_TASK)
        batch = tuple(todo_left.pop() for _ in range(min(k, len(todo_left))))
        if batch:
            submit(batch)
        return bool(batch)

    # A local cluster's workers start while this process evaluates chunks: none is handed
    # out before one is up (a small sweep may be done here before then).
    workers_up = not here
    while batch_of or todo_left:
        workers_up = workers_up or bool(client.nthreads())
        while workers_up and len(batch_of) < threads * IN_FLIGHT_PER_THREAD and submit_next():
            pass
        for fut in window.next_batch(block=not (here and todo_left)):
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
            except KilledWorker as exc:  # the task's worker died every time it ran it
                raise WorkerDiedError(
                    f"sweep worker processes died {exc.allowed_failures + 1} times running "
                    f"chunks {batch[0]}-{batch[-1]}; out of memory? try a smaller --chunk or "
                    "fewer --jobs"
                ) from None
            fut.release()
            for cf in fronts:
                on_chunk(cf)
        if here and todo_left:
            on_chunk(evaluate_chunk(model, plan, todo_left.pop()))
            done_here += 1
    return done_here
