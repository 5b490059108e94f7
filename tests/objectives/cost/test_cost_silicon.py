"""Wafer geometry, yield models and known-good-die cost against hand computations of the
textbook formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest

from objectives.cost.silicon import (
    YIELD_MODELS,
    die_yield,
    gross_dies_per_wafer,
    known_good_die_cost,
    reticle_fits,
    yield_negative_binomial,
    yield_poisson,
    yield_seeds,
)
from objectives.errors import ContextError


def dpw(area, aspect=1.0, edge=0.0, scribe=0.0, diameter=300.0):
    return float(
        gross_dies_per_wafer(
            area, aspect, wafer_diameter_mm=diameter, edge_exclusion_mm=edge, scribe_mm=scribe
        )
    )


# Hennessy & Patterson, Computer Architecture, ch. 1 (cost of an IC):
# DPW = pi (d/2)^2 / A - pi d / sqrt(2A), square dies, no scribe.
@pytest.mark.parametrize(
    ("area", "edge", "expected"),
    [
        (814, 0, 63.5),
        (814, 3, 60.5),
        (814, 5, 58.6),
        (858, 0, 59.6),
        (858, 3, 56.8),
        (858, 5, 55.0),
        (826, 0, 62.4),
        (200, 0, 306.3),
        (200, 3, 293.3),
        (200, 5, 284.7),
        (203.5, 0, 300.6),
    ],
)
def test_dies_per_wafer_reference_table(area, edge, expected):
    assert dpw(area, edge=edge) == pytest.approx(expected, abs=0.051)


def test_dies_per_wafer_hand_computation_with_scribe_and_rectangle():
    # 26 x 31.3 mm die (814 mm2), 0.2 mm scribe, 3 mm edge: pitch 31.5 x 26.2 on d = 294 mm.
    # pi 294^2 / (4 x 825.3) = 82.257; pi 294 (31.5 + 26.2) / (2 sqrt2 x 825.3) = 22.831.
    area = 31.3 * 26.0
    got = dpw(area, 31.3 / 26.0, edge=3, scribe=0.2)
    assert got == pytest.approx(82.257 - 22.831, abs=0.01)


def test_rectangle_formula_reduces_to_square_and_is_symmetric():
    assert dpw(400, 1.0) == pytest.approx(math.pi * 150**2 / 400 - math.pi * 300 / math.sqrt(800))
    assert dpw(400, 2.5, edge=3, scribe=0.2) == pytest.approx(
        dpw(400, 1 / 2.5, edge=3, scribe=0.2)
    )
    # Elongated dies lose more at the edge; scribe and edge exclusion cost dies.
    assert dpw(400, 4.0) < dpw(400, 2.0) < dpw(400, 1.0)
    assert dpw(400, scribe=0.2) < dpw(400) and dpw(400, edge=5) < dpw(400, edge=3)


def _best_grid_count(w: float, h: float, diameter: float) -> int:
    """Exact count of w x h cells inside a circle, best of 8 x 8 grid offsets (independent)."""
    r = diameter / 2
    best = 0
    ix = np.arange(-math.ceil(r / w) - 1, math.ceil(r / w) + 1)
    iy = np.arange(-math.ceil(r / h) - 1, math.ceil(r / h) + 1)
    for ox in np.linspace(0, 1, 8, endpoint=False):
        for oy in np.linspace(0, 1, 8, endpoint=False):
            x, y = np.meshgrid((ix + ox) * w, (iy + oy) * h)
            inside = np.ones_like(x, dtype=bool)
            for dx in (0, w):
                for dy in (0, h):
                    inside &= (x + dx) ** 2 + (y + dy) ** 2 <= r * r
            best = max(best, int(inside.sum()))
    return best


@pytest.mark.parametrize(("area", "aspect"), [(814, 1.0), (814, 1.21), (203.5, 2.0), (400, 6.0)])
def test_formula_is_a_conservative_estimate_of_an_exact_placement(area, aspect):
    w, h = math.sqrt(area * aspect) + 0.2, math.sqrt(area / aspect) + 0.2
    exact = _best_grid_count(w, h, 294.0)
    assert 0.85 * exact <= dpw(area, aspect, edge=3, scribe=0.2) <= exact


def test_reticle_fits():
    assert reticle_fits(858, 33 / 26) == 1.0
    assert reticle_fits(858, 26 / 33) == 1.0  # either orientation of the ratio
    assert reticle_fits(814, 1.0) == 0.0  # 28.5 mm square exceeds the 26 mm side
    assert reticle_fits(814, 1.21) == 1.0  # 31.4 x 25.9 mm
    assert reticle_fits(814, 1.40) == 0.0  # 33.8 mm long edge
    assert reticle_fits(203.5, 1.0) == 1.0
    assert reticle_fits(900, 33 / 26) == 0.0
    np.testing.assert_array_equal(reticle_fits(np.array([100, 1000]), 1.0), [1.0, 0.0])


# Yields computed by hand from the Poisson, Murphy, Seeds and negative-binomial formulas
# (rounded to 3 decimals).
@pytest.mark.parametrize(
    ("area", "d0", "poisson", "murphy", "seeds", "nb3", "nb10"),
    [
        (814, 0.07, 0.566, 0.581, 0.637, 0.594, 0.575),
        (814, 0.10, 0.443, 0.468, 0.551, 0.487, 0.457),
        (858, 0.10, 0.424, 0.451, 0.538, 0.470, 0.439),
        (203.5, 0.07, 0.867, 0.869, 0.875, 0.870, 0.868),
        (203.5, 0.10, 0.816, 0.819, 0.831, 0.821, 0.818),
    ],
)
def test_yields_reference_table(area, d0, poisson, murphy, seeds, nb3, nb10):
    tol = 0.0006
    assert die_yield(area, d0, "poisson") == pytest.approx(poisson, abs=tol)
    assert die_yield(area, d0, "murphy") == pytest.approx(murphy, abs=tol)
    assert die_yield(area, d0, "seeds") == pytest.approx(seeds, abs=tol)
    assert die_yield(area, d0, "negative_binomial", 3.0) == pytest.approx(nb3, abs=tol)
    assert die_yield(area, d0, "negative_binomial", 10.0) == pytest.approx(nb10, abs=tol)


def test_yield_hand_values():
    # A D = 8.14 x 0.1 = 0.814: exp(-0.814) = 0.44309; ((1 - 0.44309)/0.814)^2 = 0.46810.
    assert float(die_yield(814, 0.1, "poisson")) == pytest.approx(0.44309, abs=1e-5)
    assert float(die_yield(814, 0.1, "murphy")) == pytest.approx(0.46810, abs=1e-5)
    # Only 80% of the area critical: A D = 0.6512, 1 / 1.6512 = 0.60562.
    assert float(die_yield(814, 0.1, "seeds", critical_area_fraction=0.8)) == pytest.approx(
        0.60562, abs=1e-5
    )


def test_negative_binomial_limits():
    ad = np.linspace(0.0, 3.0, 31)
    np.testing.assert_allclose(yield_negative_binomial(ad, 1e9), yield_poisson(ad), rtol=1e-7)
    np.testing.assert_allclose(yield_negative_binomial(ad, 1.0), yield_seeds(ad), rtol=1e-15)
    # Clustering helps: smaller alpha, higher yield at the same A D.
    assert np.all(np.diff(yield_negative_binomial(1.0, np.array([0.5, 2, 10, 100]))) < 0)


@pytest.mark.parametrize("model", YIELD_MODELS)
def test_yield_strictly_falls_with_area(model):
    area = np.linspace(1.0, 1200.0, 600)
    y = die_yield(area, 0.09, model, 3.0)
    assert np.all(np.diff(y) < 0)
    assert np.all((y > 0) & (y <= 1))
    assert float(die_yield(0.0, 0.1, model)) == pytest.approx(1.0)


@pytest.mark.parametrize("model", YIELD_MODELS)
@pytest.mark.parametrize("aspect", [1.0, 2.0])
@pytest.mark.parametrize(("scribe", "low"), [(0.0, 1.0), (0.2, 50.0)])
def test_cost_per_good_mm2_strictly_rises_with_area(model, aspect, scribe, low):
    area = np.linspace(low, 858.0, 400)
    dies = gross_dies_per_wafer(
        area, aspect, wafer_diameter_mm=300, edge_exclusion_mm=3, scribe_mm=scribe
    )
    kgd = known_good_die_cost(17000.0, 1000.0, dies, die_yield(area, 0.07, model, 10.0))
    assert np.all(np.diff(kgd / area) > 0)


def test_scribe_lanes_make_tiny_dies_dearer_per_mm2():
    # A 0.2 mm scribe is 8% of a 20 mm2 die's pitch area but 1.4% of a 100 mm2 die's, which
    # outweighs their yield difference: cost per good mm2 is U-shaped below ~25 mm2.
    def per_mm2(area: float) -> float:
        dies = dpw(area, edge=3, scribe=0.2)
        return float(known_good_die_cost(17000, 1000, dies, die_yield(area, 0.07, "poisson")))

    assert per_mm2(5.0) / 5.0 > per_mm2(25.0) / 25.0 < per_mm2(100.0) / 100.0


def test_known_good_die_cost_reference():
    # Computed by hand: Murphy, D0 = 0.1, no edge exclusion, no sort: $572 / $673 for
    # 814 mm2 and $69 / $81 for 203.5 mm2 at $16,988 / $20,000 per wafer.
    for wafer, big, small in ((16988, 572, 69), (20000, 673, 81)):
        for area, expected in ((814, big), (203.5, small)):
            kgd = known_good_die_cost(wafer, 0.0, dpw(area), die_yield(area, 0.1, "murphy"))
            assert float(kgd) == pytest.approx(expected, abs=1.0)
    # Sort is paid on every die of the wafer: (17,000 + 1,000) / (50 x 0.6) = 600.
    assert float(known_good_die_cost(17000, 1000, 50, 0.6)) == pytest.approx(600.0)


def test_unknown_yield_model_names_the_choices():
    with pytest.raises(ContextError) as err:
        die_yield(100, 0.1, "murphey")
    assert err.value.path == "technology.yield_model"
    assert "murphy" in str(err.value) and "negative_binomial" in str(err.value)


def test_vectorized_equals_scalar():
    area = np.array([[50.0], [400.0], [858.0]])
    aspect = np.array([1.0, 1.5, 3.0])
    models = np.array(["poisson", "murphy", "negative_binomial"])
    d0 = np.array([0.05, 0.1, 0.2])
    batch_dpw = gross_dies_per_wafer(area, aspect, edge_exclusion_mm=3, scribe_mm=0.2)
    batch_y = die_yield(area, d0, models, 4.0)
    assert batch_dpw.shape == batch_y.shape == (3, 3)
    for i in range(3):
        for j in range(3):
            a = float(area[i, 0])
            assert batch_dpw[i, j] == dpw(a, aspect[j], edge=3, scribe=0.2)
            assert batch_y[i, j] == float(die_yield(a, d0[j], str(models[j]), 4.0))


# --- yield harvesting (repeated cores fused off) ----------------------------------------------


def test_spared_units_yield_is_the_binomial_sum():
    from math import comb

    from objectives.cost.silicon import spared_units_yield

    for n, k, y in [(144, 12, 0.99), (10, 1, 0.8), (36, 3, 0.95), (5, 0, 0.9)]:
        want = sum(comb(n, j) * (1 - y) ** j * y ** (n - j) for j in range(k + 1))
        assert float(spared_units_yield(y, n, k)) == pytest.approx(want, rel=1e-10)
    # all units spare, or perfect units: every die ships
    assert float(spared_units_yield(0.5, 4, 4)) == 1.0
    assert float(spared_units_yield(1.0, 144, 0)) == 1.0
    # a non-integer spare count lies between its neighbours
    lo, mid, hi = (float(spared_units_yield(0.8, 10, k)) for k in (1, 1.5, 2))
    assert lo < mid < hi


def test_harvested_yield_of_gh100_by_hand():
    """814 mm2 at D0 0.07/cm2, negative binomial alpha 10; 60 % of the die in 144 SMs of which
    12 may fail, half of the rest critical: Y = (1 + 8.14 x 0.07 x 0.4 x 0.5 / 10)^-10 x
    P(<= 12 of 144 SMs bad), each SM (0.6 / 0.1769 mm2 = 3.39 mm2) good with
    (1 + 0.0339 x 0.07 / 10)^-10."""
    from math import comb

    from objectives.cost.silicon import harvested_die_yield

    y_rest = (1 + 8.14 * 0.07 * 0.4 * 0.5 / 10) ** -10
    y_sm = (1 + 0.6 / 0.17690 / 100 * 0.07 / 10) ** -10
    n = 814 * 0.17690  # 144.0
    spared = sum(comb(144, j) * (1 - y_sm) ** j * y_sm ** (144 - j) for j in range(13))
    got = harvested_die_yield(
        814, 0.07, "negative_binomial", 10, core_area_fraction=0.6, cores_per_mm2=0.17690,
        core_spare_fraction=12 / 144, critical_area_fraction=0.5,
    )  # fmt: skip
    assert n == pytest.approx(144.0, abs=0.01)
    assert float(got) == pytest.approx(y_rest * spared, rel=1e-4)
    # no cores to harvest: the plain model on the critical area
    plain = harvested_die_yield(814, 0.07, "negative_binomial", 10, critical_area_fraction=1.0)
    assert float(plain) == pytest.approx(float(die_yield(814, 0.07, "negative_binomial", 10)))
    assert float(got) > float(plain)


def test_harvested_yield_vectorizes_and_rises_with_spares():
    from objectives.cost.silicon import harvested_die_yield

    area = np.array([100.0, 400.0, 814.0])
    spares = np.array([0.0, 0.05, 0.0833])
    y = harvested_die_yield(
        area, 0.1, "murphy", 10, core_area_fraction=0.6, cores_per_mm2=0.1769,
        core_spare_fraction=spares[:, None], critical_area_fraction=0.5,
    )  # fmt: skip
    assert y.shape == (3, 3)
    assert np.all(np.diff(y, axis=0) > 0)  # more spare cores, more dies ship
    assert np.all(np.diff(y, axis=1) < 0)  # bigger dies yield less
    for i, a in enumerate(area):
        one = harvested_die_yield(
            a, 0.1, "murphy", 10, core_area_fraction=0.6, cores_per_mm2=0.1769,
            core_spare_fraction=spares[2], critical_area_fraction=0.5,
        )  # fmt: skip
        assert float(one) == pytest.approx(float(y[2, i]))
