"""One design as a reader wants it: feasible or not (each violated constraint named), then the
objectives, then the other metrics grouped by evaluator (``dse evaluate``, ``dse compare``).

``--metric`` patterns select metrics: a full name (``cost.usd_per_mtok``), an evaluator prefix
(``cost.`` or ``cost``) or a glob (``*watt*``); a pattern that matches nothing is an error that
lists close names.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dse.errors import DesignError
from dse.model import outcome
from dse.spec.messages import did_you_mean


def select_metrics(names: Sequence[str], patterns: Iterable[str] | None) -> list[str]:
    """The names matching any pattern, in their original order (all names when none given)."""
    pats = [p.strip() for p in patterns or [] if p.strip()]
    if not pats:
        return list(names)
    chosen: set[str] = set()
    evaluators = {n.split(".", 1)[0] for n in names}
    for p in pats:
        if p in evaluators:
            p = p + "."
        hit = [
            n
            for n in names
            if n == p or (p.endswith(".") and n.startswith(p)) or fnmatch.fnmatchcase(n, p)
        ]
        if not hit:
            hint = did_you_mean(p, names) or f"metrics start with: {', '.join(sorted(evaluators))}"
            raise DesignError(f"--metric {p!r}: no such metric; {hint.strip()}")
        chosen.update(hit)
    return [n for n in names if n in chosen]


def constraint_rows(
    model: Any, params: Mapping[str, Any], metrics: Mapping[str, float]
) -> list[dict[str, Any]]:
    """Each constraint of the spec on one design: what it measures, its violation, verdict."""
    env = model.env(params, metrics)
    rows = []
    for expr in model.constraints:
        violation = float(expr.violation(env))
        rows.append(
            {
                "constraint": expr.source,
                "value": float(expr.value(env)),
                "violation": violation,
                "satisfied": outcome.satisfied(violation),
            }
        )
    return rows


def design_view(
    model: Any,
    params: Mapping[str, Any],
    metrics: Mapping[str, float],
    *,
    select: Iterable[str] | None = None,
) -> dict[str, Any]:
    """Feasibility, violated constraints, objectives and grouped metrics of one design."""
    constraints = constraint_rows(model, params, metrics)
    shown = select_metrics(list(metrics), select)
    objectives = [o for o in model.objective_names if o in shown]
    groups: dict[str, list[str]] = {}
    for m in shown:
        if m not in objectives:
            groups.setdefault(m.split(".", 1)[0], []).append(m)
    directions = {o.metric: o.direction for o in model.spec.objectives}
    return {
        "params": dict(params),
        "feasible": outcome.feasible([c["violation"] for c in constraints]),
        "violated": [c["constraint"] for c in constraints if not c["satisfied"]],
        "constraints": constraints,
        "objectives": {
            o: {"value": metrics[o], "unit": _unit(model, o), "direction": directions.get(o)}
            for o in objectives
        },
        "groups": groups,
        "metrics": {m: metrics[m] for m in shown},
        "units": {m: _unit(model, m) for m in shown},
    }


def _unit(model: Any, name: str) -> str:
    info = model.metrics.get(name)
    return info.unit if info else ""
