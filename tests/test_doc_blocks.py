"""Every shell command and Python snippet in the README and docs/ runs as written (issue 17).

Each ``bash``/``sh``/``python`` code block is run in a fresh folder holding a copy of
``spaces/`` (and ``studies/paper`` for the blocks that read it), with this venv's ``dse`` and
``python`` first on PATH; Python blocks of one page run in order in one interpreter, so a later
snippet may use an earlier one's names, as a reader would. A block that cannot run here says
so on the line above its fence::

    <!-- not run by tests: REASON -->

and the reason is required (installs, servers, hours of compute). Blocks without a language,
or in yaml/text, are sample output or spec excerpts and are not commands.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUNNABLE = {"bash", "sh", "python"}
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
_SKIP = re.compile(r"<!--\s*not run by tests:\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    code: str
    skip: str | None  # the reason, when the page marks the block as not run

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        line = text[: m.start()].count("\n") + 1
        above = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = _SKIP.search(above)
        out.append(Block(page, line, m.group(1), m.group(2), skip.group(1) if skip else None))
    return out


ALL = [b for p in PAGES for b in blocks(p)]
RUN = [b for b in ALL if b.lang in RUNNABLE and b.skip is None]


def test_every_skipped_block_says_why() -> None:
    skipped = [b for b in ALL if b.skip is not None]
    for b in skipped:
        assert len(b.skip or "") >= 10, f"{b.where}: give a reason for not running it"
        assert b.lang in RUNNABLE, f"{b.where}: only commands and snippets need a skip mark"
    assert RUN, "no runnable block found"


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder as a new user has it: the specs, the paper's studies, nothing recorded."""
    d = tmp_path_factory.mktemp("fresh")
    shutil.copytree(ROOT / "spaces", d / "spaces")
    shutil.copytree(ROOT / "studies" / "paper", d / "studies" / "paper")
    return d


def _env(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DSE_STUDIES_DIR"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    return env


def _run(args: list[str], folder: Path, where: str) -> None:
    res = subprocess.run(
        args, cwd=folder, env=_env(folder), capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, f"{where} failed ({res.returncode}):\n{res.stderr[-3000:]}"
    assert "Traceback" not in res.stderr, f"{where}:\n{res.stderr[-3000:]}"


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in RUN if b.lang != "python"], ids=lambda b: b.where)
def test_shell_block_runs(block: Block, fresh: Path) -> None:
    _run(["bash", "-euo", "pipefail", "-c", block.code], fresh, block.where)


@pytest.mark.slow
@pytest.mark.parametrize(
    "page",
    sorted({b.page for b in RUN if b.lang == "python"}),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_python_blocks_run(page: Path, fresh: Path) -> None:
    """A page's snippets in order, in one interpreter (names carry over as for a reader)."""
    script = ["ns = {}"]
    for b in (b for b in RUN if b.page == page and b.lang == "python"):
        script.append(f"print('--- {b.where}', flush=True)")
        script.append(f"exec(compile({b.code!r}, {b.where!r}, 'exec'), ns)")
    _run([sys.executable, "-c", "\n".join(script)], fresh, str(page.relative_to(ROOT)))
