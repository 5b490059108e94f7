"""A study's storage: where studies live, the URL that names a study's Optuna storage, opening
it, and a journal file's checks (:mod:`dse.search.storage.journal`).

One contract for storages, a URL factory returning an Optuna ``BaseStorage``
(:class:`StorageBackend`, docs/storage.md); ``dse.testing.check_storage`` checks one. The
modules with a leading underscore are private to this package.
"""

from __future__ import annotations

from dse.search.storage._layout import (
    JOURNAL_FILE,
    check_study_dir,
    existing_study_dir,
    studies_root,
    study_dir,
)
from dse.search.storage._open import (
    GRACE_S,
    HEARTBEAT_S,
    absolute_url,
    open_storage,
    set_trials_user_attrs,
    storage_problem,
    storage_url,
    unknown_scheme,
)
from dse.search.storage._plugin import STORAGE_GROUP, StorageBackend, backend_for, installed
from dse.search.storage._reach import hide_password, reach_problem

__all__ = [
    "GRACE_S",
    "HEARTBEAT_S",
    "JOURNAL_FILE",
    "STORAGE_GROUP",
    "StorageBackend",
    "absolute_url",
    "backend_for",
    "check_study_dir",
    "existing_study_dir",
    "hide_password",
    "installed",
    "open_storage",
    "reach_problem",
    "set_trials_user_attrs",
    "storage_problem",
    "storage_url",
    "studies_root",
    "study_dir",
    "unknown_scheme",
]
