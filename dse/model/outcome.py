"""What evaluating a design yields, and the one feasibility rule.

``evaluate -> Outcome(metrics, violations, feasible, objectives)``: one type for a trial
(:mod:`dse.model.guarded`), a vectorized batch of trials (:mod:`dse.model.batched`), a sweep
chunk, ``dse evaluate`` and the benchmarks. A batch outcome holds arrays of ``n`` designs and
``row(i)`` is design ``i``'s outcome.

A design is feasible when every constraint's violation is ``<= 0`` (Optuna's convention, see
:mod:`dse.spec.expr`); :func:`satisfied` is that rule for one constraint and everything that
decides feasibility (outcomes, stored trials via ``dse.search.stored.stored_outcome``, the
dashboard's and ``dse evaluate``'s per-constraint marks) asks it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


def satisfied(violation: Any) -> Any:
    """One constraint holds: its violation is ``<= 0`` (a bool, or a mask for an array)."""
    if isinstance(violation, np.ndarray):
        return violation <= 0.0
    return float(violation) <= 0.0


def feasible(violations: Iterable[float]) -> bool:
    """One design: every constraint holds (no constraints: feasible)."""
    return all(satisfied(v) for v in violations)


def feasible_mask(violations: Sequence[Any], n: int) -> np.ndarray:
    """A batch of ``n`` designs: each constraint's violations (scalars or arrays that broadcast
    to ``(n,)``), the same rule per design."""
    ok = np.ones(n, dtype=bool)
    for v in violations:
        ok &= np.broadcast_to(satisfied(np.asarray(v, dtype=float)), (n,))
    return ok


@dataclass(frozen=True)
class Outcome:
    """One design's (or a batch's) evaluation: every metric, each constraint's violation in
    spec order, the feasibility verdict, and the objectives' values in spec order."""

    metrics: dict[str, Any]
    violations: list[Any]
    feasible: Any
    objectives: list[Any]

    @classmethod
    def of(
        cls, metrics: Mapping[str, float], violations: Sequence[float], objectives: Sequence[str]
    ) -> Outcome:
        """One design's outcome from plain floats; ``objectives`` names the objective metrics."""
        m = {k: float(v) for k, v in metrics.items()}
        viol = [float(v) for v in violations]
        return cls(m, viol, feasible(viol), [m[k] for k in objectives])

    @classmethod
    def batch(
        cls,
        metrics: Mapping[str, Any],
        violations: Sequence[Any],
        objectives: Sequence[str],
        n: int,
    ) -> Outcome:
        """``n`` designs' outcome: every value broadcast to a float array of length ``n``."""

        def col(v: Any) -> np.ndarray:
            return np.broadcast_to(np.asarray(v, dtype=float), (n,))

        m = {k: col(v) for k, v in metrics.items()}
        viol = [col(v) for v in violations]
        return cls(m, viol, feasible_mask(viol, n), [m[k] for k in objectives])

    def row(self, i: int) -> Outcome:
        """Design ``i`` of a batch outcome, as one design's outcome (the batch's verdict)."""
        m = {k: float(v[i]) for k, v in self.metrics.items()}
        objectives = [float(v[i]) for v in self.objectives]
        return Outcome(
            m, [float(v[i]) for v in self.violations], bool(self.feasible[i]), objectives
        )
