"""Files written whole or not at all: a temporary file beside the target, then a rename.

A process killed while writing (or a full disk) leaves the previous file as it was and, at
worst, a ``.NAME.PID.tmp`` that the next writer in that folder removes.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

_TMP = re.compile(r"^\..+\.(\d+)\.[0-9a-f]{8}\.tmp$")


def pid_alive(pid: int) -> bool:
    """Whether a process of this id exists (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(directory: Path) -> None:
    """Delete temporary files left by writers that died (their pid is gone)."""
    with contextlib.suppress(OSError):
        for p in directory.iterdir():
            m = _TMP.match(p.name)
            if m and not pid_alive(int(m.group(1))):
                with contextlib.suppress(OSError):
                    p.unlink()


@contextlib.contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """A temporary path to write; on success it is flushed to disk and renamed over
    ``target``, on any error (or a kill) ``target`` keeps its previous content."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.replace(tmp, target)
        except OSError as exc:  # a folder by that name: the message names it, not the temp
            raise OSError(exc.errno, exc.strerror, str(target)) from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable
        dfd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def write_text_atomic(target: Path, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
