"""The tests of tests/dse/model/test_spec_selected_evaluators.py that run the ``dse`` command."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import run_dse
from tests.dse.model.test_spec_selected_evaluators import zdt1_copy


@pytest.mark.slow
def test_zdt1_fixed_scale_reaches_the_evaluator_and_records_hold_only_its_metrics(
    tmp_path: Path, studies_dir: Path
) -> None:
    spec = zdt1_copy(
        tmp_path,
        study="zdt1-scaled",
        fixed={"scale": 2.0},
        search={"sampler": "random", "trials": 12, "seed": 3},
    )
    res = run_dse("run", str(spec), "--no-progress", env={"DSE_STUDIES_DIR": str(studies_dir)})
    assert res.returncode == 0, res.stderr
    t = pd.read_csv(studies_dir / "zdt1-scaled" / "trials.csv")
    assert len(t) == 12 and (t["state"] == "COMPLETE").all()
    metrics = [c for c in t.columns if "." in c and not c.startswith(("params.", "constraint."))]
    assert sorted(metrics) == ["zdt1.f1", "zdt1.f2"]
    # Independent hand computation of ZDT1, times the spec's scale of 2.
    x = t[[f"params.x{i}" for i in range(1, 6)]].to_numpy()
    g = 1 + 9 * x[:, 1:].sum(axis=1) / 4
    assert np.allclose(t["zdt1.f1"], 2.0 * x[:, 0], rtol=1e-12)
    assert np.allclose(t["zdt1.f2"], 2.0 * g * (1 - np.sqrt(x[:, 0] / g)), rtol=1e-12)
