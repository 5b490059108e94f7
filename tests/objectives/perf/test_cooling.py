"""Cooling and power delivery per package: heat spreading for small dies, package power cap."""

from __future__ import annotations

import numpy as np
import pytest

from objectives.perf import evaluate_perf
from objectives.perf.hardware import compute_w_per_mm2, cooling_limit_w_per_mm2
from objectives.presets import resolve_context


def perf(**kw) -> dict[str, float]:
    out = evaluate_perf(resolve_context({"gpu": "h100-sxm", **kw}))
    return {k: float(v) for k, v in out.items()}


def test_flux_limit_rises_as_inverse_sqrt_area_up_to_the_cap():
    d = resolve_context({"gpu": "h100-sxm"})
    area = np.array([814.0, 407.0, 203.5, 101.75])
    got = cooling_limit_w_per_mm2(d, np.array("air"), area, area, np.zeros(4))
    # 0.75 W/mm2 x sqrt(814 / A), at most 2x; the 1,000 W package cap binds nowhere here
    np.testing.assert_allclose(got, 0.75 * np.minimum(np.sqrt(814 / area), 2.0))


def test_package_power_caps_the_clock():
    # A 1,000 W air package: an 814 mm2 die asked for 3 GHz stops at the flux limit (0.75
    # W/mm2); with a 750 W package the package budget binds first.
    free = perf(clock_ghz=3.0)
    assert free["power_density_w_per_mm2"] == pytest.approx(0.75, rel=1e-6)
    capped = perf(clock_ghz=3.0, technology={"preset": "n4", "cooling_air_package_w": 750.0})
    assert capped["package_power_w"] == pytest.approx(750.0, rel=1e-6)
    assert capped["clock_eff_ghz"] < free["clock_eff_ghz"]


def test_small_die_clocks_higher_where_physics_allows():
    big = perf(clock_ghz=3.0)
    small = perf(clock_ghz=3.0, die_area_mm2=203.5, hbm_stacks_per_die=1)
    assert small["clock_eff_ghz"] > big["clock_eff_ghz"]
    d = resolve_context({"gpu": "h100-sxm"})
    assert small["power_density_w_per_mm2"] == pytest.approx(
        float(compute_w_per_mm2(d, np.asarray(small["clock_eff_ghz"]))), rel=1e-9
    )
    assert small["power_density_w_per_mm2"] == pytest.approx(1.5, rel=1e-6)
