"""The headline ratios over the uncertain assumptions (``spread.csv``).

Each class's best design (``classes.csv``) is evaluated under SCENARIOS paired Latin-hypercube
draws of defect density, wafer cost, co-packaged optics price and electricity price, and its
ratio to the full die's best is summarised; ``repicked_*`` lets every class take, in each
scenario, the best design of its own exact front instead. Imported by ``reproduce.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from classes import CASES, CLASSES, COST, SEARCHED, Job, _sets, class_spec, objectives


def uncertain_assumptions(context: dict[str, Any]) -> list[Any]:
    """The robust study's four uncertain assumptions, centred on the resolved (possibly
    user-set) nominal values: D0 lognormal with sigma 0.4 (public N5/N4 estimates 0.05-0.10
    /cm2), wafer cost triangular from -12 % to +47 % (N4 quotes of 15-25 k USD around 17 k),
    CPO USD/Gb/s lognormal with sigma 0.5 (targets of 0.3-1 USD/Gb/s), electricity uniform
    +/-37.5 % (industrial 0.05-0.11 USD/kWh around 0.08)."""
    from dse.model.uncertain import Uncertain

    t = context["technology"]
    d0, wafer = float(t["defect_density_per_cm2"]), float(t["wafer_cost_usd"])
    cpo, kwh = float(t["cpo_usd_per_gbps"]), float(t["electricity_usd_per_kwh"])
    return [
        Uncertain(("technology", "defect_density_per_cm2"), "lognormal",
                  {"median": d0, "sigma": 0.4}),
        Uncertain(("technology", "wafer_cost_usd"), "triangular",
                  {"low": wafer * 15 / 17, "mode": wafer, "high": wafer * 25 / 17}),
        Uncertain(("technology", "cpo_usd_per_gbps"), "lognormal",
                  {"median": cpo, "sigma": 0.5}),
        Uncertain(("technology", "electricity_usd_per_kwh"), "uniform",
                  {"low": kwh * 0.625, "high": kwh * 1.375}),
    ]  # fmt: skip


SCENARIOS = 64


def spread_rows(
    classes: pd.DataFrame,
    scratch: str,
    user_sets: list[str],
    *,
    basis: str = "cost",
    results: list[dict[str, Any]] | None = None,
) -> pd.DataFrame:
    """Each class's best design / the full class's best, per objective, over SCENARIOS paired
    Latin-hypercube draws of the uncertain assumptions: nominal, p10, p50, p90. With the class
    study's ``results``, also ``repicked_*``: in each scenario every class takes the best design
    of its own exact front under that scenario's prices and defect density (an architect who
    knew them), so a class is not judged by a design chosen for other conditions."""
    from dse import api
    from dse.model.robust import evaluate_under
    from dse.model.uncertain import sample

    rows = []
    for case in CASES:
        models = {}
        for cls in CLASSES:
            job = Job(case, cls, basis)
            models[cls] = api.load(class_spec(job, Path(scratch)), sets=_sets(job, user_sets))
            models[cls].uncertain = uncertain_assumptions(models[cls].context)
        # the same scenarios for every class (paired): drawn from the full die's nominal values
        values = sample(models["full"].uncertain, SCENARIOS, seed=0)
        sub = classes[(classes["case"] == case) & (classes["price_basis"] == basis)]
        fronts = {
            r["job"].die_class: r["exact"]
            for r in results or []
            if r["job"].case == case and r["job"].basis == basis
        }
        for obj in objectives(case)[:2]:
            g = sub[sub["objective"] == obj]
            repicked = {
                cls: scenario_best(models[cls], front, values, obj)
                for cls, front in fronts.items()
            }
            under = {}
            for _, r in g.iterrows():
                params = {p: r[p] for p in SEARCHED}
                model = models[r["die_class"]]
                under[r["die_class"]] = evaluate_under(model, params, values, strict=False)[obj]
            for cls, v in under.items():
                ratio = v / under["full"]
                nominal = float(g.loc[g["die_class"] == cls, obj].iloc[0]) / float(
                    g.loc[g["die_class"] == "full", obj].iloc[0]
                )
                row = {
                    "case": case,
                    "price_basis": basis,
                    "objective": obj,
                    "die_class": cls,
                    "ratio_vs_full": nominal,
                    **_percentiles(ratio, obj, ""),
                }
                if cls in repicked and "full" in repicked:
                    row.update(_percentiles(repicked[cls] / repicked["full"], obj, "repicked_"))
                rows.append(row)
    return pd.DataFrame(rows)


def _percentiles(ratio: np.ndarray, obj: str, prefix: str) -> dict[str, float]:
    return {
        f"{prefix}p10": float(np.percentile(ratio, 10)),
        f"{prefix}p50": float(np.percentile(ratio, 50)),
        f"{prefix}p90": float(np.percentile(ratio, 90)),
        f"{prefix}wins_fraction": float(np.mean(ratio < 1 if obj == COST else ratio > 1)),
    }


def scenario_best(
    model: Any, front: pd.DataFrame, values: dict[str, np.ndarray], obj: str
) -> np.ndarray:
    """Per scenario, the best ``obj`` over the designs of ``front`` that meet every constraint
    in that scenario: shape (scenarios,), NaN where none does."""
    from dse.model.robust import evaluate_under

    n = len(next(iter(values.values())))
    per = np.full((len(front), n), np.nan)
    for i, (_, r) in enumerate(front.iterrows()):
        params = {p: r[f"params.{p}"] for p in SEARCHED}
        with np.errstate(all="ignore"):  # infeasible corners divide by zero, as in a sweep
            metrics = evaluate_under(model, params, values, strict=False)
        ok = np.ones(n, bool)
        for v in model.violations(params, metrics):
            ok &= np.broadcast_to(np.asarray(v, float) <= 0, (n,))
        per[i] = np.where(ok & np.isfinite(metrics[obj]), metrics[obj], np.nan)
    if not np.isfinite(per).any():
        return np.full(n, np.nan)
    with np.errstate(all="ignore"):
        return np.nanmin(per, 0) if obj == COST else np.nanmax(per, 0)
