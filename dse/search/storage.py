"""Where studies live: ``studies/<study>/`` and the Optuna storage behind it.

Default storage is Optuna's journal file (embedded, no server, safe for several local
processes, read directly by optuna-dashboard); an RDB URL (``sqlite:///...``,
``postgresql://...``) from the spec or ``--storage`` overrides it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import time
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import JournalStorage, RDBStorage

from dse.errors import StorageError, StudyNotFoundError
from dse.search import optuna_private, optuna_private_rdb
from dse.search.journal_file import JournalFileStorage
from dse.search.rdb_storage import BatchedRDBStorage
from dse.search.storage_reach import hide_password
from dse.spec.messages import choices_text, did_you_mean, shorten
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


def storage_url(name: str, url: str | None, *, journal_outside_studies: bool = False) -> str:
    """The storage URL actually used: explicit (checked by :func:`storage_problem`), or the
    study's journal file.

    Relative file paths (``sqlite:///x.db``, ``journal:x.log``) are made absolute, so the URL
    recorded in spec.lock.yaml works from any working directory.
    """
    if not url:
        return f"journal:{study_dir(name, create=True) / JOURNAL_FILE}"
    url = absolute_url(url)
    problem = storage_problem(url, journal_outside_studies=journal_outside_studies)
    if problem:
        raise StorageError(f"storage {shorten(url, 200)!r}: {problem}")
    return url


def absolute_url(url: str) -> str:
    """``url`` with a relative file path (sqlite, journal) made absolute."""
    for prefix in ("sqlite:///", "journal:"):
        if url.startswith(prefix):
            path = url.removeprefix(prefix)
            if path and not path.startswith("/") and path != ":memory:":
                return prefix + str(Path(path).resolve())
    return url


_FORMS = "journal:PATH, sqlite:///PATH or postgresql://USER@HOST/DB"
_SQLITE_MAGIC = b"SQLite format 3\x00"


def _file_target_problem(path: Path, *, what: str, looks_right: Callable[[bytes], bool]) -> str:
    """Why a storage file cannot be used: a folder, another kind of file, not writable."""
    if path.is_dir():
        return f"{path} is a folder, not a {what} file"
    if path.exists():
        if not path.is_file():
            return f"{path} is not a regular file"
        with path.open("rb") as f:
            head = f.read(4096)
        if head and not looks_right(head):
            return f"{path} exists and is not {what} file (refusing to write into it)"
        if not os.access(path, os.W_OK):
            return f"{path} is not writable"
        return ""
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"cannot create {path}: {parent} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot create {path}: {parent} is not writable"
    return ""


def _is_journal(head: bytes) -> bool:
    first = head.split(b"\n", 1)[0]
    try:
        record = json.loads(first)
    except ValueError:
        return False
    return isinstance(record, dict) and "op_code" in record


def storage_problem(url: str, *, journal_outside_studies: bool = False) -> str:
    """Why ``url`` (absolute, see :func:`absolute_url`) cannot hold a study; ``""`` if it can.

    Checks the form and scheme without connecting, and that a file target is writable and not
    some other file. A journal file must lie in the studies folder unless
    ``journal_outside_studies`` allows it, so a typo never appends to an unrelated file.
    """
    if url.startswith("journal:"):
        path_text = url.removeprefix("journal:")
        if not path_text.strip():
            return "journal: needs a file path (journal:PATH)"
        path = Path(path_text).resolve()
        root = studies_root()
        if not journal_outside_studies and not path.is_relative_to(root):
            return (
                f"the journal file is outside the studies folder {root} (move it there, or set "
                "'journal_outside_studies: true' in the spec to allow it)"
            )
        return _file_target_problem(path, what="an Optuna journal", looks_right=_is_journal)
    from dse.search.storage_plugin import backend_for, is_plugin_url

    if is_plugin_url(url):
        backend = backend_for(url)
        if backend is None:
            return unknown_scheme(url)
        return backend.problem(url) if backend.problem is not None else ""
    if "://" not in url:
        return unknown_scheme(url)
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        return f"malformed URL ({exc}; expected {_FORMS})"
    try:
        dialect = parsed.get_dialect()
    except NoSuchModuleError:
        return f"unknown scheme {parsed.drivername!r} (expected {_FORMS})"
    try:
        dialect.import_dbapi()
    except ImportError as exc:
        return f"the driver for {parsed.drivername!r} is not installed ({exc})"
    if parsed.get_backend_name() == "sqlite":
        db = parsed.database
        if not db or db == ":memory:":
            return "an in-memory database keeps nothing; give a file (sqlite:///PATH)"
        return _file_target_problem(
            Path(db), what="an SQLite", looks_right=lambda h: h.startswith(_SQLITE_MAGIC)
        )
    return ""


def claim_lock(storage: optuna.storages.BaseStorage, study_id: int) -> AbstractContextManager[Any]:
    """The storage's lock for counting and creating trials (none where it offers none)."""
    lock = getattr(optuna_private.uncached(storage), "claim_lock", None)
    return lock(study_id) if lock is not None else contextlib.nullcontext()


def has_claim_lock(storage: optuna.storages.BaseStorage) -> bool:
    return getattr(optuna_private.uncached(storage), "claim_lock", None) is not None


def batched(storage: optuna.storages.BaseStorage) -> AbstractContextManager[Any]:
    """Reads from memory and writes held until the end, where the storage can do that."""
    batch = getattr(storage, "batch", None)
    return batch() if batch is not None else contextlib.nullcontext()


def flush(storage: optuna.storages.BaseStorage) -> None:
    """Write what a batch holds so far (other workers then see it)."""
    fn = getattr(storage, "flush", None)
    if fn is not None:
        fn()


def sync(storage: optuna.storages.BaseStorage, study_id: int) -> None:
    """Read what other workers changed, where the storage keeps a copy in memory."""
    fn = getattr(storage, "sync", None)
    if fn is not None:
        fn(study_id)


#: RDB heartbeat defaults: a worker records one every HEARTBEAT_S while it evaluates a trial;
#: a RUNNING trial silent for GRACE_S is taken as abandoned and re-queued.
HEARTBEAT_S = 10
GRACE_S = 60


def open_storage(
    url: str, *, heartbeat_s: int | None = None, grace_s: int | None = None
) -> optuna.storages.BaseStorage:
    """Open an Optuna storage from a URL through its backend (:mod:`dse.search.storage_plugin`:
    ``journal:PATH``, ``sqlite:///PATH``, ``postgresql://...``, or a plug-in's scheme).

    Storages with heartbeats get one when ``heartbeat_s`` is given (the runner's workers do).
    """
    from dse.search.storage_plugin import backend_for

    backend = backend_for(url)
    if backend is None:
        raise StorageError(f"storage {shorten(url, 200)!r}: {unknown_scheme(url)}")
    storage = backend.open(url, heartbeat_s=heartbeat_s, grace_s=grace_s)
    if not isinstance(storage, optuna.storages.BaseStorage):
        raise StorageError(
            f"storage backend {backend.origin} opened a {type(storage).__name__}, "
            "not an Optuna storage"
        )
    return storage


def unknown_scheme(url: str) -> str:
    from dse.search.storage_plugin import installed

    names = sorted(installed())
    return (
        f"not a storage URL (expected {_FORMS}, or a plug-in's scheme: "
        f"{choices_text(names) or 'none installed'}, or py:MODULE:FACTORY:...)"
    )


def open_journal(
    url: str, *, heartbeat_s: int | None = None, grace_s: int | None = None
) -> JournalFileStorage:
    """``journal:PATH``: Optuna's journal file (no heartbeat: owners are host:pid tags)."""
    path = url.removeprefix("journal:")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    try:
        return JournalFileStorage(path)  # replays every record: damage anywhere surfaces here
    except OSError:
        raise  # the file itself (permissions, a full disk), not its records
    except Exception as exc:  # noqa: BLE001 - Optuna's replay raises whatever a bad line causes
        from dse.search.journal_lines import damaged_error

        raise damaged_error(Path(path), exc) from exc


def open_rdb(
    url: str, *, heartbeat_s: int | None = None, grace_s: int | None = None
) -> optuna.storages.BaseStorage:
    """An SQLAlchemy URL: PostgreSQL and SQLite behind :class:`BatchedRDBStorage`, others
    (MySQL) as Optuna's own RDB storage."""
    kwargs: dict[str, Any] = {}
    if heartbeat_s:
        kwargs = {"heartbeat_interval": heartbeat_s, "grace_period": grace_s or 2 * heartbeat_s}
    bulk = url.startswith(("postgresql", "sqlite"))
    if bulk and url.startswith("postgresql"):
        # One worker is one thread plus its heartbeat thread (and the claim lock's connection).
        kwargs["engine_kwargs"] = {"pool_size": 3, "max_overflow": 4}
    for attempt in range(5):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                backend = RDBStorage(url, **kwargs)
            return BatchedRDBStorage(backend) if bulk else backend
        except Exception as exc:
            # Workers starting together on an empty database race to create Optuna's tables;
            # the losers see duplicate-type/table errors, and a retry finds the tables made.
            if "already exists" in str(exc) and attempt < 4:
                time.sleep(0.2 * (attempt + 1))
                continue
            why = str(getattr(exc, "orig", None) or exc).strip().splitlines() or [""]
            raise StorageError(  # one line, no password (SQLAlchemy adds a help link)
                f"cannot open storage {hide_password(url)!r}: {type(exc).__name__}: {why[0]}"
            ) from None
    raise AssertionError("unreachable")


def set_trials_user_attrs(
    storage: optuna.storages.BaseStorage, attrs_by_trial: dict[int, dict[str, Any]]
) -> None:
    """The user attributes of a batch of trials: one journal append for all of them (one lock,
    one fsync), else one write per trial. If a trial of the batch was finished meanwhile (a
    late heartbeat), the rest are still written and UpdateFinishedTrialError is raised after."""
    backend = optuna_private.uncached(storage)
    if isinstance(backend, BatchedRDBStorage):
        with backend.batch():
            for trial_id, attrs in attrs_by_trial.items():
                for k, v in attrs.items():
                    backend.set_trial_user_attr(trial_id, k, v)
        return
    if isinstance(backend, JournalStorage) and len(attrs_by_trial) > 1:
        optuna_private.journal_set_user_attrs(backend, attrs_by_trial)
        return
    error = None
    for trial_id, attrs in attrs_by_trial.items():
        try:
            set_trial_user_attrs(storage, trial_id, attrs)
        except UpdateFinishedTrialError as exc:
            error = exc
    if error is not None:
        raise error


def set_trial_user_attrs(
    storage: optuna.storages.BaseStorage, trial_id: int, attrs: dict[str, Any]
) -> None:
    """Store many user attributes of one trial in one write (one journal append or one
    transaction) instead of one per key, so concurrent workers do not queue on the storage."""
    backend = optuna_private.uncached(storage)  # Optuna's cache in front of an RDB storage
    if isinstance(backend, JournalStorage):
        optuna_private.journal_set_user_attrs(backend, {trial_id: attrs})
        return
    if isinstance(backend, BatchedRDBStorage):
        set_trials_user_attrs(backend, {trial_id: attrs})
        return
    if isinstance(backend, RDBStorage):
        optuna_private_rdb.rdb_set_user_attrs(backend, trial_id, attrs)
        return
    for k, v in attrs.items():
        storage.set_trial_user_attr(trial_id, k, v)
