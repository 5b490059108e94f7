"""breakeven.csv: the value of a deciding assumption at which the runner-up ties the winner."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import ROOT

PAPER = ROOT / "studies" / "paper"
sys.path.insert(0, str(PAPER))
import breakeven  # noqa: E402
import classes  # noqa: E402
import spread  # noqa: E402

CASE = "llama3-70b-decode"
#: Two hand-picked designs: a full die on copper and a half die on CPO.
DESIGNS = {
    "full": dict(die_area_mm2=804.0, hbm_stacks_per_die=6, hbm_tbps_per_stack=1.2288,
                 hbm_gb_per_stack=24, links_per_gpu=9, optics_per_link=2,
                 link_type="electrical", scaleup_fabric="direct", clock_ghz=1.75,
                 packaging="cowos-s", cooling="air"),
    "half": dict(die_area_mm2=406.0, hbm_stacks_per_die=4, hbm_tbps_per_stack=1.2288,
                 hbm_gb_per_stack=24, links_per_gpu=9, optics_per_link=2, link_type="cpo",
                 scaleup_fabric="ocs", clock_ghz=1.5, packaging="cowos-s", cooling="liquid"),
}  # fmt: skip


def test_parity_interpolates_the_crossing_nearest_the_nominal() -> None:
    xs = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    assert breakeven.parity(xs, np.array([1.0, 0.5, -0.5, -1.0, -2.0]), 1.0) == 1.5
    assert np.isnan(breakeven.parity(xs, np.ones(5), 1.0))
    # two crossings (0.5 and 3.5): the one nearer the nominal value 3
    assert breakeven.parity(xs, np.array([1.0, -1.0, -1.0, -1.0, 1.0]), 3.0) == 3.5


def _models(tmp_path: Path) -> dict:
    from dse import api

    out = {}
    for cls in DESIGNS:
        job = classes.Job(CASE, cls, "cost")
        out[cls] = api.load(classes.class_spec(job, tmp_path), sets=classes._sets(job, []))
    return out


def _table(models: dict) -> pd.DataFrame:
    rows = []
    for cls, p in DESIGNS.items():
        u = spread.uncertain_assumptions(models[cls].context)[0]
        d0 = float(models[cls].context["technology"]["defect_density_per_cm2"])
        m = breakeven.metric_over(models[cls], p, u, np.array([d0]), classes.COST)
        rows.append({"case": CASE, "price_basis": "cost", "objective": classes.COST,
                     "die_class": cls, "value": float(m[0]), **p})  # fmt: skip
    return pd.DataFrame(rows)


def test_copper_reach_break_even_is_the_cluster_silicon(tmp_path: Path) -> None:
    # The full die wins on a direct copper torus; once a rack holds less compute silicon than
    # the cluster's 52,096 mm2 its copper torus is infeasible and the half die on CPO wins.
    models = _models(tmp_path)
    table = _table(models)
    assert np.isfinite(table["value"]).all()
    params = ["technology.rack_silicon_mm2", "technology.electricity_usd_per_kwh"]
    out = breakeven.breakeven_rows(table, str(tmp_path), [], cases=[CASE], parameters=params)
    assert list(out.columns) == breakeven.COLUMNS
    cost = out[out["objective"] == classes.COST].set_index("parameter")
    assert cost["winner"].iloc[0] == table.sort_values("value")["die_class"].iloc[0] == "full"
    assert cost.loc["technology.rack_silicon_mm2", "nominal"] == 115200
    reach = cost.loc["technology.rack_silicon_mm2", "parity_value"]
    step = (1.5 * 115200 - 6512) / (breakeven.POINTS - 1)  # the grid over its p1-p99
    assert 52096 - step <= reach <= 52096 + step


def test_at_a_continuous_parity_the_two_designs_tie(tmp_path: Path) -> None:
    from dse.model.uncertain import Uncertain

    models = _models(tmp_path)
    # The full die at 1.5 GHz costs less per token than at 1.25 GHz when energy is free and
    # more when it is dear: the two tie at some electricity price.
    u = Uncertain(("technology", "electricity_usd_per_kwh"), "uniform", {"low": 0, "high": 0.5})
    xs = np.linspace(0.0, 0.5, breakeven.POINTS)
    fast, slow = ({**DESIGNS["full"], "clock_ghz": c} for c in (1.5, 1.25))
    a = breakeven.metric_over(models["full"], fast, u, xs, classes.COST)
    b = breakeven.metric_over(models["full"], slow, u, xs, classes.COST)
    x = breakeven.parity(xs, np.log(b / a), 0.08)
    assert 0.0 < x < 0.5
    at = np.array([x])
    ya = breakeven.metric_over(models["full"], fast, u, at, classes.COST)
    yb = breakeven.metric_over(models["full"], slow, u, at, classes.COST)
    # costs are linear in the electricity price and the log of their ratio nearly so: the
    # interpolated parity ties them within 1e-4
    assert float(ya[0]) == pytest.approx(float(yb[0]), rel=1e-4)


def test_sensitivity_ranks_the_assumption_that_drives_the_ratio_first() -> None:
    from scipy import stats

    rng = np.random.default_rng(0)
    values = {"a": rng.random(64), "b": rng.random(64), "flat": np.full(64, 3.0)}
    ratio = 1.0 + 2.0 * values["b"] ** 3 + 0.05 * values["a"]  # monotone in b, weak in a
    rows = spread.sensitivity_rows(ratio, values)
    assert [r["parameter"] for r in rows] == ["b", "a", "flat"]
    assert rows[0]["spearman_rho"] == pytest.approx(stats.spearmanr(values["b"], ratio)[0])
    assert rows[1]["spearman_rho"] == pytest.approx(stats.spearmanr(values["a"], ratio)[0])
    assert rows[2]["spearman_rho"] == 0.0
    ties = spread._ranks(np.array([3.0, 1.0, 3.0, 2.0]))
    np.testing.assert_array_equal(ties, [2.5, 0.0, 2.5, 1.0])
