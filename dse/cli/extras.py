"""Optional dependencies: a command that needs an extra the install lacks says so in one line.

The core install (``pip install litegpu-dse``) runs ``dse run``, ``evaluate``, ``validate``,
``pareto``, ``compare``, ``status`` and the grid ``sweep``; the extras add the rest
(``pyproject.toml``: ``dashboard``, ``dask``, ``postgres``, ``sensitivity``, ``all``).
"""

from __future__ import annotations

import importlib.util

from dse.errors import MissingExtra

__all__ = ["MissingExtra", "require", "require_storage_driver"]


def require(extra: str, module: str, what: str) -> None:
    """Raise :class:`MissingExtra` naming the install command unless ``module`` imports."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise MissingExtra(
            f"{what} needs the optional '{extra}' dependencies ({module} is not installed): "
            f"pip install 'litegpu-dse[{extra}]'"
        )


def require_storage_driver(url: str | None) -> None:
    """A ``postgresql://`` storage needs the 'postgres' extra's driver."""
    if url and url.startswith("postgres"):
        require("postgres", "psycopg", "a postgresql:// storage")
