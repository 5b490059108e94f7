"""Real components some tests need (headless Chromium, a PostgreSQL server).

Outside CI a missing component skips its tests with the command that installs it, so the README's
test command passes on a bare machine. In CI (``CI=true``) a missing component fails them instead:
``.ci/run`` installs both, and CI must keep testing the real thing rather than skip it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

__all__ = ["chromium_path", "in_ci", "require_component"]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def require_component(what: str, install: str) -> None:
    """Skip (outside CI) or fail (in CI) a test whose real component ``what`` is missing."""
    message = f"{what} is not installed here; install it with `{install}` (.ci/run does)"
    if in_ci():
        pytest.fail(f"{message}; CI must run this test against the real component")
    pytest.skip(message)


def chromium_path() -> Path:
    """Debian's Chromium binary, or skip/fail with the install command."""
    for candidate in ("chromium", "chromium-browser"):
        found = shutil.which(candidate)
        if found:
            return Path(found)
    require_component("Chromium", "apt-get install chromium")
    raise AssertionError("unreachable")
