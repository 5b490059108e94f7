"""One-at-a-time sensitivity of a design's objectives to its assumptions (``dse sensitivity``).

Each assumption is swung to a low and a high value while every other one stays nominal, and the
change of each objective is recorded: a tornado table, sorted by swing. The swings are

- the p10 and p90 of the distribution, for every assumption the spec declares uncertain
  (``{dist: ...}`` in ``fixed``, see :mod:`dse.model.uncertain`);
- otherwise (no distribution in the spec) -20 % and +20 % of every constant the selected
  evaluators list through their optional ``assumptions(context)`` hook, kept inside the
  field's valid range as the evaluators' ``fixed_schema`` declares it (a markup never goes
  below cost, a fraction never below 0); a share bounded by [0, 1] moves by 20 % of the nearer
  end, and zeros are skipped (:func:`default_range`). An evaluator without the hook adds none.

All 2 x N scenarios (plus the nominal one) are evaluated in one batch call when the evaluators
broadcast the assumptions; otherwise one call per scenario.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from dse.errors import DseError
from dse.model.registry import domains_of
from dse.model.robust import Uncertain, evaluate_under, vectorizable
from dse.model.study_model import StudyModel
from dse.spec.messages import choices_text, did_you_mean

__all__ = [
    "METHODS",
    "Bounds",
    "Swing",
    "assumptions_of",
    "assumptions_source",
    "default_assumptions",
    "default_range",
    "field_bounds",
    "sensitivity",
]

DEFAULT_RELATIVE_SWING = 0.2
#: The methods of ``dse sensitivity``: one at a time, then the global ones (SALib).
METHODS = ("tornado", "sobol", "morris")


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


def _resolve(node: Any, defs: dict[str, Any]) -> list[dict[str, Any]]:
    """A JSON Schema node's alternatives (``anyOf``/``oneOf``/``$ref`` followed)."""
    if not isinstance(node, dict):
        return []
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _resolve(defs.get(ref.rsplit("/", 1)[1]), defs)
    alts = node.get("anyOf") or node.get("oneOf")
    if alts:
        return [n for a in alts for n in _resolve(a, defs)]
    return [node]


@dataclass(frozen=True)
class Bounds:
    """A fixed field's valid range, as its evaluator's ``fixed_schema`` declares it."""

    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False
    integer: bool = False

    def clip(self, v: float, *, toward: float) -> float:
        """``v`` inside the range; an open end is approached halfway from ``toward``."""
        if v < self.low or (self.low_open and v <= self.low):
            v = (self.low + toward) / 2 if self.low_open else self.low
        return min(v, self.high)


def field_bounds(model: StudyModel, path: tuple[str, ...]) -> Bounds:
    """The valid range of the fixed value at ``path`` (unbounded when no evaluator says)."""
    for dom in domains_of(model.evaluators.values()):
        if dom.fixed_schema is None:
            continue
        schema = _fixed_schema(dom.fixed_schema)
        defs = schema.get("$defs", {})
        nodes = [schema]
        for key in path:
            nodes = [
                n["properties"][key]
                for alt in nodes
                for n in _resolve(alt, defs)
                if isinstance(n.get("properties"), dict) and key in n["properties"]
            ]
        leaves = [n for node in nodes for n in _resolve(node, defs) if "type" in n]
        numeric = [n for n in leaves if n.get("type") in ("number", "integer")]
        if numeric:
            n = numeric[0]
            low, low_open = -math.inf, False
            if "minimum" in n:
                low = float(n["minimum"])
            if "exclusiveMinimum" in n and float(n["exclusiveMinimum"]) >= low:
                low, low_open = float(n["exclusiveMinimum"]), True
            return Bounds(low, float(n.get("maximum", math.inf)), low_open, n["type"] == "integer")
    return Bounds()


@cache
def _fixed_schema(hook: Any) -> dict[str, Any]:
    """One evaluator's ``fixed_schema()``, built once per process (it is pure)."""
    return dict(hook())


def default_range(v: float, bounds: Bounds) -> tuple[float, float]:
    """The default low and high of a constant: +/-20 % of its value, kept inside its valid
    range. A share (a field bounded by [0, 1]: a yield, efficiency or fraction) moves by 20 %
    of the smaller of its value and its shortfall from 1, so 0.03 swings to 0.024-0.036 and
    0.98 to 0.976-0.984; an integer swings to the nearest whole numbers around those ends."""
    if bounds.low == 0 and bounds.high == 1:
        d = DEFAULT_RELATIVE_SWING * min(v, 1 - v)
        lo, hi = v - d, v + d
    else:
        lo, hi = sorted((v * (1 - DEFAULT_RELATIVE_SWING), v * (1 + DEFAULT_RELATIVE_SWING)))
    if bounds.integer:
        lo, hi = float(math.floor(lo)), float(math.ceil(hi))
    return bounds.clip(lo, toward=v), bounds.clip(hi, toward=v)


def assumptions_of(
    model: StudyModel, *, only: list[str] | None = None
) -> list[tuple[Uncertain, float, float]]:
    """(assumption, low, high): the spec's distributions' p10/p90 when it declares any (a
    robust spec's uncertain assumptions), else the evaluators' default assumptions swung by
    :func:`default_range`. ``only``: these assumptions (full dotted name or last part)."""
    if model.uncertain:
        rows = [(u, float(u.ppf(0.1)), float(u.ppf(0.9))) for u in model.uncertain]
    else:
        rows = []
        for key, v in default_assumptions(model).items():
            if v == 0:
                continue
            path = tuple(key.split("."))
            lo, hi = default_range(float(v), field_bounds(model, path))
            if hi == lo:
                continue
            # triangular only so that the nominal (its mode) is the constant itself
            u = Uncertain(path, "triangular", {"low": lo, "mode": v, "high": hi})
            rows.append((u, lo, hi))
    if only is None:
        return rows
    names = [u.name for u, _, _ in rows]
    wanted = set()
    for name in only:
        hit = [n for n in names if n == name or n.rsplit(".", 1)[-1] == name]
        if not hit:
            short = {n.rsplit(".", 1)[-1]: n for n in names}
            close = did_you_mean(name, names) or did_you_mean(name, short)
            for part, full in short.items():  # name the whole assumption
                close = close.replace(f"'{part}'", f"'{full}'")
            raise DseError(
                f"--only {name!r}: no such assumption ({close}"
                f"{len(names)} are swung; dse sensitivity --json lists them)"
            )
        wanted.update(hit)
    return [r for r in rows if r[0].name in wanted]


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
    model: StudyModel,
    params: dict[str, Any],
    *,
    metrics: list[str] | None = None,
    only: list[str] | None = None,
) -> dict[str, list[Swing]]:
    """Tornado rows per metric (default: the spec's objectives), largest swing first;
    ``only`` swings just the named assumptions."""
    metrics = checked_metrics(model, metrics)
    rows = assumptions_of(model, only=only)
    if not rows:
        raise DseError("no assumption to swing: the spec declares no distribution and no number")
    n = 1 + 2 * len(rows)
    values: dict[str, np.ndarray] = {}
    for i, (u, lo, hi) in enumerate(rows):
        col = np.full(n, u.nominal)
        col[1 + 2 * i], col[2 + 2 * i] = lo, hi
        values[u.name] = col
    scenario_model = scenario_model_of(model, [u for u, _, _ in rows])
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


def scenario_model_of(model: StudyModel, assumptions: list[Uncertain]) -> StudyModel:
    """``model`` (a plain StudyModel, even of a robust study) whose uncertain assumptions are
    ``assumptions``: what both sensitivity methods evaluate their scenarios with."""
    fields = {k: getattr(model, k) for k in StudyModel.__dataclass_fields__}
    return StudyModel(**{**fields, "uncertain": assumptions})
