"""Pooled memory over optics in the paper study (studies/paper/pool.py, pool.csv): the control
without a pool finds each class's best again, and the reported pooled bests are what a single
evaluation of that design gives, feasible."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import ROOT

PAPER = ROOT / "studies" / "paper"
sys.path.insert(0, str(PAPER))
import classes  # noqa: E402
import pool  # noqa: E402


def test_the_committed_control_is_each_class_best() -> None:
    pl = pd.read_csv(PAPER / "pool.csv")
    assert set(pl["case"]) == set(pool.POOL_CASES)
    assert set(pl["die_class"]) == set(classes.CLASSES)
    assert set(pl["pool"]) == set(pool.KINDS)
    none = pl[pl["pool"] == "none"]
    # the class's best design is on the grid (its own HBM, no pool): found again
    np.testing.assert_allclose(none["value"], none["class_best"], rtol=1e-5)
    assert (none["vs_unpooled"] == 1).all()
    text = (PAPER / "FINDINGS.md").read_text() + (PAPER / "EVIDENCE.md").read_text()
    assert "Pooled memory over optics" in text and "pool.csv" in text


def test_a_pooled_best_is_what_one_evaluation_gives(tmp_path: Path) -> None:
    """Vectorized over the grid = one design alone, and the design meets every constraint."""
    from dse import api

    table = pd.read_csv(PAPER / "classes.csv")
    case, cls = "llama3-70b-decode", "half"
    mine = table[(table["case"] == case) & (table["die_class"] == cls)]
    rows = pool.pool_rows(mine, str(tmp_path), [])
    assert len(rows) == 2 * len(pool.KINDS)
    assert (rows.loc[rows["pool"] == "none", "designs"] == 24).all()
    pooled = rows[(rows["pool"] != "none") & rows["value"].notna()]
    assert len(pooled) >= 4
    job = classes.Job(case, cls, "cost")
    for r in pooled.itertuples():
        best = mine[(mine["price_basis"] == "cost") & (mine["objective"] == r.objective)].iloc[0]
        sets = [
            *classes._sets(job, []),
            f"memory_pool={r.pool}",
            f"memory_pool_gb_per_gpu={r.memory_pool_gb_per_gpu}",
            f"memory_pool_tbps_per_gpu={r.memory_pool_tbps_per_gpu}",
        ]
        model = api.load(classes.class_spec(job, tmp_path), sets=sets)
        params = {p: best[p] for p in classes.SEARCHED}
        params["hbm_stacks_per_die"] = int(r.hbm_stacks_per_die)
        params["hbm_gb_per_stack"] = int(r.hbm_gb_per_stack)
        params = {k: v.item() if hasattr(v, "item") else v for k, v in params.items()}
        ev = api.evaluate(model, params)
        assert ev.feasible, (r, ev.violated)
        assert float(ev[r.objective]) == pytest.approx(r.value, rel=1e-9)
