"""Wafer geometry, defect yield and known-good-die cost, as functions of numpy arrays.

These are the formulas the Lite-GPU argument starts from: a smaller die wastes less wafer edge
and survives random defects more often. Every function broadcasts over its arguments.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from objectives._die import die_edges_mm
from objectives._die import reticle_fits as reticle_fits  # this module's formulas, in one place
from objectives._special import betainc
from objectives.errors import check_names

YIELD_MODELS = ("poisson", "murphy", "seeds", "negative_binomial")

MM2_PER_CM2 = 100.0


def gross_dies_per_wafer(
    area_mm2: ArrayLike,
    aspect_ratio: ArrayLike = 1.0,
    *,
    wafer_diameter_mm: ArrayLike = 300.0,
    edge_exclusion_mm: ArrayLike = 0.0,
    scribe_mm: ArrayLike = 0.0,
) -> np.ndarray:
    """Expected gross dies per wafer for a w x h die on a stepping pitch wp x hp = (w+s) x (h+s).

    The standard formula DPW = pi (d/2)^2 / A - pi d / sqrt(2 A) (Hennessy & Patterson), with
    the usable diameter d = D - 2 x edge exclusion and A the pitch area. Its edge term is the
    wafer circumference times a lost band of s / sqrt(2) for a square die of side s. For a
    rectangle the band is taken as (wp + hp) / (2 sqrt 2): the same for a square, and
    proportional to the die's mean projected width (perimeter / pi, Cauchy) otherwise, so long
    thin dies lose more at the edge:

        DPW = pi d^2 / (4 wp hp) - pi d (wp + hp) / (2 sqrt(2) wp hp)

    Like the square formula it is a conservative expected count: an optimised grid placement
    fits a few percent more (tests compare both). The result is continuous (as the
    textbook formula) so cost is smooth in die area; it is floored at a tiny positive number
    so dies larger than the wafer stay finite.
    """
    long_mm, short_mm = die_edges_mm(area_mm2, aspect_ratio)
    s = np.asarray(scribe_mm, dtype=float)
    wp, hp = long_mm + s, short_mm + s
    d = np.asarray(wafer_diameter_mm, dtype=float) - 2.0 * np.asarray(edge_exclusion_mm, float)
    pitch = wp * hp
    dpw = np.pi * d**2 / (4.0 * pitch) - np.pi * d * (wp + hp) / (2.0 * np.sqrt(2.0) * pitch)
    return np.maximum(dpw, 1e-6)


def yield_poisson(ad: ArrayLike) -> np.ndarray:
    """Y = exp(-A D): defects independent and uniform."""
    return np.exp(-np.asarray(ad, dtype=float))


def yield_murphy(ad: ArrayLike) -> np.ndarray:
    """Y = ((1 - exp(-A D)) / (A D))^2, with its limit 1 at A D = 0."""
    x = np.asarray(ad, dtype=float)
    safe = np.where(x > 1e-12, x, 1.0)
    y = (-np.expm1(-safe) / safe) ** 2
    return np.where(x > 1e-12, y, 1.0 - x)  # first-order series near zero


def yield_seeds(ad: ArrayLike) -> np.ndarray:
    """Y = 1 / (1 + A D) (Seeds; the negative binomial at alpha = 1)."""
    return 1.0 / (1.0 + np.asarray(ad, dtype=float))


def yield_negative_binomial(ad: ArrayLike, alpha: ArrayLike) -> np.ndarray:
    """Y = (1 + A D / alpha)^-alpha (Stapper): defects cluster; alpha -> inf gives Poisson."""
    x = np.asarray(ad, dtype=float)
    a = np.asarray(alpha, dtype=float)
    # log1p keeps the large-alpha limit exact instead of rounding (1 + tiny) to 1.
    return np.exp(-a * np.log1p(x / a))


def check_yield_model(name: object, path: str = "technology.yield_model") -> np.ndarray:
    """The yield model name(s) as a string array, or a ContextError naming the valid ones."""
    names = np.asarray(name)
    check_names(names.ravel().tolist(), YIELD_MODELS, path, what="yield model")
    return names


def die_yield(
    area_mm2: ArrayLike,
    defect_density_per_cm2: ArrayLike,
    model: object = "negative_binomial",
    alpha: ArrayLike = 10.0,
    critical_area_fraction: ArrayLike = 1.0,
) -> np.ndarray:
    """Defect-limited yield of a die by the named model (a string or an array of strings)."""
    names = check_yield_model(model)
    ad = (
        np.asarray(area_mm2, dtype=float)
        / MM2_PER_CM2
        * np.asarray(defect_density_per_cm2, dtype=float)
        * np.asarray(critical_area_fraction, dtype=float)
    )
    if names.ndim == 0:  # one model for every design: only that one is computed
        one = {"poisson": yield_poisson, "murphy": yield_murphy, "seeds": yield_seeds}
        name = str(names)
        y = one[name](ad) if name in one else yield_negative_binomial(ad, alpha)
        shape = np.broadcast_shapes(ad.shape, np.shape(alpha))
        return y if y.shape == shape else np.array(np.broadcast_to(y, shape))
    return np.select(
        [names == "poisson", names == "murphy", names == "seeds"],
        [yield_poisson(ad), yield_murphy(ad), yield_seeds(ad)],
        default=yield_negative_binomial(ad, alpha),
    )


def spared_units_yield(unit_yield: ArrayLike, units: ArrayLike, spares: ArrayLike) -> np.ndarray:
    """P(at most ``spares`` of ``units`` repeated units are defective), each unit good with
    probability ``unit_yield`` independently: the binomial distribution function
    I_y(n - k, k + 1) (the regularized incomplete beta), which also gives non-integer counts
    (a die between two unit counts) a value between its neighbours'. The beta is
    ``objectives._special.betainc`` (numpy alone), not scipy's: importing scipy.special cost
    ~0.23 s of every ``dse evaluate`` (issue 27's start-up target); scipy is the tests' oracle."""
    y = np.asarray(unit_yield, dtype=float)
    n = np.asarray(units, dtype=float)
    k = np.clip(np.asarray(spares, dtype=float), 0.0, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = betainc(np.maximum(n - k, 1e-300), k + 1.0, y)
    return np.where((k >= n) | (y >= 1.0), 1.0, np.where(n > 0, p, 1.0))


def harvested_die_yield(
    area_mm2: ArrayLike,
    defect_density_per_cm2: ArrayLike,
    model: object = "negative_binomial",
    alpha: ArrayLike = 10.0,
    *,
    core_area_fraction: ArrayLike = 0.0,
    cores_per_mm2: ArrayLike = 1.0,
    core_spare_fraction: ArrayLike = 0.0,
    critical_area_fraction: ArrayLike = 1.0,
) -> np.ndarray:
    """Yield of a die that ships with some of its repeated cores fused off (yield harvesting).

    The die's ``core_area_fraction`` is an array of area x ``cores_per_mm2`` identical cores
    (SMs) of which a ``core_spare_fraction`` may be defective: a defect there disables a core
    and the die still ships. Of the rest, ``critical_area_fraction`` kills the die (the
    remainder being repairable SRAM, caches with redundant rows and columns). Yield =
    Y(critical area) x P(at most the spare cores defective), each core's yield by the same
    model on its own area (independent cores: clustering across cores is not modelled, which
    errs towards fewer dies with several bad cores). Without cores it is ``die_yield``."""
    a = np.asarray(area_mm2, dtype=float)
    core_frac = np.asarray(core_area_fraction, dtype=float)
    rest = (1.0 - core_frac) * np.asarray(critical_area_fraction, dtype=float)
    y_rest = die_yield(a, defect_density_per_cm2, model, alpha, rest)
    if not np.any(core_frac > 0):
        return y_rest
    per_mm2 = np.asarray(cores_per_mm2, dtype=float)
    units = a * per_mm2
    unit_area = np.where(per_mm2 > 0, core_frac / np.where(per_mm2 > 0, per_mm2, 1.0), 0.0)
    y_core = die_yield(unit_area, defect_density_per_cm2, model, alpha, 1.0)
    spared = spared_units_yield(y_core, units, units * np.asarray(core_spare_fraction, float))
    return y_rest * np.where(core_frac > 0, spared, 1.0)


def known_good_die_cost(
    wafer_cost_usd: ArrayLike,
    wafer_sort_cost_usd: ArrayLike,
    dies_per_wafer: ArrayLike,
    yield_: ArrayLike,
) -> np.ndarray:
    """(wafer + probe of every die on it) / good dies: each good die carries the bad ones."""
    good = np.asarray(dies_per_wafer, dtype=float) * np.asarray(yield_, dtype=float)
    total = np.asarray(wafer_cost_usd, dtype=float) + np.asarray(wafer_sort_cost_usd, float)
    return total / np.maximum(good, 1e-12)
