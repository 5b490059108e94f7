"""Every test here runs the commands end to end (``dse`` in a child process or in this one,
often a study): all are ``slow``, so ``pytest -m "not slow"`` is the fast unit suite."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A conftest's collection hook sees the whole session's items: mark only this folder's.
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.slow)
