"""Running sweep chunks on this machine's cores: this process and ``jobs - 1`` worker processes.

The calling process evaluates chunks too (it would otherwise sit idle waiting for results), and
merges every chunk front as it arrives. Each worker is a plain :mod:`multiprocessing` process
with a pipe of its own: tasks go down it, chunk fronts come back up it, and workers share
nothing else (no queue, no lock, no manager thread). A worker that dies (killed, out of memory)
takes only its own pipe with it: its unanswered tasks go back to the queue and a new worker
replaces it, so a sweep survives a killed worker with the same front (the chunk fronts are
deterministic and the archive's order does not depend on arrival order).

Why not :class:`concurrent.futures.ProcessPoolExecutor`: its workers write results to one
shared pipe, and a worker killed halfway through writing one leaves half a message there. The
pool's manager thread then waits for the rest forever (the other workers and the caller still
hold the pipe's write end): no future completes, the pool is never marked broken, and even
interpreter exit waits for that thread. Seen on CPython 3.11.7 as a CI run that hung; the test
``test_a_worker_killed_halfway_through_a_reply_is_replaced`` makes it happen every time.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import pickle
import signal
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from dse.errors import WorkerDiedError
from dse.model.study_model import StudyModel
from dse.search.study.local_processes import (
    children_cpu_s,
    main_script_hidden,
    preload_modules,
    start_method,
)
from dse.search.sweep.chunks import ChunkFront, SweepPlan, chunks_per_task, evaluate_chunk

#: Tasks sent ahead per worker: one running, one waiting, so a worker never waits for this
#: process (busy with a chunk of its own when a result arrives).
IN_FLIGHT_PER_WORKER = 2
#: At most this many consecutive chunks per task (:func:`chunks_per_task`): a task costs a
#: round trip through this process, which evaluates chunks of its own in between; with one
#: chunk per task a worker went idle ~20 % of the time on 2 cores (measured), with four it
#: does not.
MAX_CHUNKS_PER_TASK = 4
#: Worker deaths the sweep survives: a chunk that kills its worker every time (out of memory)
#: must not loop forever.
MAX_WORKER_RESTARTS = 3
#: Seconds a worker told to stop gets to exit before it is killed.
STOP_GRACE_S = 10.0


# -- in the worker process ----------------------------------------------------------------------

_LOADED: dict[str, tuple[StudyModel, SweepPlan]] = {}


@dataclass
class _Raised:
    """An exception a task raised in a worker, sent back to be raised in the caller."""

    error: BaseException


def _watch_parent(parent: int) -> None:
    """Exit when the process that started this worker is gone (the sweep SIGKILLed, say; with
    a forkserver, the forkserver, which exits with the sweep): a worker blocked on its pipe
    would otherwise wait as long as any other process holds the pipe's other end."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGKILL)


def _evaluate(indices: tuple[int, ...]) -> list[ChunkFront]:
    model, plan = _LOADED["run"]
    return [evaluate_chunk(model, plan, index) for index in indices]


def _serve(conn: Connection, blob: bytes) -> None:
    """A worker's life: load the study once, then answer tasks until told to stop (``None``)
    or the caller's end of the pipe is gone."""
    # Ctrl-C reaches the whole process group: the sweep stops its workers itself, instead of
    # each printing a KeyboardInterrupt traceback. A forked worker inherits the caller's
    # handlers; SIGTERM must end it whatever the caller installed.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _LOADED["run"] = pickle.loads(blob)
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    while True:
        try:
            batch = conn.recv()
        except (EOFError, OSError):
            return
        if batch is None:
            return
        try:
            reply: object = _evaluate(batch)
        except Exception as exc:  # noqa: BLE001 - raised again in the caller
            reply = _Raised(exc)
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return
        except Exception:  # noqa: BLE001 - the reply or its exception does not pickle
            what = f"{reply.error!r}" if isinstance(reply, _Raised) else "a chunk's result"
            sent = f"{what} could not be sent back from a sweep worker:\n"
            conn.send(_Raised(RuntimeError(sent + traceback.format_exc())))


# -- in the calling process ---------------------------------------------------------------------


#: What :func:`run_chunks_local` reads from a dead worker's pipe.
_GONE = object()


@dataclass(eq=False)
class _Worker:
    """A worker process, this process's end of its pipe, and the tasks it has not answered."""

    process: BaseProcess
    conn: Connection
    tasks: deque[tuple[int, ...]] = field(default_factory=deque)


def _stop(workers: list[_Worker], *, gently: bool) -> None:
    """End every worker: ``gently``, each finishes nothing more and exits when told to; else
    (the sweep failed or was interrupted) they are terminated at once."""
    for w in workers:
        if gently:
            try:
                w.conn.send(None)
            except OSError:
                pass
        else:
            w.process.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for w in workers:
        w.process.join(max(0.0, deadline - time.monotonic()))
        if w.process.exitcode is None:
            w.process.kill()
            w.process.join()
        w.conn.close()


class _Pool:
    """The worker processes of one local sweep, and the chunks not yet handed out.

    Chunks go out in tasks of a few, at most IN_FLIGHT_PER_WORKER tasks per worker; this
    process evaluates chunks itself between handing them out. A worker that dies is
    replaced and the chunks it had not answered are queued again.
    """

    def __init__(
        self,
        model: StudyModel,
        plan: SweepPlan,
        todo: Iterable[int],
        on_chunk: Callable[[ChunkFront], None],
        *,
        jobs: int,
        method: str,
    ) -> None:
        self.model, self.plan, self.on_chunk, self.jobs = model, plan, on_chunk, jobs
        self.queue = deque(todo)
        self.blob = pickle.dumps((model, plan), protocol=pickle.HIGHEST_PROTOCOL)
        self.method = method
        self.ctx: Any = multiprocessing.get_context(method)  # Process, Pipe: every context's
        if method == "forkserver":
            self.ctx.set_forkserver_preload(preload_modules(model))
        self.workers: list[_Worker] = []
        self.in_client = self.restarts = 0

    def evaluate_one_here(self) -> None:
        self.on_chunk(evaluate_chunk(self.model, self.plan, self.queue.popleft()))
        self.in_client += 1

    def start_worker(self) -> _Worker:
        here, there = self.ctx.Pipe()
        process = self.ctx.Process(
            target=_serve, args=(there, self.blob), name="dse-sweep-worker", daemon=True
        )
        with main_script_hidden():
            process.start()
        there.close()  # the worker's end lives in the worker only: its death closes the pipe
        return _Worker(process, here)

    def start_workers(self, n: int) -> None:
        """Start ``n`` workers. Forked ones take milliseconds; a forkserver imports numpy and
        the evaluators first (~0.3 s), a spawned worker everything: evaluate chunks here
        meanwhile, so no core waits for them."""
        if not n:
            return
        if self.method == "fork":
            self.workers.extend(self.start_worker() for _ in range(n))
            return
        started: list[_Worker] = []
        box: dict[str, BaseException] = {}

        def start() -> None:
            try:
                for _ in range(n):
                    started.append(self.start_worker())
            except BaseException as exc:  # noqa: BLE001 - re-raised in this thread
                box["error"] = exc

        starter = threading.Thread(target=start, name="dse-start-workers", daemon=True)
        starter.start()
        try:
            while starter.is_alive() and self.queue:
                self.evaluate_one_here()
        finally:
            starter.join()
            self.workers.extend(started)
        if "error" in box:
            raise box["error"]

    def run(self) -> None:
        """Until every chunk is answered: hand out tasks, take replies, evaluate one here."""
        while self.queue or any(w.tasks for w in self.workers):
            if self.workers:
                self.send_tasks()
                # Results that came in while this process evaluated its own chunk; with
                # nothing left to evaluate here, wait for the next one.
                self.collect(block=not self.queue)
            if self.queue:
                self.evaluate_one_here()

    def send_tasks(self) -> None:
        for w in self.workers:
            while self.queue and len(w.tasks) < IN_FLIGHT_PER_WORKER:
                k = chunks_per_task(len(self.queue), self.jobs, MAX_CHUNKS_PER_TASK)
                batch = tuple(itertools.islice(self.queue, k))
                try:
                    w.conn.send(batch)
                except OSError:  # it died: collect() replaces it
                    break
                for _ in batch:
                    self.queue.popleft()
                w.tasks.append(batch)

    @staticmethod
    def receive(w: _Worker) -> object:
        """The next reply on ``w``'s pipe, or ``_GONE`` at its end or after half a reply (the
        worker died); an error the task raised is in the reply, never caught here."""
        try:
            return w.conn.recv()
        except (EOFError, OSError):
            return _GONE

    def take(self, w: _Worker, reply: object) -> None:
        w.tasks.popleft()
        if isinstance(reply, _Raised):
            raise reply.error
        for cf in reply:  # type: ignore[attr-defined]
            self.on_chunk(cf)

    def replace(self, w: _Worker) -> None:
        """A worker died: take what it answered before, requeue the rest, start another."""
        while w.conn.poll():
            reply = self.receive(w)
            if reply is _GONE:
                break
            self.take(w, reply)
        self.workers.remove(w)
        _stop([w], gently=False)
        lost = sorted(i for batch in w.tasks for i in batch)
        self.queue.extendleft(reversed(lost))
        self.restarts += 1
        if self.restarts > MAX_WORKER_RESTARTS:
            raise WorkerDiedError(
                f"sweep worker processes died {self.restarts} times ({len(lost)} chunks in "
                "flight the last time); out of memory? try a smaller --chunk or fewer --jobs"
            )
        self.workers.append(self.start_worker())

    def collect(self, *, block: bool) -> None:
        """Hand every chunk front that has come back to ``on_chunk``; replace dead workers.
        Never waits on one pipe alone: a dead worker's process sentinel wakes this up too."""
        by_conn: dict[Any, _Worker] = {w.conn: w for w in self.workers}
        by_sentinel: dict[Any, _Worker] = {w.process.sentinel: w for w in self.workers}
        dead: list[_Worker] = []
        for ready in wait([*by_conn, *by_sentinel], timeout=None if block else 0):
            if ready in by_sentinel:
                w = by_sentinel[ready]
            else:
                w = by_conn[ready]
                reply = self.receive(w)
                if reply is not _GONE:
                    self.take(w, reply)
                    continue
            if w not in dead:
                dead.append(w)
        for w in dead:
            self.replace(w)


def run_chunks_local(
    model: StudyModel,
    plan: SweepPlan,
    todo: Iterable[int],
    on_chunk: Callable[[ChunkFront], None],
    *,
    jobs: int,
    method: str | None = None,
) -> dict[str, Any]:
    """Evaluate chunks ``todo`` on ``jobs`` processes (this one included); call ``on_chunk``
    here for every finished chunk, in the order they finish. Returns what was used, as
    ``SweepResult`` fields.

    ``method`` is the multiprocessing start method (default :func:`start_method`).
    """
    t0 = time.perf_counter()
    cpu0 = children_cpu_s()
    pool = _Pool(model, plan, todo, on_chunk, jobs=jobs, method=method or start_method())
    finished = False
    try:
        pool.start_workers(jobs - 1)
        startup_s = time.perf_counter() - t0
        pool.run()
        finished = True
    finally:
        _stop(pool.workers, gently=finished)
    return {
        "workers": jobs,
        "startup_s": startup_s,
        "worker_cpu_s": children_cpu_s() - cpu0,
        "chunks_in_client": pool.in_client,
        "worker_restarts": pool.restarts,
    }
