"""A real, throwaway PostgreSQL server for tests and benchmarks.

``initdb`` + ``pg_ctl`` in a temporary directory, listening on 127.0.0.1 at a free port, stopped
and deleted afterwards. PostgreSQL refuses to run as root, so under root the cluster belongs to
the ``postgres`` system user (Debian's package creates it) and its commands run through
``runuser``. Import the fixtures from ``tests/conftest.py``.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.components import require_component

__all__ = ["PostgresServer", "postgres_server", "postgres_url"]


def _bindir() -> Path:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    which = shutil.which("initdb") or shutil.which("pg_ctl")
    if which:
        return Path(which).parent
    raise RuntimeError(
        "PostgreSQL server binaries not found (apt-get install postgresql; .ci/run does it)"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One PostgreSQL cluster in a temporary directory; ``url(db)`` names a database on it."""

    def __init__(self, *, fsync: bool = False) -> None:
        self.bindir = _bindir()
        self.fsync = fsync
        self.root = Path(tempfile.mkdtemp(prefix="dse-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.user = "dse"
        self._as_postgres = os.geteuid() == 0
        self._names = itertools.count()

    def _cmd(self, *args: str) -> list[str]:
        prefix = ["runuser", "-u", "postgres", "--"] if self._as_postgres else []
        return [*prefix, *args]

    def _run(self, *args: str) -> None:
        res = subprocess.run(self._cmd(*args), capture_output=True, text=True, timeout=120)
        if res.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(args)} failed: {res.stdout}{res.stderr}{tail}")

    def start(self) -> PostgresServer:
        if self._as_postgres:
            shutil.chown(self.root, "postgres")
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            self.user,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        return self.resume()

    def pause(self) -> None:
        """Stop the server (its clients see the connection closed), keeping its data."""
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def resume(self) -> PostgresServer:
        """Start the server (again) on its port."""
        opts = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
            f"-c max_connections=200 -c fsync={'on' if self.fsync else 'off'}"
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            opts,
            "-l",
            str(self.root / "server.log"),
            "-w",
            "-t",
            "60",
            "start",
        )
        return self

    def create_database(self, name: str | None = None) -> str:
        """A fresh, empty database; returns its SQLAlchemy URL."""
        name = name or f"db{next(self._names)}"
        self._run(
            str(self.bindir / "createdb"),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            self.user,
            name,
        )
        return self.url(name)

    def url(self, db: str) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{db}"

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():  # not paused
                self._run(
                    str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"
                )
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the whole test session."""
    try:
        server = PostgresServer()
    except RuntimeError:
        require_component("PostgreSQL server", "apt-get install postgresql")
        raise
    with server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """A fresh database on the session's PostgreSQL server."""
    return postgres_server.create_database()
