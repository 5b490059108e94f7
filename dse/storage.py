"""Where studies live: ``studies/<study>/`` and the Optuna storage behind it.

Default storage is Optuna's journal file (embedded, no server, safe for several local
processes, read directly by optuna-dashboard); an RDB URL (``sqlite:///...``,
``postgresql://...``) from the spec or ``--storage`` overrides it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import optuna
from optuna.storages import JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

from dse.errors import StorageError, StudyNotFoundError, choices_text, did_you_mean
from dse.spec import STUDY_NAME_PATTERN

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
        path.mkdir(parents=True, exist_ok=True)
    return path


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


def storage_url(name: str, url: str | None) -> str:
    """The storage URL actually used: explicit, or the study's journal file."""
    if url:
        return url
    return f"journal:{study_dir(name, create=True) / JOURNAL_FILE}"


def open_storage(url: str, *, heartbeat_s: int | None = None) -> optuna.storages.BaseStorage:
    """Open an Optuna storage from a URL; ``journal:PATH`` names a journal file."""
    if url.startswith("journal:"):
        path = url.removeprefix("journal:")
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(path, lock_obj=JournalFileOpenLock(path)))
    if "://" not in url:
        raise StorageError(
            f"storage {url!r} is not a URL (expected journal:PATH, sqlite:///PATH or "
            "postgresql://USER@HOST/DB)"
        )
    try:
        kwargs = {"heartbeat_interval": heartbeat_s} if heartbeat_s else {}
        return RDBStorage(url, **kwargs)
    except Exception as exc:
        raise StorageError(f"cannot open storage {url!r}: {type(exc).__name__}: {exc}") from None
