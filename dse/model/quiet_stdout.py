"""Evaluator code writes nothing to stdout: its ``print`` goes to stderr.

Standard output carries the tool's machine-readable answers (``--json``, ``--csv -``); a
model's progress or debug text there would corrupt them. Every call into evaluator code (the
functions, their ``resolve`` hooks, the probe) runs inside :func:`stdout_to_stderr`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """``sys.stdout`` is ``sys.stderr`` inside (Python-level writes: ``print``, logging)."""
    if sys.stdout is sys.stderr:
        yield
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield
