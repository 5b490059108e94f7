"""Storages are plug-ins (issue 29, item 1; one URL-factory contract, docs/storage.md): the
built-ins pass ``dse.testing.check_storage``, and a storage from a
package outside litegpu-dse (tests/plugins, on PYTHONPATH) runs studies end to end."""

from __future__ import annotations

import sys
from pathlib import Path

import optuna
import pytest

from dse.errors import ConformanceError
from dse.search.storage import backend_for
from dse.testing import check_storage

ROOT = Path(__file__).resolve().parents[3]
PLUGINS = ROOT / "tests" / "plugins"


def test_the_builtin_schemes_are_served_by_the_same_factory_contract() -> None:
    """journal, SQLAlchemy URLs and grpc are served directly (an install's stale entry points
    cannot shadow them); an unknown scheme is served by nothing."""
    for url in ("journal:/x/y.log", "sqlite:////x/y.db", "postgresql://u@h/db", "grpc://h:1"):
        backend = backend_for(url)
        assert backend is not None and backend.origin.startswith("dse.search.storage"), url
    assert backend_for("no-such-scheme:/x") is None


@pytest.mark.slow
def test_every_builtin_storage_passes_the_conformance_check(
    tmp_path: Path, studies_dir: Path, postgres_url: str
) -> None:
    check_storage(f"journal:{tmp_path / 'j.log'}")
    check_storage(f"sqlite:///{tmp_path / 's.db'}")
    check_storage(postgres_url)


def test_the_check_names_a_broken_rule(tmp_path: Path, studies_dir: Path) -> None:
    url = f"journal:{tmp_path / 'used.log'}"
    check_storage(url)
    with pytest.raises(optuna.exceptions.DuplicatedStudyError):
        check_storage(url)  # not a fresh location
    with pytest.raises(ConformanceError, match="no storage backend serves"):
        check_storage("nowhere:/x")


def test_an_outside_storage_by_import_path_passes_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(PLUGINS))
    check_storage(f"py:dse_outside_storage:BACKEND:{tmp_path / 'o.log'}")
    sys.modules.pop("dse_outside_storage", None)


def test_a_grpc_url_needs_host_and_port(studies_dir: Path) -> None:
    from dse.search.storage import storage_problem

    assert "grpc://HOST:PORT" in storage_problem("grpc://nohost")
    assert "grpc://HOST:PORT" in storage_problem("grpc://h:99999")
