"""The committed Lite-GPU paper results are what studies/paper/reproduce.py gives now.

A model change that moves any committed number fails here until the results (and FINDINGS.md)
are regenerated and reviewed. Numbers are compared within ``tests.numeric.REL_TOL`` (or one unit
in the last printed digit), since other machines round the last bits of floats differently; the
text around them must match exactly.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.numeric import first_difference

PAPER = ROOT / "studies" / "paper"
GENERATED = ("*.csv", "*.json", "summary.md", "report.html")


def test_reproduce_regenerates_committed_results(tmp_path: Path) -> None:
    out = tmp_path / "paper"
    out.mkdir()
    env = {**os.environ, "PAPER_OUT": str(out), "DSE_STUDIES_DIR": str(tmp_path / "studies")}
    res = subprocess.run(
        [sys.executable, str(PAPER / "reproduce.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    committed = sorted(p.name for pat in GENERATED for p in PAPER.glob(pat))
    assert len(committed) >= 10
    made = sorted(p.name for pat in GENERATED for p in out.glob(pat))
    assert made == committed
    differing = {}
    for name in committed:
        problem = first_difference((PAPER / name).read_text(), (out / name).read_text())
        if problem is not None:
            differing[name] = problem
    assert not differing, f"regenerate studies/paper (reproduce.py); changed: {differing}"
