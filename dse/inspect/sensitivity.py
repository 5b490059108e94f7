"""One-at-a-time sensitivity of a design's objectives to its assumptions (``dse sensitivity``).

Each assumption is swung to a low and a high value while every other one stays nominal, and the
change of each objective is recorded: a tornado table, sorted by swing. The swings are

- the p10 and p90 of the distribution, for every assumption the spec declares uncertain
  (``{dist: ...}`` in ``fixed``, see :mod:`dse.model.uncertain`);
- otherwise (no distribution in the spec) -20 % and +20 % of every constant the selected
  evaluators list through their optional ``assumptions(context)`` hook
  (:class:`dse.model.registry.EvaluatorFunction`), integers included; zeros are skipped, and a
  value in (0, 1] (a yield, efficiency or fraction) swings up to 1 at most. An evaluator
  without the hook adds none.

All 2 x N scenarios (plus the nominal one) are evaluated in one batch call when the evaluators
broadcast the assumptions; otherwise one call per scenario.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.errors import DseError
from dse.model.registry import domains_of
from dse.model.robust import Uncertain, evaluate_under, vectorizable
from dse.model.study_model import StudyModel
from dse.spec.messages import choices_text

__all__ = [
    "Swing",
    "assumptions_of",
    "assumptions_source",
    "default_assumptions",
    "sensitivity",
]

DEFAULT_RELATIVE_SWING = 0.2


@dataclass(frozen=True)
class Swing:
    """How one metric moves when one assumption goes from its low to its high value."""

    assumption: str
    low: float
    high: float
    metric_at_low: float
    metric_at_high: float
    nominal: float

    @property
    def swing(self) -> float:
        return abs(self.metric_at_high - self.metric_at_low)

    @property
    def swing_fraction(self) -> float:
        return self.swing / abs(self.nominal) if self.nominal else float("inf")


def default_assumptions(model: StudyModel) -> dict[str, float]:
    """``{dotted path: nominal}``: the ``assumptions(context)`` of the selected evaluators'
    domains, merged."""
    out: dict[str, float] = {}
    for domain in domains_of(model.evaluators.values()):
        if domain.assumptions is None:
            continue
        for key, v in domain.assumptions(model.context).items():
            if not isinstance(v, bool) and isinstance(v, int | float):
                out.setdefault(str(key), v)
    return out


def assumptions_source(model: StudyModel) -> str:
    """Where the assumptions come from, in words: "the spec's distributions", or the groups
    of the evaluators' default assumptions and the swing ("group +/-20 %", say)."""
    if model.uncertain:
        return "the spec's distributions"
    groups = sorted({u.path[0] for u, _, _ in assumptions_of(model)})
    return f"{', '.join(groups) or 'no constants'} +/-{DEFAULT_RELATIVE_SWING * 100:g} %"


#: Names of constants that are shares of a whole (at most 1): yields, efficiencies, fractions.
FRACTION_WORDS = ("yield", "efficiency", "fraction", "utilization", "utilisation")


def _is_fraction(key: str) -> bool:
    return any(w in key.rsplit(".", 1)[-1] for w in FRACTION_WORDS)


def assumptions_of(model: StudyModel) -> list[tuple[Uncertain, float, float]]:
    """(assumption, low, high): declared distributions' p10/p90, else the evaluators' default
    assumptions +/-20 %."""
    if model.uncertain:
        return [(u, float(u.ppf(0.1)), float(u.ppf(0.9))) for u in model.uncertain]
    out = []
    for key, v in default_assumptions(model).items():
        if v == 0:
            continue
        if 0 < v < 1 and _is_fraction(key):  # its shortfall from 1 is what is uncertain
            gap = 1.0 - v
            lo, hi = v - DEFAULT_RELATIVE_SWING * gap, min(v + DEFAULT_RELATIVE_SWING * gap, 1.0)
        else:
            lo, hi = sorted((v * (1 - DEFAULT_RELATIVE_SWING), v * (1 + DEFAULT_RELATIVE_SWING)))
            if 0 < v <= 1:  # a share by another name (an efficiency) cannot pass 1 either
                hi = min(hi, 1.0)
        if hi == lo:
            continue
        # triangular only so that the nominal (its mode) is the constant itself
        path = tuple(key.split("."))
        u = Uncertain(path, "triangular", {"low": lo, "mode": v, "high": hi})
        out.append((u, lo, hi))
    return out


def checked_metrics(model: StudyModel, metrics: list[str] | None) -> list[str]:
    """The metrics asked for (default: the spec's objectives), each one the model reports."""
    metrics = metrics or model.objective_names
    unknown = [m for m in metrics if m not in model.metrics]
    if unknown:
        raise DseError(
            f"--metric {unknown[0]!r}: unknown metric (valid choices: "
            f"{choices_text(model.metrics)})"
        )
    return metrics


def sensitivity(
    model: StudyModel, params: dict[str, Any], *, metrics: list[str] | None = None
) -> dict[str, list[Swing]]:
    """Tornado rows per metric (default: the spec's objectives), largest swing first."""
    metrics = checked_metrics(model, metrics)
    rows = assumptions_of(model)
    if not rows:
        raise DseError("no assumption to swing: the spec declares no distribution and no number")
    n = 1 + 2 * len(rows)
    values: dict[str, np.ndarray] = {}
    for i, (u, lo, hi) in enumerate(rows):
        col = np.full(n, u.nominal)
        col[1 + 2 * i], col[2 + 2 * i] = lo, hi
        values[u.name] = col
    probe = dict(model.__dict__)
    probe["uncertain"] = [u for u, _, _ in rows]
    scenario_model = StudyModel(**{k: probe[k] for k in StudyModel.__dataclass_fields__})
    fast = vectorizable(scenario_model, params, values)
    out = evaluate_under(scenario_model, params, values, vectorized=fast, strict=False)
    table: dict[str, list[Swing]] = {}
    for m in metrics:
        a = out[m]
        swings = [
            Swing(u.name, lo, hi, float(a[1 + 2 * i]), float(a[2 + 2 * i]), float(a[0]))
            for i, (u, lo, hi) in enumerate(rows)
        ]
        table[m] = sorted(swings, key=lambda s: (-s.swing, s.assumption))
    return table
