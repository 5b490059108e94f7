"""``dse evaluate --simulate``: the Monte Carlo runs of the evaluators that offer one (their
``simulate`` hook), summarised per quantity."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dse.errors import DseError
from dse.model.study_model import StudyModel


def simulation_summary(
    model: StudyModel, params: Mapping[str, Any], *, runs: int, years: float, seed: int
) -> dict[str, dict[str, float]]:
    """``dse evaluate --simulate``: each Monte Carlo quantity's mean, std, p1/p50/p99, range,
    from every evaluator with a ``simulate(design, years=, runs=, seed=)`` attribute."""
    design = model.design(dict(params))
    summary: dict[str, dict[str, float]] = {}
    for ev in model.evaluators.values():
        fn = ev.simulate
        if fn is None:
            continue
        try:
            results = fn(design, years=years, runs=runs, seed=seed)
        except ValueError as exc:  # the model's refusal (e.g. too many events for memory)
            raise DseError(f"--simulate: {getattr(exc, 'message', exc)}") from None
        for key, samples in results.items():
            a = np.asarray(samples, dtype=float)
            summary[f"{ev.name}.{key}"] = {
                "mean": float(a.mean()),
                "std": float(a.std()),
                "p1": float(np.percentile(a, 1)),
                "p50": float(np.percentile(a, 50)),
                "p99": float(np.percentile(a, 99)),
                "min": float(a.min()),
                "max": float(a.max()),
            }
    if not summary:
        raise DseError("no evaluator of this spec provides a Monte Carlo simulation")
    return summary
