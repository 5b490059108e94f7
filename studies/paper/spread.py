"""The headline ratios over the uncertain assumptions (``spread.csv``).

Each class's best design (``classes.csv``) is evaluated under SCENARIOS paired Latin-hypercube
draws of the uncertain assumptions (``uncertain_assumptions``: prices, power, fitted
efficiencies, copper reach and the SLO), and its
ratio to the full die's best is summarised; ``repicked_*`` lets every class take, in each
scenario, the best design of its own exact front instead. Imported by ``reproduce.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from classes import (
    ALIAS,
    CASES,
    CLASSES,
    SEARCHED,
    Job,
    _sets,
    class_spec,
    minimized,
    objectives,
)


def uncertain_assumptions(context: dict[str, Any]) -> list[Any]:
    """The uncertain assumptions, centred on the resolved (possibly user-set) nominal values.

    The four of the robust study: D0 lognormal with sigma 0.4 (public N5/N4 estimates 0.05-0.10
    /cm2), wafer cost triangular from -12 % to +47 % (N4 quotes of 15-25 k USD around 17 k),
    CPO USD/Gb/s lognormal with sigma 0.5 (targets of 0.3-1 USD/Gb/s), electricity uniform
    +/-37.5 % (industrial 0.05-0.11 USD/kWh around 0.08). And what decides the answer (issue
    35), each over its published spread where there is one:

    - HBM USD/GB of every generation, lognormal sigma 0.25 (quotes of 10-18 USD/GB around ~13);
    - host USD and W per kW of GPU power, lognormal sigma 0.3 and uniform +/-30 % (Epoch's 90 %
      interval of 2,500-8,000 USD for an H100's module and baseboard share);
    - facility capex per kW, uniform from -9 % to +82 % (10-12 M USD per MW, AI-optimised up
      to 20 M); maintenance per year, uniform +/-50 % (E);
    - HBM pJ/bit, triangular from -25 % to +100 % (3.9 pJ/bit HBM2-class to 7-9 quoted for
      HBM3E); the busy-activity floor, uniform +/-0.1 (a fitted fraction);
    - the fitted serving efficiencies (continuous-batching GEMM compute and memory), uniform
      +/-15 % (the validated model error band, docs/validation.md);
    - copper reach (rack_silicon_mm2), triangular from one baseboard to 1.5 racks;
    - the TPOT SLO, uniform +/-50 %.
    """
    from dse.model.uncertain import Uncertain

    t = context["technology"]
    d0, wafer = float(t["defect_density_per_cm2"]), float(t["wafer_cost_usd"])
    cpo, kwh = float(t["cpo_usd_per_gbps"]), float(t["electricity_usd_per_kwh"])
    out = [
        Uncertain(("technology", "defect_density_per_cm2"), "lognormal",
                  {"median": d0, "sigma": 0.4}),
        Uncertain(("technology", "wafer_cost_usd"), "triangular",
                  {"low": wafer * 15 / 17, "mode": wafer, "high": wafer * 25 / 17}),
        Uncertain(("technology", "cpo_usd_per_gbps"), "lognormal",
                  {"median": cpo, "sigma": 0.5}),
        Uncertain(("technology", "electricity_usd_per_kwh"), "uniform",
                  {"low": kwh * 0.625, "high": kwh * 1.375}),
    ]  # fmt: skip
    return out + _deciding(t, context.get("workload", {}))


def _deciding(t: dict[str, Any], wl: dict[str, Any]) -> list[Any]:
    """The assumptions that decide the answer (see ``uncertain_assumptions``)."""
    from dse.model.uncertain import Uncertain

    def tech(name: str, dist: str, **params: float) -> Any:
        return Uncertain(("technology", name), dist, params)

    def scaled(name: str, low: float, high: float, mode: float | None = None) -> Any:
        v = float(t[name])
        if mode is None:
            return tech(name, "uniform", low=v * low, high=v * high)
        return tech(name, "triangular", low=v * low, mode=v * mode, high=v * high)

    out = [
        tech(f"{g}_usd_per_gb", "lognormal", median=float(t[f"{g}_usd_per_gb"]), sigma=0.25)
        for g in ("hbm3", "hbm3e", "hbm3e12", "hbm4")
        if f"{g}_usd_per_gb" in t
    ]
    floor = float(t["compute_busy_activity_floor"])
    out += [
        tech("host_usd_per_gpu_kw", "lognormal", median=float(t["host_usd_per_gpu_kw"]),
             sigma=0.3),
        scaled("host_power_per_gpu_watt", 0.7, 1.3),
        scaled("facility_capex_usd_per_kw", 10 / 11, 20 / 11),
        scaled("maintenance_fraction_per_year", 0.5, 1.5),
        scaled("hbm_pj_per_bit", 0.75, 2.0, 1.0),
        tech("compute_busy_activity_floor", "uniform", low=max(floor - 0.1, 0.0),
             high=min(floor + 0.1, 1.0)),
        scaled("cb_gemm_compute_efficiency", 0.85, min(1.15, 1 / float(
            t["cb_gemm_compute_efficiency"]))),
        scaled("cb_gemm_memory_efficiency", 0.85, min(1.15, 1 / float(
            t["cb_gemm_memory_efficiency"]))),
        tech("rack_silicon_mm2", "triangular", low=float(t["switched_domain_silicon_mm2"]),
             mode=float(t["rack_silicon_mm2"]), high=1.5 * float(t["rack_silicon_mm2"])),
    ]  # fmt: skip
    slo = wl.get("tpot_slo_s")
    if isinstance(slo, int | float) and not isinstance(slo, bool) and slo > 0:
        out.append(Uncertain(("workload", "tpot_slo_s"), "uniform",
                             {"low": 0.5 * slo, "high": 1.5 * slo}))  # fmt: skip
    return out


SCENARIOS = 64


def spread_rows(
    classes: pd.DataFrame,
    scratch: str,
    user_sets: list[str],
    *,
    basis: str = "cost",
    results: list[dict[str, Any]] | None = None,
    sensitivity: list[dict[str, Any]] | None = None,
) -> pd.DataFrame:
    """Each class's best design / the full class's best, per objective, over SCENARIOS paired
    Latin-hypercube draws of the uncertain assumptions: nominal, p10, p50, p90. With the class
    study's ``results``, also ``repicked_*``: in each scenario every class takes the best design
    of its own exact front under that scenario's prices and defect density (an architect who
    knew them), so a class is not judged by a design chosen for other conditions. Into
    ``sensitivity``, when given, the rank correlation of each ratio with each assumption
    (``sensitivity_rows``)."""
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
            g = sub[sub["objective"] == ALIAS.get(obj, obj)]
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
                    "objective": ALIAS.get(obj, obj),
                    "die_class": cls,
                    "ratio_vs_full": nominal,
                    **_percentiles(ratio, obj, ""),
                }
                if cls in repicked and "full" in repicked:
                    with np.errstate(all="ignore"):
                        again = repicked[cls] / repicked["full"]
                    # a scenario whose SLO or copper reach no design of a class's nominal front
                    # meets has no re-pick for it: the summary is over the other scenarios
                    both = np.isfinite(again)
                    row.update(_percentiles(again[both], obj, "repicked_"))
                    row["repicked_scenarios"] = int(both.sum())
                rows.append(row)
                if sensitivity is not None and cls != "full":
                    key = {"case": case, "objective": ALIAS.get(obj, obj), "die_class": cls}
                    sensitivity.extend({**key, **r} for r in sensitivity_rows(ratio, values))
    return pd.DataFrame(rows)


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 0..n-1 with ties given their mean rank."""
    order = np.argsort(x, kind="mergesort")
    r = np.empty(len(x))
    r[order] = np.arange(len(x), dtype=float)
    _, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inv, weights=r)
    return sums[inv] / counts[inv]


def sensitivity_rows(ratio: np.ndarray, values: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """Global sensitivity of a headline ratio: Spearman's rank correlation with each
    assumption over the scenarios (all varied at once), largest |rho| first; 0 where either
    does not vary."""
    y = np.asarray(ratio, float)
    ok = np.isfinite(y)
    out = []
    for name, x in values.items():
        x = np.asarray(x, float)
        both = ok & np.isfinite(x)
        rho = 0.0
        if both.sum() > 2:
            rx, ry = _ranks(x[both]), _ranks(y[both])
            sx, sy = rx.std(), ry.std()
            if sx > 0 and sy > 0:
                rho = float(np.mean((rx - rx.mean()) * (ry - ry.mean())) / (sx * sy))
        out.append({"parameter": name, "spearman_rho": rho})
    return sorted(out, key=lambda r: -abs(r["spearman_rho"]))


def _percentiles(ratio: np.ndarray, obj: str, prefix: str) -> dict[str, float]:
    if not len(ratio):  # no scenario to summarise
        return {f"{prefix}{k}": float("nan") for k in ("p10", "p50", "p90", "wins_fraction")}
    return {
        f"{prefix}p10": float(np.percentile(ratio, 10)),
        f"{prefix}p50": float(np.percentile(ratio, 50)),
        f"{prefix}p90": float(np.percentile(ratio, 90)),
        f"{prefix}wins_fraction": float(np.mean(ratio < 1 if minimized(obj) else ratio > 1)),
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
    # a scenario no front design meets is NaN by design (numpy warns of an all-NaN column)
    bad = np.inf if minimized(obj) else -np.inf
    kept = np.where(np.isnan(per), bad, per)
    best = kept.min(0) if minimized(obj) else kept.max(0)
    return np.where(np.isnan(per).all(0), np.nan, best)
