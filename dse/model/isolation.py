"""The one path into user code (evaluators, their hooks, the probe): what it may not do.

Every call into evaluator code runs inside :func:`user_code`: its output goes to stderr
(stdout carries the tool's machine-readable answers, ``--json``, ``--csv -``) and its
``os._exit`` raises :class:`ExitCalled`, which fails its design like any other error.
:class:`Isolated` then runs it inline (the default: free) or, with a time limit
(``search.trial_timeout_s``, the probe's limit), in a persistent forked child killed and
replaced past the deadline: a thread or an alarm cannot stop code that holds the GIL
(``9 ** 9 ** 9 ** 9``), and only a child survives a C-level ``_exit`` or a crash.

Output is kept off stdout at both levels a model writes through: ``sys.stdout`` with
:func:`contextlib.redirect_stdout`, and descriptor 1 (``os.write(1, ...)``, C extensions, child
processes) with ``dup2``; both are shared by nested and threaded entries (the first one in
redirects, the last one out restores: a thread leaving early must not restore the other's).
``os._exit`` is replaced once per process; it raises only inside :func:`user_code` and only in
the process that entered it (a process the model forks exits for real).
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any, NoReturn

_LOCK = threading.Lock()
_REAL_EXIT = os._exit
_depth = 0
_owner: int | None = None  # the pid inside user code, whose os._exit raises
_undo = contextlib.ExitStack()  # what the outermost entry restores on its way out


class ExitCalled(BaseException):
    """User code called ``os._exit(code)`` (a BaseException: the model's own ``except
    Exception`` must not take it for an ordinary error)."""

    def __init__(self, code: int) -> None:
        super().__init__(f"called os._exit({code})")
        self.code = code


class DeadlineExceeded(Exception):
    """The call ran past its deadline; its child process was killed."""


class CallFailed(Exception):
    """The call raised in the child, or the child died (``kind`` empty). Plain data comes back
    in it, since an exception with its own constructor does not survive pickling: the name of
    what it raised (``kind``), its text, and the ``path``/``message`` a domain error carries."""

    def __init__(
        self, text: str, *, kind: str = "", path: Any = None, message: Any = None
    ) -> None:
        super().__init__(text)
        self.kind, self.path = kind, path
        if message is not None:
            self.message = message


class CallFailedValueError(CallFailed, ValueError):
    """The call raised a ValueError in the child (one may locate a bad spec value)."""


def _exit(status: int) -> NoReturn:
    if _depth and os.getpid() == _owner:
        raise ExitCalled(status)
    _REAL_EXIT(status)


def _flush() -> None:
    for stream in (sys.stdout, sys.__stdout__):
        with contextlib.suppress(Exception):  # a closed or detached stream has nothing queued
            if stream is not None:
                stream.flush()


def _enter() -> None:
    global _depth, _owner
    with _LOCK:
        _depth += 1
        if _depth > 1:
            return
        if os._exit is not _exit:
            os._exit = _exit  # type: ignore[assignment]
        _owner = os.getpid()
        _flush()  # the tool's own text stays before the model's
        with contextlib.suppress(OSError):  # descriptor 1 or 2 closed (dse >&-): nothing to do
            _undo.callback(_restore_fd1, os.dup(1))
            os.dup2(2, 1)
        _undo.enter_context(contextlib.redirect_stdout(sys.stderr))


def _restore_fd1(saved: int) -> None:
    with contextlib.suppress(OSError):
        os.dup2(saved, 1)
    os.close(saved)


def _leave() -> None:
    global _depth, _owner
    with _LOCK:
        _depth -= 1
        if _depth:
            return
        _owner = None
        _flush()  # what the model queued in sys.__stdout__ goes where it was written
        _undo.close()  # sys.stdout first, then descriptor 1


@contextlib.contextmanager
def user_code() -> Iterator[None]:
    """Inside: stdout (``sys.stdout`` and descriptor 1) is stderr, ``os._exit`` raises."""
    _enter()
    try:
        yield
    finally:
        _leave()


def _serve(conn: Connection, fn: Callable[[Any], Any], parent: int) -> None:
    """Child loop: answer each request with ``fn``'s result until the pipe closes. The child
    dies with its parent (Linux ``PR_SET_PDEATHSIG``) and leaves Ctrl-C to it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        return
    while True:
        try:
            arg = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply: tuple[str, Any] = ("ok", fn(arg))
        except BaseException as exc:  # noqa: BLE001 - SystemExit from user code too
            cls = CallFailedValueError if isinstance(exc, ValueError) else CallFailed
            path, message = getattr(exc, "path", None), getattr(exc, "message", None)
            reply = ("error", cls(str(exc), kind=type(exc).__name__, path=path, message=message))
        try:
            conn.send(reply)
        except Exception as exc:  # noqa: BLE001 - an unpicklable result
            conn.send(("error", CallFailed(f"the result cannot be sent back: {exc}")))


class Isolated:
    """``fn(arg)`` inline (``timeout_s`` None), or in a persistent forked child that is killed
    (SIGKILL: a hung call ignores anything gentler) and replaced past ``timeout_s``."""

    def __init__(self, fn: Callable[[Any], Any], timeout_s: float | None) -> None:
        self.fn = fn
        self.timeout_s = timeout_s
        self._proc: Any = None
        self._conn: Connection | None = None

    def __call__(self, arg: Any) -> Any:
        if self.timeout_s is None:
            return self.fn(arg)
        conn = self._conn if self._conn is not None else self._start()
        try:
            conn.send(arg)
            if not conn.poll(self.timeout_s):
                self.close()
                raise DeadlineExceeded(f"timed out after {self.timeout_s:g} s")
            status, value = conn.recv()
        except (EOFError, OSError):
            if self._proc is not None:
                self._proc.join(timeout=5)  # reaped, so its exit code is known
            code = self._proc.exitcode if self._proc is not None else None
            self.close()
            raise CallFailed(f"the evaluation process died (exit code {code})") from None
        if status == "error":
            raise value
        return value

    def _start(self) -> Connection:
        ctx = multiprocessing.get_context("fork")
        mine, theirs = ctx.Pipe()
        self._proc = ctx.Process(
            target=_serve, args=(theirs, self.fn, os.getpid()), daemon=True, name="dse-call"
        )
        self._proc.start()
        theirs.close()
        self._conn = mine
        return mine

    def close(self) -> None:
        """Stop the child, if any."""
        conn, proc, self._conn, self._proc = self._conn, self._proc, None, None
        if conn is not None:
            conn.close()
        if proc is not None:
            if proc.is_alive():
                proc.kill()
            proc.join(timeout=5)

    def __enter__(self) -> Isolated:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
