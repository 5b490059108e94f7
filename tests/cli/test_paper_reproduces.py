"""The committed Lite-GPU paper results are what studies/paper/reproduce.py gives now.

A model change that moves any committed number fails here until the results (and FINDINGS.md)
are regenerated and reviewed (``reproduce.py --out studies/paper``). The illustrations are
regenerated whole; of the class study (40 searches) one case x class x basis is rerun and its
rows compared, since the rest run the same code. Numbers are compared within
``tests.numeric.REL_TOL`` (or one unit in the last printed digit), since other machines round
the last bits of floats differently; the text around them must match exactly.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from tests.conftest import ROOT
from tests.numeric import first_difference

PAPER = ROOT / "studies" / "paper"
SCRIPT = PAPER / "reproduce.py"
ILLUSTRATIONS = ("compare-*.csv", "sweep-*.csv", "same-fabric.csv", "quarter-d0-optics.csv",
                 "front-*.csv", "*.json", "summary.md", "report.html", "products.csv")  # fmt: skip
JOB = "llama3-70b-decode/quarter/cost"


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PAPER_OUT"}
    env["DSE_STUDIES_DIR"] = str(tmp_path / "studies")
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=tmp_path,
    )


def _rows(path: Path, prefix: str) -> str:
    lines = path.read_text().splitlines()
    return "\n".join([lines[0], *(x for x in lines[1:] if x.startswith(prefix))]) + "\n"


def _columns_of(committed: str, made: str) -> str:
    """``committed`` (a header and rows) cut to ``made``'s columns, in its order: the committed
    file also has the columns of other cases (the mixed fleet's ``fleet.*``), empty here."""
    import csv
    import io

    want = next(csv.reader(io.StringIO(made)))
    rows = list(csv.reader(io.StringIO(committed)))
    header = rows[0]
    assert set(want) <= set(header), set(want) - set(header)
    at = [header.index(c) for c in want]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([[r[i] for i in at] for r in rows])
    return buf.getvalue()


def test_reproduce_regenerates_committed_results(tmp_path: Path) -> None:
    out = tmp_path / "paper"
    res = _run(tmp_path, "--out", str(out), "--only", JOB, "--jobs", "1")
    assert res.returncode == 0, res.stderr
    assert f"[1/1] {JOB}:" in res.stderr and "hypervolume" in res.stderr  # progress shown
    committed = sorted(p.name for pat in ILLUSTRATIONS for p in PAPER.glob(pat))
    assert len(committed) >= 12
    made = sorted(p.name for pat in ILLUSTRATIONS for p in out.glob(pat))
    assert made == committed
    differing = {}
    for name in committed:
        problem = first_difference((PAPER / name).read_text(), (out / name).read_text())
        if problem is not None:
            differing[name] = problem
    prefix = JOB.replace("/", ",") + ","
    for name in ("classes.csv", "quality.csv"):
        made_rows = _rows(out / name, prefix)
        problem = first_difference(_columns_of(_rows(PAPER / name, prefix), made_rows), made_rows)
        if problem is not None:
            differing[name] = problem
    assert not differing, f"regenerate: reproduce.py --out studies/paper; changed: {differing}"


def test_rerun_with_user_constants_goes_to_its_own_folder(tmp_path: Path) -> None:
    job = "llama3-70b-decode/eighth/cost"
    out = tmp_path / "mine"
    res = _run(tmp_path, "--out", str(out), "--no-illustrations", "--only", job,
               "--set", "technology.defect_density_per_cm2=0.3", "--jobs", "1")  # fmt: skip
    assert res.returncode == 0, res.stderr
    mine = pd.read_csv(out / "classes.csv")
    ours = pd.read_csv(PAPER / "classes.csv")
    ours = ours[(ours["case"] == "llama3-70b-decode") & (ours["die_class"] == "eighth")]
    ours = ours[ours["price_basis"] == "cost"]
    assert len(mine) == 3 and not (out / "FINDINGS.md").exists()  # --only: no answer written
    assert mine["cost.die_yield"].max() < ours["cost.die_yield"].min()  # D0 0.3 vs 0.07
    # the default folder is not the committed one, and the committed one refuses user constants
    assert not (tmp_path / "paper-results").exists()
    before = (PAPER / "classes.csv").read_bytes()
    bad = _run(tmp_path, "--out", str(PAPER), "--set", "technology.wafer_cost_usd=1")
    assert bad.returncode == 2 and "another --out DIR" in bad.stderr
    assert (PAPER / "classes.csv").read_bytes() == before
