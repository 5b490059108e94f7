"""Where the answer flips (``breakeven.csv``): for each case and objective, the value of each
uncertain assumption at which the runner-up class ties the winner.

The winner's and the runner-up's best designs (``classes.csv``) are evaluated over a grid of
each assumption across its physical range (the p1-p99 of its distribution in
``spread.uncertain_assumptions``), every other assumption at its nominal value; where the
sign of (runner-up - winner) changes, the parity value is interpolated linearly between the
two grid points next to it, the crossing nearest the nominal value kept. Blank where the
runner-up never ties the winner within the range. A design that breaks a constraint at a
value (an SLO it no longer meets) counts as infinitely costly / zero tokens per joule there.
Imported by ``reproduce.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from classes import ALIAS, CASES, SEARCHED, Job, _sets, class_spec, minimized, objectives
from spread import uncertain_assumptions

#: Grid points over each assumption's range (the parity is interpolated between them).
POINTS = 41
COLUMNS = ["case", "objective", "winner", "runner_up", "parameter", "nominal", "parity_value"]


def metric_over(
    model: Any, params: dict[str, Any], u: Any, xs: np.ndarray, obj: str
) -> np.ndarray:
    """``obj`` of one design with assumption ``u`` at each of ``xs`` (constraints enforced)."""
    from dse.model.robust import evaluate_under

    model.uncertain = [u]
    # a workload field (the SLO) varied per design trips the serving batch solver's
    # broadcasting (objectives/perf/continuous.py): one evaluation per value there
    one_by_one = u.context_path[0] == "workload"
    with np.errstate(all="ignore"):
        m = evaluate_under(model, params, {u.name: xs}, strict=False, vectorized=not one_by_one)
    ok = np.ones(len(xs), bool)
    for v in model.violations(params, m):
        ok &= np.broadcast_to(np.asarray(v, float) <= 0, (len(xs),))
    bad = np.inf if minimized(obj) else 0.0
    return np.where(ok & np.isfinite(m[obj]), m[obj], bad)


def parity(xs: np.ndarray, lead: np.ndarray, nominal: float) -> float:
    """The x where ``lead`` (the winner's advantage, > 0 where it wins) crosses zero, linearly
    interpolated; the crossing nearest ``nominal``; NaN if it never does."""
    s = np.sign(lead)
    idx = np.nonzero(s[:-1] * s[1:] <= 0)[0]
    idx = [i for i in idx if not (s[i] == 0 and s[i + 1] == 0)]
    if not idx:
        return float("nan")
    found = []
    for i in idx:
        a, b = lead[i], lead[i + 1]
        if not (np.isfinite(a) and np.isfinite(b)) or a == b:
            found.append(float(xs[i] if a == 0 or not np.isfinite(b) else xs[i + 1]))
        else:
            found.append(float(xs[i] + (xs[i + 1] - xs[i]) * a / (a - b)))
    return min(found, key=lambda x: abs(x - nominal))


def _nominal(context: dict[str, Any], path: tuple[str, ...]) -> float:
    v: Any = context
    for key in path:
        v = v[key]
    return float(v)


def breakeven_rows(
    classes: pd.DataFrame,
    scratch: str,
    user_sets: list[str],
    *,
    basis: str = "cost",
    cases: Iterable[str] | None = None,
    parameters: Iterable[str] | None = None,
) -> pd.DataFrame:
    """breakeven.csv rows (COLUMNS) for every case (or ``cases``) and the first two objectives
    (cost per token, tokens per joule); ``parameters`` limits the assumptions by name."""
    from dse import api

    rows = []
    wanted = set(parameters) if parameters is not None else None
    for case in cases or CASES:
        sub = classes[(classes["case"] == case) & (classes["price_basis"] == basis)]
        for obj in objectives(case)[:2]:
            g = sub[sub["objective"] == ALIAS.get(obj, obj)].sort_values(
                "value", ascending=minimized(obj), kind="mergesort"
            )
            if len(g) < 2:
                continue
            win, run = g.iloc[0], g.iloc[1]
            models = {}
            for cls in (win["die_class"], run["die_class"]):
                job = Job(case, cls, basis)
                models[cls] = api.load(class_spec(job, Path(scratch)), sets=_sets(job, user_sets))
            pw = {p: win[p] for p in SEARCHED}
            pr = {p: run[p] for p in SEARCHED}
            for u in uncertain_assumptions(models[win["die_class"]].context):
                if wanted is not None and u.name not in wanted:
                    continue
                nominal = _nominal(models[win["die_class"]].context, u.context_path)
                lo, hi = (float(x) for x in u.ppf(np.array([0.01, 0.99])))
                xs = np.unique(np.append(np.linspace(lo, hi, POINTS), nominal))
                vw = metric_over(models[win["die_class"]], pw, u, xs, obj)
                vr = metric_over(models[run["die_class"]], pr, u, xs, obj)
                with np.errstate(divide="ignore", invalid="ignore"):  # inf: infeasible
                    lead = np.log(vr / vw) if minimized(obj) else np.log(vw / vr)
                rows.append(
                    {
                        "case": case,
                        "objective": ALIAS.get(obj, obj),
                        "winner": win["die_class"],
                        "runner_up": run["die_class"],
                        "parameter": u.name,
                        "nominal": nominal,
                        "parity_value": parity(xs, lead, nominal),
                    }
                )
    return pd.DataFrame(rows, columns=COLUMNS)
