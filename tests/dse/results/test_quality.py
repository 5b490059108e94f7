"""Search-quality metrics: reference point, IGD+, hypervolume history, dse pareto --quality."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dse.errors import DseError
from dse.results.quality import front_hypervolume, hypervolume_history, igd_plus, reference_point
from tests.conftest import run_dse
from tests.dse.search.test_sweep import _small_spec

MAX = [False, True]  # minimise the first objective, maximise the second


def test_reference_point_thresholds_then_nadir_plus_margin() -> None:
    pts = np.array([[1.0, 10.0], [3.0, 30.0]])
    ref = reference_point(thresholds=[None, None], maximize=MAX, reference_set=pts)
    assert ref == pytest.approx([3.2, 8.0])  # nadir (3, 10) pushed out by 10 % of the range
    ref = reference_point(thresholds=[5.0, None], maximize=MAX, reference_set=pts)
    assert ref == pytest.approx([5.0, 8.0])
    assert reference_point(thresholds=[5.0, 1.0], maximize=MAX, reference_set=None) == (
        pytest.approx([5.0, 1.0])
    )
    with pytest.raises(DseError, match="threshold"):
        reference_point(thresholds=[5.0, None], maximize=MAX, reference_set=None)


def test_hypervolume_history_and_igd_plus() -> None:
    ref = np.array([4.0, 0.0])
    pts = np.array([[3.0, 1.0], [2.0, 2.0], [1.0, 1.0], [0.5, 5.0], [2.5, 1.5], [9.0, 9.0]])
    feasible = np.array([True, False, True, True, True, True])
    hist = hypervolume_history(pts, feasible, ref, MAX)
    # (3,1): 1*1; infeasible (2,2) ignored; (1,1) adds 2*1; (0.5,5) box 3.5*5=17.5 dominates
    # both; (2.5,1.5) dominated; (9,9) is worse than the reference cost: no volume.
    assert hist == pytest.approx([1.0, 1.0, 3.0, 17.5, 17.5, 17.5])
    assert hist[-1] == pytest.approx(front_hypervolume(pts[feasible], ref, MAX))

    exact = np.array([[0.0, 10.0], [1.0, 5.0], [2.0, 0.0]])
    assert igd_plus(exact, exact, MAX) == pytest.approx(0.0)
    # Normalised by the front's range (2 and 10): missing (0, 10) from (1, 5) costs
    # sqrt(0.5^2 + 0.5^2); the other two points are matched or dominated: IGD+ = 0.7071 / 3.
    assert igd_plus(exact[1:], exact, MAX) == pytest.approx(np.sqrt(0.5) / 3)
    assert igd_plus(exact[1:] + [0.2, 0.0], exact, MAX) > igd_plus(exact[1:], exact, MAX)


@pytest.mark.slow
def test_pareto_quality_against_a_sweep(tmp_path: Path, studies_dir: Path) -> None:
    spec = _small_spec(tmp_path, name="qual")
    r = run_dse("run", str(spec), "--trials", "40", "--no-progress")
    assert r.returncode == 0, r.stderr
    r = run_dse("pareto", "qual", "--quality")
    assert r.returncode == 0, r.stderr
    assert "hypervolume" in r.stdout and "run 'dse sweep" in r.stdout
    first = json.loads((studies_dir / "qual" / "quality.json").read_text())
    assert first["reference_from"] == "study front nadir + 10% range"
    assert first["igd_plus"] is None and first["hypervolume"] > 0

    r = run_dse("sweep", str(spec), "--grid", "--no-progress")
    assert r.returncode == 0, r.stderr
    r = run_dse("pareto", "qual", "--quality")
    assert r.returncode == 0, r.stderr
    assert "IGD+" in r.stdout and "exact sweep front" in r.stdout
    q = json.loads((studies_dir / "qual" / "quality.json").read_text())
    assert q["reference_from"] == "sweep nadir + 10% range"
    # The grid front is exact: a study on the same discrete space can only match it.
    assert 0 < q["hypervolume"] <= q["sweep_hypervolume"] * (1 + 1e-9)
    assert 0 < q["hypervolume_fraction"] <= 1 + 1e-9
    assert q["igd_plus"] >= 0
    hist = pd.read_csv(studies_dir / "qual" / "hv_history.csv")
    assert len(hist) == 40 and (np.diff(hist["hypervolume"]) >= 0).all()
    assert hist["hypervolume"].iloc[-1] == pytest.approx(q["hypervolume"])

    # With thresholds in the spec they are the reference point.
    raw = yaml.safe_load(spec.read_text())
    for o, t in zip(raw["objectives"], [50.0, 0.0, 0.5], strict=True):
        o["threshold"] = t
    spec.write_text(yaml.safe_dump(raw, sort_keys=False))
    assert run_dse("run", str(spec), "--trials", "40", "--no-progress").returncode == 0
    r = run_dse("pareto", "qual", "--quality", "--format", "csv")
    assert r.returncode == 0, r.stderr
    assert "from threshold" in r.stderr  # quality goes to stderr when stdout is CSV
    assert json.loads((studies_dir / "qual" / "quality.json").read_text())[
        "reference_point"
    ] == pytest.approx([50.0, 0.0, 0.5])
