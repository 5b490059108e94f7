"""The conformance check users run on their evaluators: built-ins pass, broken ones fail."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dse.errors import ConformanceError
from dse.model.registry import builtin_evaluators
from dse.testing import check_evaluator
from objectives import resolve_context

DESIGN = resolve_context({"gpu": "h100-sxm", "cluster_size": 256})
BATCH = {
    "die_area_mm2": [150.0, 400.0, 814.0],
    "hbm_stacks_per_die": [1, 3, 6],
    "cluster_size": [64, 256, 4096],
}


@pytest.mark.parametrize("name", ["cost", "perf", "availability"])
def test_builtins_pass_the_conformance_check(name: str) -> None:
    ev = builtin_evaluators()[name]
    metrics = check_evaluator(ev.fn, DESIGN, batch=BATCH)
    assert len(metrics) == len(ev.metrics or {})


def test_non_mapping_fails() -> None:
    with pytest.raises(ConformanceError, match="expected a mapping"):
        check_evaluator(lambda d: [1.0], DESIGN)


def test_nan_fails() -> None:
    with pytest.raises(ConformanceError, match="not finite"):
        check_evaluator(lambda d: {"x": math.nan}, DESIGN)


def test_undeclared_metric_fails() -> None:
    def f(d):
        return {"x": 1.0, "y": 2.0}

    f.metrics = {"x": ("1", "one")}
    with pytest.raises(ConformanceError, match="undeclared: \\['y'\\]"):
        check_evaluator(f, DESIGN)


def test_vectorized_claim_is_checked_against_scalar_calls() -> None:
    def wrong(d):
        a = np.asarray(d["die_area_mm2"], dtype=float)
        return {"x": a if a.ndim == 0 else a[::-1]}  # batch order scrambled

    wrong.vectorized = True
    with pytest.raises(ConformanceError, match="batch element 0"):
        check_evaluator(wrong, DESIGN, batch={"die_area_mm2": [1.0, 2.0, 3.0]})
