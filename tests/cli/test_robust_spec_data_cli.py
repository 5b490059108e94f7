"""The tests of tests/dse/model/test_robust_spec_data.py that run the ``dse`` command."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.cli.test_crash_resume import overshoot
from tests.conftest import run_dse
from tests.dse.model.test_robust_spec_data import robust_spec


def completed(study_dir: Path) -> pd.DataFrame:
    """The study's finished trials: 6, or a few more when both workers counted the last free
    trials at once (docs/scale-out.md's bound), all COMPLETE (no trial is given back)."""
    t = pd.read_csv(study_dir / "trials.csv")
    assert (t["state"] == "COMPLETE").all(), t["state"].value_counts()
    assert 6 <= len(t) <= 6 + overshoot(2, 6), len(t)
    return t


@pytest.mark.slow
def test_jobs_run_a_robust_study_from_the_spec_and_from_the_flag(
    tmp_path: Path, studies_dir: Path
) -> None:
    spec = robust_spec(tmp_path, samples=4, statistic="pessimistic")
    res = run_dse("run", str(spec), "--jobs", "2", "--no-progress")
    assert res.returncode == 0, res.stderr
    t = completed(studies_dir / "rob-robust-pessimistic-k4")
    # Every trial's objective is the robust statistic, its nominal value recorded beside it.
    assert np.allclose(t["cost.usd_per_mtok"], t["robust.cost.usd_per_mtok.p90"])
    assert (t["cost.usd_per_mtok"] >= t["nominal.cost.usd_per_mtok"] - 1e-12).all()
    lock = yaml.safe_load(
        (studies_dir / "rob-robust-pessimistic-k4" / "spec.lock.yaml").read_text()
    )
    assert lock["robust"]["k"] == 4
    # The command-line flag with --jobs, no longer refused.
    res = run_dse("run", str(spec), "--jobs", "2", "--robust", "3", "--no-progress")
    assert res.returncode == 0, res.stderr
    t = completed(studies_dir / "rob-robust-mean-k3")
    assert np.allclose(t["cost.usd_per_mtok"], t["robust.cost.usd_per_mtok.mean"])
