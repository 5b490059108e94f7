"""The tests of tests/dse/results/test_quality.py that run the ``dse`` command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.conftest import run_dse
from tests.dse.search.test_sweep import _small_spec


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
