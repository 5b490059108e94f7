"""Where studies live: ``studies/<study>/``, confined to the studies folder whatever a study's
name says."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from dse.errors import StorageError, StudyNotFoundError
from dse.spec.messages import choices_text, did_you_mean
from dse.spec.schema import STUDY_NAME_PATTERN

JOURNAL_FILE = "journal.log"


def studies_root() -> Path:
    """``$DSE_STUDIES_DIR`` or ``./studies``."""
    return Path(os.environ.get("DSE_STUDIES_DIR", "studies")).resolve()


def study_dir(name: str, *, create: bool = False) -> Path:
    """The study's folder, confined to the studies root whatever the name says."""
    if not re.match(STUDY_NAME_PATTERN, name) or name in (".", ".."):
        raise StorageError(f"invalid study name {name!r} (letters, digits, '.', '_', '-')")
    root = studies_root()
    path = (root / name).resolve()
    if path.parent != root:
        raise StorageError(f"study name {name!r} escapes {root}")
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if exc.errno not in _NOT_A_PLACE_FOR_STUDIES:
                raise  # a full or read-only disk: exit 1, like any other write
            raise _cannot_create(path, exc.strerror) from None
    return path


def check_study_dir(name: str) -> None:
    """Raise what ``study_dir(name, create=True)`` would for a studies folder where no study
    folder can be made, without making anything (``dse sweep`` says its plan first)."""
    path = study_dir(name)
    place = path
    while not place.exists() and place != place.parent:  # the nearest existing ancestor
        place = place.parent
    if place == path and path.is_dir():
        return
    if not place.is_dir():
        raise _cannot_create(path, f"{place} is not a folder")
    if not os.access(place, os.W_OK | os.X_OK):
        raise _cannot_create(path, f"{place} is not writable")


def _cannot_create(path: Path, why: str | None) -> StorageError:
    return StorageError(
        f"cannot create the study folder {path}: {why} (the studies folder is "
        "$DSE_STUDIES_DIR or ./studies)"
    )


#: Why a study folder cannot be made where the studies folder points (``/proc/self``, a path
#: through a file, a folder of someone else's): the setting is wrong, not the disk.
_NOT_A_PLACE_FOR_STUDIES = {
    errno.ENOENT,
    errno.ENOTDIR,
    errno.EACCES,
    errno.EPERM,
    errno.ELOOP,
    errno.ENAMETOOLONG,
}


def existing_study_dir(name: str) -> Path:
    path = study_dir(name)
    if not path.is_dir():
        root = studies_root()
        known = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
        raise StudyNotFoundError(
            f"no study {name!r} under {root} ({did_you_mean(name, known)}"
            f"recorded studies: {choices_text(known) or 'none'})"
        )
    return path
