"""benchmarks/ab_metrics.py: what counts as a changed metric, and a real A/B of this tree
against itself (every metric of the shipped specs on a few designs) finding nothing."""

from __future__ import annotations

import numpy as np
import pytest

from tests.bench_scripts import load
from tests.conftest import ROOT


def test_differ_within_rtol_and_nan_equals_nan() -> None:
    ab = load("ab_metrics")
    old = {"a": np.array([1.0, np.nan]), "b": np.array([1.0]), "c": np.array([2.0, 3.0])}
    new = {
        "a": np.array([1.0 + 1e-13, np.nan]),
        "b": np.array([1.0 + 1e-9]),
        "c": np.array([2.0, 3.0, 4.0]),
    }
    assert ab.differ(old, new, 1e-12) == ["b", "c"]  # c: a shape change is a difference
    assert ab.differ(old, new, 1e-8) == ["c"]


@pytest.mark.slow
def test_this_tree_against_itself_is_identical(tmp_path) -> None:
    ab = load("ab_metrics")
    one = ab._metrics(ROOT, 64, tmp_path / "one.npz")
    two = ab._metrics(ROOT, 64, tmp_path / "two.npz")
    assert len(one) > 900 and any(k.startswith("validate_perf|") for k in one)
    assert any(k.startswith("direct|cost.") for k in one)  # evaluators called alone too
    assert ab.differ(one, two, 0.0) == []
