"""The paper study's spread over the uncertain assumptions (studies/paper/spread.py): the
per-scenario re-pick is the best design of a class's front in each scenario, and FINDINGS says
what it changes."""

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
import findings  # noqa: E402
import spread  # noqa: E402


@pytest.fixture(scope="module")
def full_decode(tmp_path_factory: pytest.TempPathFactory):
    """The full class of the 70B decode case, its committed best designs and 16 scenarios."""
    from dse import api
    from dse.model.uncertain import sample

    scratch = tmp_path_factory.mktemp("spread")
    job = classes.Job("llama3-70b-decode", "full", "cost")
    model = api.load(classes.class_spec(job, Path(scratch)), sets=classes._sets(job, []))
    model.uncertain = spread.uncertain_assumptions(model.context)
    rows = pd.read_csv(PAPER / "classes.csv")
    rows = rows[(rows["case"] == job.case) & (rows["die_class"] == "full")]
    rows = rows[rows["price_basis"] == "cost"]
    front = pd.DataFrame({f"params.{p}": rows[p].to_numpy() for p in classes.SEARCHED})
    return model, front, sample(model.uncertain, 16, seed=1)


@pytest.mark.parametrize("obj", [classes.COST, classes.POWER])
def test_the_repick_is_the_best_front_design_in_each_scenario(full_decode, obj: str) -> None:
    from dse.model.robust import evaluate_under

    model, front, values = full_decode
    best = spread.scenario_best(model, front, values, obj)
    per, ok = [], []
    for _, r in front.iterrows():
        params = {k.split(".", 1)[1]: v for k, v in r.items()}
        metrics = evaluate_under(model, params, values)
        per.append(metrics[obj])
        # a design counts in a scenario only if it meets every constraint there (the SLO and
        # the copper reach are among the uncertain assumptions)
        ok.append(
            np.all([np.broadcast_to(v, (16,)) <= 0 for v in model.violations(params, metrics)], 0)
        )
    per, ok = np.array(per), np.array(ok)
    assert per.shape == (len(front), 16) and len(front) >= 2
    assert ok.any(0).sum() >= 12  # most scenarios have a feasible design on the front
    kept = np.where(ok, per, np.inf if obj == classes.COST else -np.inf)
    hand = kept.min(0) if obj == classes.COST else kept.max(0)
    hand = np.where(ok.any(0), hand, np.nan)  # no design meets that scenario: NaN
    np.testing.assert_allclose(best, hand, rtol=1e-12)
    if obj == classes.COST:  # prices move cost per token from scenario to scenario
        assert np.nanmax(best) - np.nanmin(best) > 0.01 * np.nanmean(best)


def test_a_front_without_a_feasible_design_gives_nan(full_decode) -> None:
    model, front, values = full_decode
    empty = front.iloc[:0]
    assert np.isnan(spread.scenario_best(model, empty, values, classes.COST)).all()


def _off(frac: float) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "case": ["llama3-70b-decode", "llama3-405b-decode"],
            "objective": [classes.COST, classes.POWER],
            "die_class": ["half", "quarter"],
            "repicked_wins_fraction": [0.0, frac],
        }
    )


def test_findings_say_what_the_repick_changes() -> None:
    assert findings._repicked_off(_off(0.0)) == (
        ", not even when every class re-picks its best design for each scenario"
    )
    assert findings._repicked_off(_off(0.25)) == (
        "; when every class re-picks its best design for each scenario, quarter wins 25% of "
        "them (llama3-405b-decode, tokens/s per MW)"
    )
    assert findings._repicked_off(_off(0.0).drop(columns="repicked_wins_fraction")) == ""


def test_the_committed_spread_has_the_repick() -> None:
    sp = pd.read_csv(PAPER / "spread.csv")
    cols = {"repicked_p10", "repicked_p50", "repicked_p90", "repicked_wins_fraction"}
    assert cols <= set(sp.columns), "regenerate: reproduce.py --out studies/paper"
    # a search-only case has no exact front to re-pick from: no scenario summarised
    only = sp["case"].isin(classes.SEARCH_ONLY)
    assert (sp.loc[only, "repicked_scenarios"] == 0).all()
    assert sp.loc[only, "repicked_p50"].isna().all()
    sp = sp[~only]
    full = sp[sp["die_class"] == "full"]
    assert (full["repicked_p50"] == 1).all() and (full["repicked_wins_fraction"] == 0).all()
    assert sp["repicked_p10"].le(sp["repicked_p90"]).all()
    # the re-pick is summarised over the scenarios where both classes have a feasible design
    assert sp["repicked_scenarios"].between(1, spread.SCENARIOS).all()
    assert (sp["repicked_scenarios"] >= spread.SCENARIOS // 2).mean() > 0.9


def test_what_moved_says_so_when_nothing_did() -> None:
    rows = [
        {"kind": "winner", "case": "c", "objective": classes.COST, "price_basis": "cost",
         "subject": "winner", "before": "full", "after": "full", "change": None},
        {"kind": "class", "case": "c", "objective": classes.COST, "price_basis": "cost",
         "subject": "half", "before": 1.0, "after": 1.0000001, "change": 1e-7},
        {"kind": "class", "case": "c", "objective": classes.POWER, "price_basis": "cost",
         "subject": "half", "before": 1.0, "after": 1.01, "change": 0.01},
    ]  # fmt: skip
    text = findings._moved({"moved": pd.DataFrame(rows)})
    assert "- Each class's best, cost per token: none moved by 0.05% or more." in text
    assert "- Each class's best, tokens/s per MW: median +1.0%, +1.0% to +1.0%" in text
