"""The tests of tests/dse/search/test_sweep.py that run the ``dse`` command."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from dse import api
from dse.search.study.warm_start import warm_start_designs
from tests.conftest import run_dse
from tests.dse.search.test_sweep import SMALL_SPACE, _small_spec


@pytest.mark.slow
def test_cli_sweep_writes_records_and_rejects_bad_input(tmp_path: Path, studies_dir: Path) -> None:
    spec = _small_spec(tmp_path, name="clisweep")
    r = run_dse("sweep", str(spec), "--samples", "500", "--chunk", "128", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "500 designs" in r.stdout and "designs/s" in r.stdout
    front = pd.read_csv(studies_dir / "clisweep" / "sweep_front.csv")
    assert len(front) >= 1 and "cost.usd_per_mtok" in front
    cont = _small_spec(
        tmp_path,
        name="clicont",
        space={**SMALL_SPACE, "die_area_mm2": {"type": "float", "low": 100, "high": 800}},
    )
    r = run_dse("sweep", str(cont), "--grid")
    assert r.returncode == 2
    assert "die_area_mm2" in r.stderr and "step" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_dse_run_seeds_its_first_population_from_a_coarse_sweep(
    tmp_path: Path, studies_dir: Path
) -> None:
    spec = _small_spec(tmp_path, name="warmrun")
    raw = yaml.safe_load(spec.read_text())
    raw["search"] = {
        "sampler": "nsga2",
        "trials": 30,
        "seed": 0,
        "warm_start": 400,
        "options": {"population_size": 10},
    }
    spec.write_text(yaml.safe_dump(raw, sort_keys=False))
    expected = warm_start_designs(api.load(spec), samples=400, k=10, seed=0)
    r = run_dse("run", str(spec), "--no-progress")
    assert r.returncode == 0, r.stderr
    trials = pd.read_csv(studies_dir / "warmrun" / "trials.csv").sort_values("number")
    assert len(trials) == 30
    first = trials.head(len(expected))
    got = {
        tuple(float(row[f"params.{n}"]) for n in sorted(raw["space"]))
        for _, row in first.iterrows()
    }
    assert got == {tuple(float(d[n]) for n in sorted(d)) for d in expected}
