"""dse.heap keeps freed numpy temporaries in the heap (glibc): no page faults on reuse."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_FAULTS = """
import resource, sys
import numpy as np
import objectives  # noqa: F401  (no side effect on import)
from dse.heap import keep_freed_arrays
if sys.argv[1:] == ['keep']:
    keep_freed_arrays()
a, b = np.ones((32, 1)), np.ones((1, 8192))
def faults():  # an evaluator's pattern: 2 MiB temporaries made and freed in turn
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        np.maximum(a * b, a * b + 1.0)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
faults()
print(faults())
"""

linux_glibc = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.confstr("CS_GNU_LIBC_VERSION") is None,
    reason="mallopt thresholds are glibc's",
)


def _faults(*argv: str, **env: str) -> int:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_T"))}
    clean.pop("DSE_KEEP_MALLOC", None)
    out = subprocess.run(
        [sys.executable, "-c", _FAULTS, *argv],
        env={**clean, **env},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


@pytest.mark.slow
@linux_glibc
def test_reused_arrays_do_not_fault_again() -> None:
    # 5 x 3 arrays of 512 pages: most fault again under glibc's defaults, none with the setting
    assert _faults("keep") < 100
    assert _faults("keep", DSE_KEEP_MALLOC="1") > 2000


@pytest.mark.slow
@linux_glibc
def test_importing_objectives_leaves_the_allocator_alone() -> None:
    # a library import must not change the host process: glibc's defaults fault again
    assert _faults() > 2000


@linux_glibc
def test_user_malloc_settings_are_left_alone() -> None:
    from dse.heap import keep_freed_arrays

    os.environ["DSE_KEEP_MALLOC"] = "1"
    try:
        assert keep_freed_arrays() is False
    finally:
        del os.environ["DSE_KEEP_MALLOC"]
    assert keep_freed_arrays() is True
