"""Robust objectives over a spec's uncertain assumptions (the distributions in ``fixed``,
documented in :mod:`dse.model.uncertain`).

``collect_model`` replaces each distribution by its nominal value before the presets are
resolved and keeps the distributions in ``StudyModel.uncertain``. ``robust_model`` then wraps a
compiled model so every design is evaluated under K seeded samples of all the assumptions at once
(one batch call with the samples on the batch axis) and the objectives become a statistic of the
K values. Samples are Latin-hypercube stratified and drawn once per study from ``seed``, so every
design sees the same K scenarios (common random numbers) and a re-run reproduces every value.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from dse.errors import DesignError, DseError, EvaluationError
from dse.model.study_model import StudyModel, midpoint, violation
from dse.model.uncertain import (
    DISTRIBUTIONS,
    Uncertain,
    context_with,
    extract_uncertain,
    sample,
)

__all__ = [
    "DISTRIBUTIONS",
    "STATISTICS",
    "RobustStudyModel",
    "Uncertain",
    "evaluate_under",
    "extract_uncertain",
    "reduce",
    "robust_model",
    "robust_study_name",
]

STATISTICS = ("mean", "p10", "p90", "pessimistic", "optimistic")


def _batch_params(model: StudyModel, params: Mapping[str, Any], n: int) -> dict[str, Any]:
    """Design params with every numeric value repeated n times (the sample axis).

    StudyModel.evaluate takes its batch shape from the params, so a design with no numeric
    param borrows a numeric top-level context value to carry the axis.
    """
    out: dict[str, Any] = dict(params)
    carried = False
    for k, v in params.items():
        if isinstance(v, int | float | np.number) and not isinstance(v, bool):
            out[k] = np.full(n, v)
            carried = True
    if not carried:
        for k, v in model.context.items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                out[k] = np.full(n, v)
                break
        else:
            raise DesignError("a robust evaluation needs at least one numeric design value")
    return out


def evaluate_under(
    model: StudyModel,
    params: Mapping[str, Any],
    values: Mapping[str, np.ndarray],
    *,
    vectorized: bool = True,
    strict: bool = True,
) -> dict[str, np.ndarray]:
    """Every metric of one design under n scenarios (``values``: name -> n values), shape (n,).

    Vectorized: the scenarios go on the batch axis of the design and the evaluators run once.
    Otherwise (an evaluator that needs a scalar assumption) one evaluation per scenario.
    """
    uncertain = [u for u in model.uncertain if u.name in values]
    n = len(next(iter(values.values()))) if values else 1
    base = copy.copy(model)
    if vectorized:
        base.context = context_with(model.context, uncertain, values)
        return StudyModel.evaluate(base, _batch_params(model, params, n), strict=strict)
    rows: list[dict[str, np.ndarray]] = []
    for i in range(n):
        base.context = context_with(
            model.context, uncertain, {k: float(v[i]) for k, v in values.items()}
        )
        rows.append(StudyModel.evaluate(base, params, strict=strict))
    return {k: np.array([float(r[k]) for r in rows]) for k in rows[0]}


def vectorizable(
    model: StudyModel, params: Mapping[str, Any], values: Mapping[str, np.ndarray]
) -> bool:
    """True if a batch evaluation over the scenarios equals the per-scenario loop.

    An evaluator may broadcast some context values but read others as scalars; a batch that
    raises or disagrees with the loop means: loop.
    """
    few = {k: v[: min(len(v), 3)] for k, v in values.items()}
    try:
        fast = evaluate_under(model, params, few, vectorized=True, strict=False)
    except (EvaluationError, DseError, ValueError):
        return False
    slow = evaluate_under(model, params, few, vectorized=False, strict=False)
    return all(
        k in fast and fast[k].shape == v.shape and np.allclose(fast[k], v, equal_nan=True)
        for k, v in slow.items()
    )


def reduce(samples: np.ndarray, statistic: str, *, maximize: bool) -> float:
    """One number from an objective's samples.

    ``p10``/``p90`` are the 10th/90th percentiles of the metric itself, whatever its direction.
    ``pessimistic`` is the bad tail for the objective's direction: p10 of a maximised metric,
    p90 of a minimised one (the value the design beats in 90 % of scenarios);
    ``optimistic`` is the other tail.
    """
    a = np.asarray(samples, dtype=float)
    if statistic == "mean":
        return float(a.mean())
    low, high = ("p10", "p90") if maximize else ("p90", "p10")
    tail = {"pessimistic": low, "optimistic": high}.get(statistic, statistic)
    return float(np.percentile(a, {"p10": 10, "p90": 90}[tail]))  # robust_model checked it


# -- the robust study ----------------------------------------------------------------------------


def robust_study_name(study: str, k: int, statistic: str) -> str:
    """Robust results sit beside the nominal study: ``<study>-robust-<statistic>-k<K>``."""
    return f"{study}-robust-{statistic}-k{k}"


@dataclass
class RobustStudyModel(StudyModel):
    """A StudyModel whose metrics are a statistic over K scenarios of the assumptions.

    Every metric ``m`` of a trial is the statistic of its K sampled values; ``nominal.m`` is the
    value under the nominal assumptions, and each objective also gets ``robust.m.mean|p10|p90|
    std``. A trial is feasible only if every constraint holds in the nominal case and in every
    scenario.
    """

    k: int = 32
    statistic: str = "mean"
    seed: int = 0
    samples: dict[str, np.ndarray] = field(default_factory=dict)
    vectorized: bool = True
    nominal_study: str = ""
    _last: tuple[Any, dict[str, np.ndarray]] | None = None

    def lock_extras(self) -> dict[str, Any]:
        """What spec.lock.yaml records about the robust evaluation."""
        return {
            "robust": {
                "k": self.k,
                "statistic": self.statistic,
                "seed": self.seed,
                "vectorized": self.vectorized,
                "nominal_study": self.nominal_study,
            }
        }

    def scenario_metrics(self, params: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Metrics of shape (K + 1,): column 0 nominal, then the K scenarios."""
        key = tuple(sorted((k, repr(v)) for k, v in params.items()))
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        values = {
            u.name: np.concatenate([[u.nominal], self.samples[u.name]]) for u in self.uncertain
        }
        try:
            out = evaluate_under(self, params, values, vectorized=self.vectorized)
        except EvaluationError:
            if not self.vectorized:
                raise
            out = evaluate_under(self, params, values, vectorized=False)
        self._last = (key, out)
        return out

    def evaluate(self, params: Mapping[str, Any], *, strict: bool = True) -> dict[str, np.ndarray]:
        if any(np.ndim(v) for v in params.values()):
            raise DesignError("a robust study evaluates one design at a time, not a batch")
        per = self.scenario_metrics(params)
        maximize = dict(zip(self.objective_names, self.maximize, strict=True))
        out: dict[str, np.ndarray] = {}
        for m, a in per.items():
            out[m] = np.asarray(reduce(a[1:], self.statistic, maximize=maximize.get(m, False)))
        for m, a in per.items():
            out[f"nominal.{m}"] = np.asarray(a[0])
        for m in self.objective_names:
            s = per[m][1:]
            out[f"robust.{m}.mean"] = np.asarray(s.mean())
            out[f"robust.{m}.p10"] = np.asarray(np.percentile(s, 10))
            out[f"robust.{m}.p90"] = np.asarray(np.percentile(s, 90))
            out[f"robust.{m}.std"] = np.asarray(s.std())
        return out

    def violations(self, params: Mapping[str, Any], metrics: Mapping[str, Any]) -> list[Any]:
        per = self.scenario_metrics(params)
        worst = [-math.inf] * len(self.constraints)
        for i in range(len(next(iter(per.values())))):
            env = self.env(params, {m: float(a[i]) for m, a in per.items()})
            for j, c in enumerate(self.constraints):
                worst[j] = max(worst[j], float(violation(c, env)))
        return worst


def robust_model(
    model: StudyModel, *, k: int, statistic: str, seed: int | None = None
) -> RobustStudyModel:
    """Wrap a compiled spec for ``dse run --robust K``; its study name gets a robust suffix."""
    if statistic not in STATISTICS:
        raise DseError(f"--statistic {statistic!r}: valid choices: {', '.join(STATISTICS)}")
    if k < 2:
        raise DseError(f"--robust {k}: needs at least 2 samples")
    if not model.uncertain:
        raise DseError(
            f"{model.loaded.path}: --robust needs uncertain assumptions; write a fixed value as "
            "{dist: normal|lognormal|uniform|triangular, ...} (see docs/robust.md)"
        )
    seed = (model.spec.search.seed or 0) if seed is None else seed
    spec = model.spec.model_copy(
        update={"study": robust_study_name(model.spec.study, k, statistic)}
    )
    loaded = copy.copy(model.loaded)
    object.__setattr__(loaded, "spec", spec)
    rm = RobustStudyModel(
        **{f.name: getattr(model, f.name) for f in fields(StudyModel)} | {"loaded": loaded},
        k=k,
        statistic=statistic,
        nominal_study=model.spec.study,
        seed=seed,
        samples=sample(model.uncertain, k, seed=seed),
    )
    probe = {n: midpoint(p) for n, p in model.spec.space.items()}
    rm.vectorized = vectorizable(model, probe, rm.samples)
    return rm
