"""The database side of :class:`dse.search.rdb_storage.BatchedRDBStorage`: a lost connection
retried with backoff for a bounded time (said once on stderr, then refused in one line), the
claim lock that lets one worker at a time count and create trials, and batch heartbeats on
their own thread."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from optuna.storages import RDBStorage

from dse.errors import StorageError
from dse.search.journal_file import flocked

T = TypeVar("T")

#: How long a lost database connection is retried before the worker gives up (seconds);
#: ``$DSE_STORAGE_RETRY_S`` overrides it.
RETRY_S = 120.0
_MAX_BACKOFF_S = 8.0


def retry_window_s() -> float:
    text = os.environ.get("DSE_STORAGE_RETRY_S", "")
    try:
        return max(0.0, float(text)) if text else RETRY_S
    except ValueError:
        return RETRY_S


def connection_lost(exc: BaseException) -> str | None:
    """The database error's text when ``exc`` (or what caused it) is a lost or refused
    connection, else None (Optuna wraps it in "invalid data in the commit")."""
    import sqlalchemy.exc as sa_exc

    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, sa_exc.DBAPIError) and (
            cur.connection_invalidated
            or isinstance(cur, sa_exc.OperationalError | sa_exc.InterfaceError)
        ):
            return str(cur.orig).strip().splitlines()[0] if cur.orig else str(cur)
        if type(cur).__module__.startswith("psycopg") and type(cur).__name__ in (
            "OperationalError",
            "InterfaceError",
        ):
            return str(cur).strip().splitlines()[0]
        cur = cur.__cause__ or cur.__context__
    return None


def retrying(retry_s: float, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, a lost connection retried with backoff for ``retry_s``."""
    deadline: float | None = None
    delay = 0.25
    while True:
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            reason = connection_lost(exc)
            if reason is None:
                raise
            now = time.monotonic()
            if deadline is None:
                deadline = now + retry_s
                print(
                    f"dse: lost the connection to the storage ({reason}); retrying for up "
                    f"to {retry_s:g} s",
                    file=sys.stderr,
                    flush=True,
                )
            if now >= deadline:
                raise StorageError(
                    f"the storage stayed unreachable for {retry_s:g} s ({reason}); "
                    "the study is intact: run the same command again once it is back"
                ) from None
            time.sleep(min(delay, max(0.0, deadline - now)))
            delay = min(2 * delay, _MAX_BACKOFF_S)
            continue
        if deadline is not None:
            print("dse: the storage is reachable again", file=sys.stderr, flush=True)
        return result


@contextlib.contextmanager
def claim_lock(backend: RDBStorage, study_id: int, retry_s: float) -> Iterator[None]:
    """Hold the study's claim lock: a PostgreSQL advisory lock, a file lock beside a SQLite
    database, none for other databases."""
    if backend.engine.name == "postgresql":
        with _pg_lock(backend, study_id, retry_s):
            yield
        return
    database = backend.engine.url.database
    if backend.engine.name != "sqlite" or not database:
        yield
        return
    with flocked(database + ".claim"):
        yield


@contextlib.contextmanager
def _pg_lock(backend: RDBStorage, study_id: int, retry_s: float) -> Iterator[None]:
    import sqlalchemy as sa

    key = 0x6473650000000000 + study_id  # "dse" in the high bytes: no clash with others
    conn = retrying(retry_s, _locked_connection, backend, key)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": key})
            conn.commit()
        with contextlib.suppress(Exception):
            conn.close()


def _locked_connection(backend: RDBStorage, key: int) -> Any:
    import sqlalchemy as sa

    conn = backend.engine.connect()
    try:
        conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": key})
        conn.commit()
    except BaseException:
        conn.close()
        raise
    return conn


@contextlib.contextmanager
def beating(record: Callable[[list[int]], None], interval: int, ids: list[int]) -> Iterator[None]:
    """``record(ids)`` now and every ``interval`` seconds while the block runs, on its own
    thread (a missed beat during an outage is skipped)."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(interval):
            with contextlib.suppress(Exception):
                record(ids)

    with contextlib.suppress(Exception):
        record(ids)
    thread = threading.Thread(target=beat, name="dse-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
