"""Running sweep chunks on an existing dask.distributed cluster (``--scheduler tcp://...``).

Dask does the scheduling, the transport and the fault tolerance: a chunk whose worker dies is
re-run on another worker (``distributed.scheduler.allowed-failures``). This module only keeps a
bounded window of chunks in flight (so memory stays bounded however many chunks a sweep has)
and hands each finished chunk front to the caller as it completes.
"""

from __future__ import annotations

import hashlib
import pickle
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import CancelledError
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import cloudpickle

from dse.errors import SchedulerError
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


#: The (model, plan) of the sweep a worker process last ran, by digest: unpickled once per
#: worker, not once per chunk.
_LOADED: dict[str, tuple[StudyModel, SweepPlan]] = {}


def _evaluate(digest: str, blob: bytes, indices: tuple[int, ...]) -> list[ChunkFront]:
    loaded = _LOADED.get(digest)
    if loaded is None:
        _LOADED.clear()
        loaded = _LOADED[digest] = pickle.loads(blob)
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
    pending = iter(todo)
    with ExitStack() as stack:
        client = _connect(stack, scheduler, connect_timeout_s)
        cpu_before = client.run(time.process_time)  # each worker's CPU s
        workers = len(client.nthreads())
        startup_s = time.perf_counter() - t0
        _evaluate_on(client, model, plan, list(pending), on_chunk, key=key)
        cpu_after = client.run(time.process_time)
        cpu = sum(v - cpu_before.get(k, 0.0) for k, v in cpu_after.items())
        return {"workers": workers, "startup_s": startup_s, "worker_cpu_s": cpu}


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
) -> None:
    """Keep IN_FLIGHT_PER_THREAD tasks per worker thread in flight until every chunk of
    ``todo`` came back; a task the scheduler cancelled (its worker died) is submitted again."""
    from dask.distributed import as_completed

    threads = sum(client.nthreads().values()) or 1
    # The model travels inside every task (~20 kB), not scattered once: a scattered value
    # lost with a killed worker cancels every chunk that depends on it ("lost
    # dependencies", seen after SIGKILLs), while a task's own arguments are re-sent.
    blob = cloudpickle.dumps((model, plan))
    digest = hashlib.sha256(blob).hexdigest()[:16]
    token = uuid.uuid4().hex[:8]
    window = as_completed(loop=client.loop)

    todo_left = list(todo)
    todo_left.reverse()  # popped from the end: chunk order kept
    batch_of: dict[Any, tuple[int, ...]] = {}
    retries: dict[tuple[int, ...], int] = {}

    def submit(batch: tuple[int, ...]) -> None:
        attempt = retries.get(batch, 0)
        name = f"dse-{key}-{token}-{batch[0]}-{len(batch)}"
        name += f"-retry{attempt}" if attempt else ""
        fut = client.submit(_evaluate, digest, blob, batch, key=name, pure=False)
        batch_of[fut.key] = batch
        window.add(fut)

    def submit_next() -> bool:
        k = chunks_per_task(len(todo_left), threads, MAX_CHUNKS_PER_TASK)
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
