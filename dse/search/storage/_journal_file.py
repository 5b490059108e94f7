"""Optuna's journal file made safe for dse's workers: a lock the kernel releases when its
holder dies, and torn tails cut off before each append."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from typing import Any

from optuna.storages.journal import JournalFileBackend


@contextlib.contextmanager
def flocked(path: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) while the block runs; the
    kernel releases it if the holder dies."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


#: Where a torn journal tail goes when it is cut off (kept for inspection, never replayed).
TORN_SUFFIX = ".torn"


def _cut_torn_tail(fd: int, path: str) -> int:
    """Cut a last line with no newline (a write cut short by a full disk or a kill; never
    acknowledged to its writer) off the journal; return the journal's size."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    cut, pos = 0, size
    while pos > 0:
        start = max(0, pos - 65536)
        chunk = os.pread(fd, pos - start, start)
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            cut = start + nl + 1
            break
        pos = start
    torn = os.pread(fd, size - cut, cut)
    with contextlib.suppress(OSError), open(path + TORN_SUFFIX, "ab") as f:
        f.write(torn + b"\n")
    os.ftruncate(fd, cut)
    return cut


class RepairingJournalFileBackend(JournalFileBackend):
    """Optuna's journal file, made safe against torn writes.

    Before each append (under the journal lock) a torn last line is cut off, so the next
    record never glues onto half of one (which made every later read fail with
    ``JSONDecodeError``); an append that fails (disk full, read-only) is rolled back to the
    previous size, so the journal stays a sequence of whole lines. Readers already skip a
    torn last line. The journal lock is a ``flock`` (:func:`flocked`), which the kernel
    releases when its holder dies: Optuna's lock files stall every other worker for a 30 s
    grace period after a ``kill -9``.
    """

    def __init__(self, path: str) -> None:
        super().__init__(path)  # Optuna's own lock is used by its append_logs only, never here
        self._dse_path = path

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        data = ("\n".join(json.dumps(log, separators=(",", ":")) for log in logs) + "\n").encode()
        with flocked(self._dse_path + ".flock"):
            fd = os.open(self._dse_path, os.O_RDWR | os.O_APPEND)
            try:
                end = _cut_torn_tail(fd, self._dse_path)
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                    os.fsync(fd)
                except OSError as exc:
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, end)
                    raise OSError(exc.errno, exc.strerror, self._dse_path) from None
            finally:
                os.close(fd)
