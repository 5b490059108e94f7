"""The cost model prices each distinct compute die of a batch once: every design still gets, bit
for bit, what it gets priced alone, and batches it cannot share work in are priced as they are."""

from __future__ import annotations

import numpy as np

from objectives.cost import _silicon_once_per_die, evaluate_cost
from objectives.cost.gpu import silicon_lines
from objectives.presets import resolve_context


def _design(area: np.ndarray) -> dict:
    d = resolve_context({"gpu": "h100-sxm", "cluster_size": 64})
    d["die_area_mm2"] = area
    return d


def test_repeated_dies_get_exactly_what_they_get_alone() -> None:
    rng = np.random.default_rng(0)
    area = rng.choice([120.0, 333.0, 600.0, 814.0], size=500)
    d = _design(area)
    once, plain = _silicon_once_per_die(d), silicon_lines(d)
    assert once.keys() == plain.keys()
    for k, v in plain.items():
        np.testing.assert_array_equal(once[k], v)
    for i in (0, 7, 499):  # and each design as a scalar evaluation
        alone = silicon_lines(_design(np.asarray(area[i])))
        assert float(once["die_yield"][i]) == float(alone["die_yield"])
        assert float(once["die_cost_usd"][i]) == float(alone["die_cost_usd"])


def test_batches_with_nothing_to_share_are_priced_as_they_are() -> None:
    area = np.linspace(100.0, 800.0, 300)  # all distinct
    d = _design(area)
    for k, v in silicon_lines(d).items():
        np.testing.assert_array_equal(_silicon_once_per_die(d)[k], v)
    # a technology constant that varies per design (a robust study's): no sharing, same result
    d = _design(np.full(100, 400.0))
    t = d["technology"]
    d["technology"] = {**t, "defect_density_per_cm2": np.linspace(0.05, 0.2, 100)}
    for k, v in silicon_lines(d).items():
        np.testing.assert_array_equal(_silicon_once_per_die(d)[k], v)
    out = evaluate_cost(d)
    assert np.all(np.diff(out["die_yield"]) < 0)  # more defects, lower yield, per design
