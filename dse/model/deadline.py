"""Calling a function with a deadline that holds even when it hangs inside C code.

``DeadlineCaller`` keeps one forked child process that serves calls over a pipe; past the
deadline the child is killed (SIGKILL) and the next call forks a fresh one. A thread or an
alarm signal cannot stop a function that holds the GIL (``9 ** 9 ** 9 ** 9``); a process can.
The child dies with its parent (Linux ``PR_SET_PDEATHSIG``) and ignores Ctrl-C, which the
parent handles.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any


class DeadlineExceeded(Exception):
    """The call ran past its deadline; its child process was killed."""


class CallFailed(Exception):
    """The call raised in the child (message ``Type: text``) or the child died."""


def _die_with_parent() -> None:
    """Linux: the kernel kills this child when its parent dies (no orphaned hung call)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)


def _serve(conn: Connection, fn: Callable[[Any], Any], parent: int) -> None:
    """Child loop: answer each request with ``fn``'s result until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
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
            reply = ("error", f"{type(exc).__name__}: {exc}")
        try:
            conn.send(reply)
        except Exception as exc:  # noqa: BLE001 - an unpicklable result
            conn.send(("error", f"the result cannot be sent back: {exc}"))


class DeadlineCaller:
    """``fn(arg)`` in a persistent forked child, killed and replaced past ``timeout_s``."""

    def __init__(self, fn: Callable[[Any], Any], timeout_s: float) -> None:
        self.fn = fn
        self.timeout_s = timeout_s
        self._proc: Any = None
        self._conn: Connection | None = None

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

    def __call__(self, arg: Any) -> Any:
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
            raise CallFailed(value)
        return value

    def close(self) -> None:
        """Stop the child (SIGKILL: a hung call ignores anything gentler)."""
        conn, proc, self._conn, self._proc = self._conn, self._proc, None, None
        if conn is not None:
            conn.close()
        if proc is not None:
            if proc.is_alive():
                proc.kill()
            proc.join(timeout=5)

    def __enter__(self) -> DeadlineCaller:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def call_with_deadline(fn: Callable[[Any], Any], arg: Any, timeout_s: float | None) -> Any:
    """``fn(arg)``; in a child bounded by ``timeout_s`` when one is given."""
    if timeout_s is None:
        return fn(arg)
    with DeadlineCaller(fn, timeout_s) as caller:
        return caller(arg)
