"""Where a storage comes from: one contract, a URL factory (docs/storage.md).

A storage plug-in is a function ``open(url, *, heartbeat_s, grace_s)`` returning an Optuna
``BaseStorage`` (optionally with a ``problem(url)`` check, the pair as a
:class:`StorageBackend`). An installed distribution registers it under the ``dse.storages``
entry-point group, named for the URL scheme it serves (``myscheme:...`` or ``myscheme://...``),
or a URL names it by import path, ``py:MODULE:ATTR:REST``. The built-in schemes (``journal``,
``grpc`` and any SQLAlchemy URL) are served by the same factories, directly.
``dse.testing.check_storage`` checks a backend against the contract.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint
from typing import Any

import optuna

from dse.errors import StorageError
from dse.plugin import import_object
from dse.spec.entry_points import installed_entry_points, load_entry_point, wrap_plugin

STORAGE_GROUP = "dse.storages"
#: The schemes dse itself serves (checked by dse.search.storage, not by a plug-in); any other
#: ``scheme://`` URL no plug-in claims is taken for an SQLAlchemy URL.
BUILTIN_SCHEMES = ("journal", "grpc", "sqlite", "postgresql", "mysql")
_EXPECTED = (
    "storage backend {origin}: expected a dse.search.storage.StorageBackend or an "
    "open(url, *, heartbeat_s, grace_s) function"
)


@dataclass(frozen=True, kw_only=True)
class StorageBackend:
    """A storage backend: ``open`` (required) and ``problem``.

    - ``open(url, *, heartbeat_s, grace_s) -> optuna.storages.BaseStorage``: the study's
      storage, as the URL (given whole) names it. Every process of a study opens it; several
      at once must be safe. ``heartbeat_s``/``grace_s`` are Optuna's heartbeat settings, for a
      storage that keeps heartbeats.
    - ``problem(url) -> str``: why the URL cannot hold a study ("" if it can), answered
      before anything is created and without writing (a missing folder, a wrong file).
    """

    open: Callable[..., optuna.storages.BaseStorage]
    problem: Callable[[str], str] | None = None
    #: Where it came from, for messages (set when it is loaded).
    origin: str = ""

    @classmethod
    def wrap(cls, obj: Any, origin: str) -> StorageBackend:
        """A :class:`StorageBackend` as it is, a plain ``open`` function wrapped."""
        return wrap_plugin(cls, obj, origin, field="open", expected=_EXPECTED, error=StorageError)


def scheme_of(url: str) -> str:
    """``journal`` of ``journal:PATH``, ``postgresql`` of ``postgresql+psycopg://...``."""
    head = url.split("://", 1)[0] if "://" in url else url.split(":", 1)[0]
    return head.split("+", 1)[0].lower()


def installed() -> dict[str, EntryPoint]:
    """The entry points of the ``dse.storages`` group by scheme (loaded on first use)."""
    return installed_entry_points(STORAGE_GROUP)


def is_plugin_url(url: str) -> bool:
    """A URL a plug-in serves (by import path, or a registered scheme dse does not own)."""
    scheme = scheme_of(url)
    return scheme == "py" or (scheme in installed() and scheme not in BUILTIN_SCHEMES)


@cache
def _from_entry_point(scheme: str) -> StorageBackend:
    loaded = load_entry_point(STORAGE_GROUP, scheme, kind="storage", error=StorageError)
    return StorageBackend.wrap(*loaded)


#: The built-in schemes' openers by scheme (``rdb``: any SQLAlchemy URL), registered by
#: ``_open`` when it is imported, so that this module never imports it back.
_BUILTIN_OPENERS: dict[str, Callable[..., Any]] = {}


def register_builtin(scheme: str, opener: Callable[..., Any]) -> None:
    """Serve ``scheme`` with ``opener`` (``_open``'s journal, gRPC and RDB openers)."""
    _BUILTIN_OPENERS[scheme] = opener


def _builtin(scheme: str) -> StorageBackend:
    opener = _BUILTIN_OPENERS.get(scheme, _BUILTIN_OPENERS["rdb"])
    return StorageBackend(open=opener, origin=f"dse.search.storage ({scheme})")


def backend_for(url: str) -> StorageBackend | None:
    """The backend serving ``url``; None when nothing does."""
    scheme = scheme_of(url)
    if scheme == "py":
        _, module, attr, *_ = [*url.split(":", 3), "", ""]
        if not module or not attr:
            raise StorageError(f"storage {url!r}: expected py:MODULE:ATTR:... (an import path)")
        return StorageBackend.wrap(import_object(f"{module}:{attr}"), f"{module}:{attr}")
    if scheme == "journal" and url.startswith("journal:"):
        return _builtin("journal")
    if scheme in BUILTIN_SCHEMES and "://" in url:
        return _builtin(scheme)
    if scheme in installed():
        return _from_entry_point(scheme)
    if "://" in url:
        return _builtin(scheme)  # any other SQLAlchemy URL: Optuna's RDB storage
    return None
