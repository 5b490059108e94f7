from __future__ import annotations

import pytest

from tests.components import require_component


def test_missing_component_skips_outside_ci_with_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install chromium"):
        require_component("Chromium", "apt-get install chromium")


def test_missing_component_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run this test"):
        require_component("PostgreSQL server", "apt-get install postgresql")
