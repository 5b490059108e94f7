"""A study's storage from its URL: which URLs name one, why one cannot hold a study, and
opening it.

Default storage is Optuna's journal file (embedded, no server, safe for several local
processes, read directly by optuna-dashboard); an RDB URL (``sqlite:///...``,
``postgresql://...``), a gRPC storage proxy (``grpc://HOST:PORT``) or a plug-in's URL from the
spec or ``--storage`` overrides it. The contract a storage meets is docs/storage.md.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import JournalStorage

from dse.errors import StorageError
from dse.search import optuna_private
from dse.search.storage._journal_file import RepairingJournalFileBackend
from dse.search.storage._layout import JOURNAL_FILE, studies_root, study_dir
from dse.search.storage._plugin import backend_for, installed, is_plugin_url, register_builtin
from dse.search.storage._rdb import RetryingRDBStorage
from dse.search.storage._reach import hide_password
from dse.spec.messages import choices_text, shorten


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


_FORMS = "journal:PATH, sqlite:///PATH, postgresql://USER@HOST/DB or grpc://HOST:PORT"
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

    if url.startswith("grpc://"):
        return _grpc_problem(url)
    if is_plugin_url(url):
        backend = backend_for(url)
        if backend is None:
            return unknown_scheme(url)
        return backend.problem(url) if backend.problem is not None else ""
    if "://" not in url:
        return unknown_scheme(url)
    from sqlalchemy import exc as sa_exc
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except (sa_exc.ArgumentError, ValueError) as exc:
        return f"malformed URL ({exc}; expected {_FORMS})"
    try:
        dialect = parsed.get_dialect()
    except sa_exc.NoSuchModuleError:
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


def _grpc_address(url: str) -> tuple[str, int] | None:
    host, _, port = url.removeprefix("grpc://").rstrip("/").rpartition(":")
    return (host, int(port)) if host and port.isdigit() and 0 < int(port) < 65536 else None


def _grpc_problem(url: str) -> str:
    if _grpc_address(url) is None:
        return "a gRPC storage proxy is grpc://HOST:PORT (optuna.storages.run_grpc_proxy_server)"
    try:
        import grpc  # noqa: F401
    except ImportError:
        return "the gRPC storage proxy needs grpcio (pip install 'litegpu-dse[grpc]')"
    return ""


#: RDB heartbeat defaults: a worker records one every HEARTBEAT_S while it evaluates a trial;
#: a RUNNING trial silent for GRACE_S is taken as abandoned and re-queued.
HEARTBEAT_S = 10
GRACE_S = 60


def open_storage(
    url: str, *, heartbeat_s: int | None = None, grace_s: int | None = None
) -> optuna.storages.BaseStorage:
    """Open an Optuna storage from a URL: ``journal:PATH``, an SQLAlchemy URL,
    ``grpc://HOST:PORT``, or a plug-in's (:mod:`dse.search.storage._plugin`).

    Storages with heartbeats get one when ``heartbeat_s`` is given (the runner's workers do).
    """

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

    names = sorted(installed())
    return (
        f"not a storage URL (expected {_FORMS}, or a plug-in's scheme: "
        f"{choices_text(names) or 'none installed'}, or py:MODULE:FACTORY:...)"
    )


def open_journal(
    url: str, *, heartbeat_s: int | None = None, grace_s: int | None = None
) -> JournalStorage:
    """``journal:PATH``: Optuna's journal file (no heartbeat: owners are host:pid tags)."""
    path = url.removeprefix("journal:")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    try:
        # Replays every record: damage anywhere surfaces here.
        return JournalStorage(RepairingJournalFileBackend(path))
    except OSError:
        raise  # the file itself (permissions, a full disk), not its records
    except Exception as exc:  # noqa: BLE001 - Optuna's replay raises whatever a bad line causes
        from dse.search.storage.journal import damaged_error

        raise damaged_error(Path(path), exc) from exc


def open_rdb(
    url: str, *, heartbeat_s: int | None = None, grace_s: int | None = None
) -> optuna.storages.BaseStorage:
    """An SQLAlchemy URL: Optuna's RDB storage with a bounded wait for a lost server
    (:mod:`dse.search.storage._rdb`)."""
    kwargs: dict[str, Any] = {}
    if heartbeat_s:
        kwargs = {"heartbeat_interval": heartbeat_s, "grace_period": grace_s or 2 * heartbeat_s}
    # A dead pooled connection is found before use, and the retried connect waits for the server.
    kwargs["engine_kwargs"] = {"pool_pre_ping": True}
    for attempt in range(5):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return RetryingRDBStorage(url, **kwargs)
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


def open_grpc(
    url: str, *, heartbeat_s: int | None = None, grace_s: int | None = None
) -> optuna.storages.BaseStorage:
    """``grpc://HOST:PORT``: a client of Optuna's gRPC storage proxy
    (``optuna.storages.run_grpc_proxy_server`` in front of an RDB storage). It has no
    heartbeat: dead owners are found by their tag."""
    address = _grpc_address(url)
    if address is None:
        raise StorageError(f"storage {url!r}: {_grpc_problem(url)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.storages.GrpcStorageProxy(host=address[0], port=address[1])


def set_trials_user_attrs(
    storage: optuna.storages.BaseStorage, attrs_by_trial: dict[int, dict[str, Any]]
) -> None:
    """The user attributes of a batch of trials: one journal append for all of them (one lock,
    one fsync), else one write per attribute. If a trial of the batch was finished meanwhile (a
    late heartbeat), the rest are still written and UpdateFinishedTrialError is raised after."""
    if isinstance(storage, JournalStorage):  # Optuna's trial cache fronts RDB storages only
        optuna_private.journal_set_user_attrs(storage, attrs_by_trial)
        return
    error = None
    for trial_id, attrs in attrs_by_trial.items():
        try:
            for k, v in attrs.items():
                storage.set_trial_user_attr(trial_id, k, v)
        except UpdateFinishedTrialError as exc:
            error = exc
    if error is not None:
        raise error


register_builtin("journal", open_journal)
register_builtin("grpc", open_grpc)
register_builtin("rdb", open_rdb)
