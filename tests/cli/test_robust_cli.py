"""The tests of tests/dse/model/test_robust.py that run the ``dse`` command."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_dse
from tests.dse.model.test_robust import spec  # noqa: F401 (fixture)


@pytest.mark.slow
def test_cli_robust_run_records_beside_nominal(
    spec: Path,  # noqa: F811 (the fixture imported above)
    studies_dir: Path,
) -> None:
    r = run_dse("run", str(spec), "--no-progress")
    assert r.returncode == 0, r.stderr
    r = run_dse("run", str(spec), "--robust", "8", "--statistic", "pessimistic", "--no-progress")
    assert r.returncode == 0, r.stderr
    nominal, robust = studies_dir / "rob", studies_dir / "rob-robust-pessimistic-k8"
    assert (nominal / "trials.csv").is_file() and (robust / "trials.csv").is_file()
    import pandas as pd
    import yaml

    lock = yaml.safe_load((robust / "spec.lock.yaml").read_text())
    assert lock["robust"]["k"] == 8 and lock["robust"]["statistic"] == "pessimistic"
    assert lock["uncertain"]["technology.defect_density_per_cm2"]["dist"] == "lognormal"
    a = pd.read_csv(nominal / "trials.csv").sort_values("number").reset_index(drop=True)
    b = pd.read_csv(robust / "trials.csv").sort_values("number").reset_index(drop=True)
    # same seed, same designs; the robust objective is the p90 cost, nominal kept beside it
    assert list(a["params.die_area_mm2"]) == list(b["params.die_area_mm2"])
    assert np.allclose(a["cost.usd_per_mtok"], b["nominal.cost.usd_per_mtok"])
    assert np.allclose(b["cost.usd_per_mtok"], b["robust.cost.usd_per_mtok.p90"])
    assert (b["cost.usd_per_mtok"] >= b["nominal.cost.usd_per_mtok"] - 1e-12).all()
    bad = run_dse("run", str(spec), "--robust", "8", "--statistic", "median")
    # a typed choice: the CLI names the bad value and the valid ones
    assert bad.returncode == 2 and "'median' is not one of" in " ".join(bad.stderr.split())
