from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.postgres import postgres_server, postgres_url  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
SPACES = ROOT / "spaces"


@pytest.fixture
def studies_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private studies/ root so tests never touch the repository's."""
    d = tmp_path / "studies"
    d.mkdir()
    monkeypatch.setenv("DSE_STUDIES_DIR", str(d))
    return d


def run_dse(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the real `dse` console script in a subprocess."""
    full_env = {**os.environ, **(env or {})}
    exe = Path(sys.executable).parent / "dse"
    return subprocess.run(
        [str(exe), *args],
        cwd=cwd or ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
