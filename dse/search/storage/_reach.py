"""A storage checked for whether it can be used now (a server that answers, an SQLite file's
folder), and its URL as messages show it: never with its password (messages end up in logs).

Shared by a run's preflight and by the reading commands, which open a lock's storage."""

from __future__ import annotations

from pathlib import Path


def hide_password(url: str) -> str:
    """``url`` with any password replaced by ``***``."""
    if "://" not in url or "@" not in url:
        return url
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - a malformed URL is reported elsewhere
        return url


#: How long a run waits for a database server before saying it cannot be reached.
CONNECT_TIMEOUT_S = 10


def reach_problem(url: str) -> str:
    """Why the storage cannot be used right now, checked before anything is created: an SQLite
    file's folder must exist, a database server must accept a connection; ``""`` if fine."""
    if url.startswith(("journal:", "grpc://")) or "://" not in url:
        return ""
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        if not path.parent.is_dir():
            return f"the folder {path.parent} does not exist (create it, or give another path)"
        return _sqlite_writable(path)
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - storage_problem reports the form
        return ""
    args = (
        {"connect_timeout": CONNECT_TIMEOUT_S} if parsed.get_backend_name() == "postgresql" else {}
    )
    try:
        engine = create_engine(url, connect_args=args)
    except Exception:  # noqa: BLE001 - storage_problem reports the form
        return ""
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:  # noqa: BLE001 - the driver's words, in one line
        why = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        return f"cannot connect to the database ({why[0] if why else type(exc).__name__})"
    finally:
        engine.dispose()
    return ""


def _sqlite_writable(path: Path) -> str:
    """An SQLite file must open for reading and writing, or its folder must take a new file
    (and SQLite's journal beside it): tried with a temporary file that is removed at once, since
    permission bits say nothing for root or for folders such as /proc."""
    import tempfile

    try:
        if path.exists():
            with open(path, "r+b"):
                pass
    except OSError as exc:
        return f"cannot open {path} for writing ({exc.strerror or type(exc).__name__})"
    try:
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".dse-probe-"):
            pass
    except OSError as exc:
        return f"cannot create files in {path.parent} ({exc.strerror or type(exc).__name__})"
    return ""
