"""Evaluator code writes nothing to stdout: its output goes to stderr.

Standard output carries the tool's machine-readable answers (``--json``, ``--csv -``); a
model's progress or debug text there would corrupt them. Every call into evaluator code (the
functions, their ``resolve`` hooks, the probe) runs inside :func:`stdout_to_stderr`, which
redirects both levels a model can write through: ``sys.stdout`` (``print``, logging) and file
descriptor 1 itself (``os.write(1, ...)``, ``sys.__stdout__``, C extensions, child processes).

The redirection is shared: the first caller in the process installs it, the last one out
removes it, so threads evaluating at once cannot leave descriptor 1 pointing at stderr.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

_LOCK = threading.Lock()
_depth = 0
#: What the outermost entry replaced: the Python-level stream and a copy of descriptor 1.
_saved: tuple[Any, int | None] | None = None


def _flush(*streams: Any) -> None:
    for stream in streams:
        with contextlib.suppress(Exception):  # a closed or detached stream has nothing queued
            if stream is not None:
                stream.flush()


def _enter() -> None:
    global _depth, _saved
    with _LOCK:
        _depth += 1
        if _depth > 1:
            return
        _flush(sys.stdout, sys.__stdout__)  # the tool's own text stays before the model's
        fd: int | None
        try:
            fd = os.dup(1)
            os.dup2(2, 1)
        except OSError:  # descriptor 1 or 2 closed (dse >&-): nothing to protect at this level
            fd = None
        _saved = (sys.stdout, fd)
        if sys.stdout is not sys.stderr:
            sys.stdout = sys.stderr


def _leave() -> None:
    global _depth, _saved
    with _LOCK:
        _depth -= 1
        if _depth > 0 or _saved is None:
            return
        stream, fd = _saved
        _saved = None
        # What the model queued in sys.__stdout__ goes where it was written: to stderr.
        _flush(sys.stdout, sys.__stdout__)
        sys.stdout = stream
        if fd is not None:
            with contextlib.suppress(OSError):
                os.dup2(fd, 1)
            os.close(fd)


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Inside, ``sys.stdout`` is ``sys.stderr`` and descriptor 1 is a copy of descriptor 2."""
    _enter()
    try:
        yield
    finally:
        _leave()
