"""Optuna's own RDB storage (PostgreSQL, SQLite, MySQL) as dse's workers open it.

Nothing here reads or writes Optuna's tables: the storage is :class:`optuna.storages.RDBStorage`
(behind Optuna's own trial cache, as ``optuna.storages.get_storage`` puts it), with one
addition on the side, through SQLAlchemy's public API on the storage's engine: a lost server
waited for, for a bounded time (:data:`RETRY_S`, ``$DSE_STORAGE_RETRY_S``), said once on
stderr, then refused in one line. Each of ``RDBStorage``'s methods is one transaction, so a
method that fails on a lost connection is run again, whole, once the server answers (new
connections are retried with backoff, and the pool pings a connection before lending it).

benchmarks/bench_storage.py measured this storage against the batched one it replaced
(docs/storage.md).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from optuna.storages import RDBStorage

from dse.errors import StorageError

T = TypeVar("T")

#: How long a lost database server is waited for before the worker gives up (seconds);
#: ``$DSE_STORAGE_RETRY_S`` overrides it.
RETRY_S = 120.0
_MAX_BACKOFF_S = 8.0


def retry_window_s() -> float:
    text = os.environ.get("DSE_STORAGE_RETRY_S", "")
    try:
        return max(0.0, float(text)) if text else RETRY_S
    except ValueError:
        return RETRY_S


class RetryingRDBStorage(RDBStorage):
    """:class:`optuna.storages.RDBStorage` with connections retried for ``retry_s`` seconds
    (see the module docstring)."""

    def __init__(self, url: str, *, retry_s: float | None = None, **kwargs: Any) -> None:
        self.retry_s = retry_window_s() if retry_s is None else retry_s
        super().__init__(url, **kwargs)
        _retry_connects(self.engine, self.retry_s)


#: Whether this thread is inside a retried call (only the outermost call is retried: it owns
#: the transaction; the methods it calls run inside its session).
_inside = threading.local()


def _retried(method: Callable[..., T]) -> Callable[..., T]:
    @functools.wraps(method)
    def call(self: RetryingRDBStorage, *args: Any, **kwargs: Any) -> T:
        if getattr(_inside, "active", False):
            return method(self, *args, **kwargs)
        # A session whose connection died mid-transaction refuses every later statement of
        # its thread until it is removed: each retry starts from a fresh one.
        reset = functools.partial(RDBStorage.remove_session, self)
        _inside.active = True
        try:
            return retrying(self.retry_s, method, self, *args, reset=reset, **kwargs)
        finally:
            _inside.active = False

    return call


# Every method of Optuna's RDBStorage (those its trial cache calls too): the outermost call,
# one transaction, is run again whole when it fails on a lost connection.
for _name, _method in vars(RDBStorage).items():
    if inspect.isfunction(_method) and not _name.startswith("__"):
        setattr(RetryingRDBStorage, _name, _retried(_method))


def _retry_connects(engine: Any, retry_s: float) -> None:
    """New connections of ``engine`` retried for ``retry_s`` while the server is away."""
    import sqlalchemy as sa

    def connect(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        return retrying(retry_s, dialect.connect, *cargs, **cparams)

    sa.event.listen(engine, "do_connect", connect)


def connection_lost(exc: BaseException) -> str | None:
    """The database error's text when ``exc`` (or what caused it) is a lost or refused
    connection, else None."""
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
        if isinstance(cur, sa_exc.DisconnectionError | sa_exc.PendingRollbackError):
            return str(cur).strip().splitlines()[0]
        if type(cur).__module__.startswith(("psycopg", "sqlite3", "pymysql")) and any(
            c.__name__ in ("OperationalError", "InterfaceError") for c in type(cur).__mro__
        ):
            return str(cur).strip().splitlines()[0]
        if isinstance(cur, StorageError):
            return None  # an inner retry already gave up: its window is the worker's
        cur = cur.__cause__ or (None if cur.__suppress_context__ else cur.__context__)
    return None


def retrying(
    retry_s: float,
    fn: Callable[..., T],
    *args: Any,
    reset: Callable[[], None] | None = None,
    **kwargs: Any,
) -> T:
    """``fn(*args, **kwargs)``, a lost connection retried with backoff for ``retry_s``
    (``reset()`` before each retry)."""
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
            if reset is not None:
                with contextlib.suppress(Exception):
                    reset()
            continue
        if deadline is not None:
            print("dse: the storage is reachable again", file=sys.stderr, flush=True)
        return result
