"""The user guide and the API reference (built from the docstrings by mkdocstrings) build with
warnings as errors: a broken link, a missing page in the nav or a docstring reference to
something that no longer exists fails CI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_mkdocs_builds_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    res = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    api = (site / "api" / "dse-api" / "index.html").read_text()
    # The reference is generated from the code, not written by hand.
    assert "trials is the study" in api.replace("<code>", "").replace("</code>", "")
    assert "check_evaluator" in (site / "api" / "testing" / "index.html").read_text()
    assert "evaluate_cost" in (site / "api" / "objectives" / "index.html").read_text()
    assert (site / "search" / "index.html").is_file()


def test_cli_reference_page_is_current() -> None:
    """docs/cli.md is generated from the typer app: every command and option, as --help."""
    from dse.cli.reference import reference

    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert page == reference(), "regenerate: python -m dse.cli.reference > docs/cli.md"
    for command in ("run", "evaluate", "compare", "sweep", "sensitivity", "report", "status"):
        assert f"### `dse {command}`" in page
    assert "`--format <table|csv|json>`" in page.replace("\\|", "|")
