"""An evaluator's ``os._exit`` fails its design instead of ending the run.

Without ``search.trial_timeout_s`` evaluators run in the run's own process (a child process per
call would cost each design a round trip), where ``os._exit``, unlike ``sys.exit``, ends the
process at once: no exception, no records, no message, only the model's exit code. While
evaluator code runs, :func:`exit_raises` makes ``os._exit`` raise :class:`ExitCalled` instead,
which fails the design like any other error. Only in the process that entered it: a process the
model forks meanwhile exits for real. Exits below Python (C ``_exit``, ``abort``, a crash) are out
of its reach; ``trial_timeout_s`` runs each design in a child process that may die.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import NoReturn

_LOCK = threading.Lock()
_REAL_EXIT = os._exit
_depth = 0
_owner: int | None = None  # the pid whose os._exit raises


class ExitCalled(BaseException):
    """Evaluator code called ``os._exit(code)`` (a BaseException: it must not be taken for an
    ordinary error by the model's own ``except Exception``)."""

    def __init__(self, code: int) -> None:
        super().__init__(f"called os._exit({code})")
        self.code = code


def _exit(status: int) -> NoReturn:
    if os.getpid() != _owner:  # forked by the model while guarded: a real exit
        _REAL_EXIT(status)
    raise ExitCalled(status)


@contextlib.contextmanager
def exit_raises() -> Iterator[None]:
    """Inside, ``os._exit`` in this process raises :class:`ExitCalled` (nested and threaded
    entries share one patch: the last one out restores the real function)."""
    global _depth, _owner
    with _LOCK:
        _depth += 1
        if _depth == 1:
            _owner = os.getpid()
            os._exit = _exit
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0:
                os._exit = _REAL_EXIT
                _owner = None
