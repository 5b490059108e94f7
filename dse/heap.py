"""Keep freed numpy temporaries in the process heap instead of handing them back (glibc).

A vectorized evaluation makes hundreds of short-lived arrays of 0.1-30 MB. By default glibc
serves blocks that large with ``mmap`` and unmaps them on free, or trims the heap top once
twice the last such block is free there, so the next array is fresh memory: a page fault and
zero fill per 4 KiB, about a sixth of the evaluators' time on distinct designs (measured on
the shipped example spec; ``benchmarks/RESULTS.md``). Serving blocks up to 32 MiB from the heap
and trimming only past 256 MiB free reuses that memory: the peak is the same, at most 256 MiB
of freed memory is kept. A process-wide setting, so it is never done on import: the ``dse``
command calls :func:`keep_freed_arrays` in its own processes (and its workers), a script or
notebook may call it explicitly. Nothing is changed where the C library has no ``mallopt``
(macOS, Windows) or when the user set glibc's malloc environment variables (``MALLOC_*_``,
``GLIBC_TUNABLES``) or ``DSE_KEEP_MALLOC``.
"""

from __future__ import annotations

import ctypes
import os
import sys

_M_TRIM_THRESHOLD = -1  # glibc <malloc.h>
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's upper bound for its own dynamic threshold
_TRIM_THRESHOLD_BYTES = 256 << 20

_USER_SET = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
             "GLIBC_TUNABLES", "DSE_KEEP_MALLOC")  # fmt: skip


def keep_freed_arrays() -> bool:
    """Set glibc's mmap and trim thresholds (see the module docstring); True if set."""
    if not sys.platform.startswith("linux") or any(k in os.environ for k in _USER_SET):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(
        mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)
        and mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD_BYTES)
    )
