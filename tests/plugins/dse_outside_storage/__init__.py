"""A storage backend from outside litegpu-dse: Optuna's plain journal file, served under the
scheme ``outside:PATH`` (registered in ``dse.storages``) or by import path
``py:dse_outside_storage:BACKEND:PATH``. It has no heartbeat, the least a storage can offer
(the engine then finds dead owners by tag)."""

from __future__ import annotations

from pathlib import Path

from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

from dse.search.storage import StorageBackend


def _path(url: str) -> Path:
    return Path(url.split(":", 3)[3] if url.startswith("py:") else url.split(":", 1)[1])


def open_outside(
    url: str, *, heartbeat_s: int | None = None, grace_s: int | None = None
) -> JournalStorage:
    return JournalStorage(JournalFileBackend(str(_path(url))))


def problem(url: str) -> str:
    path = _path(url)
    if not path.is_absolute():
        return f"outside: needs an absolute path, got {str(path)!r}"
    if not path.parent.is_dir():
        return f"{path.parent} is not a folder"
    return ""


BACKEND = StorageBackend(open=open_outside, problem=problem)
