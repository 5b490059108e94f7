"""Global sensitivity (``dse sensitivity --method sobol|morris``, SALib) against functions with
known indices, and on the paper's uncertain spec end to end, into the report."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dse.inspect.global_sensitivity import indices
from dse.model.uncertain import Uncertain

# Ishigami (a = 7, b = 0.1), x_i ~ U(-pi, pi): analytic indices (Ishigami & Homma 1990;
# Sobol' & Levitan 1999). V = a^2/8 + b pi^4/5 + b^2 pi^8/18 + 1/2.
A, B = 7.0, 0.1
V = A**2 / 8 + B * math.pi**4 / 5 + B**2 * math.pi**8 / 18 + 0.5
V1 = 0.5 * (1 + B * math.pi**4 / 5) ** 2
V2 = A**2 / 8
V13 = B**2 * math.pi**8 * (1 / 18 - 1 / 50)
S1 = {"x1": V1 / V, "x2": V2 / V, "x3": 0.0}
ST = {"x1": (V1 + V13) / V, "x2": V2 / V, "x3": V13 / V}


def ishigami(v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    x1, x2, x3 = v["x1"], v["x2"], v["x3"]
    return {"y": np.sin(x1) + A * np.sin(x2) ** 2 + B * x3**4 * np.sin(x1)}


def _uniform(name: str, low: float, high: float) -> Uncertain:
    return Uncertain((name,), "uniform", {"low": low, "high": high})


def test_sobol_indices_of_ishigami_match_the_analytic_values() -> None:
    assert S1["x1"] == pytest.approx(0.3139, abs=1e-4) and ST["x3"] == pytest.approx(
        0.2437, abs=1e-4
    )
    us = [_uniform(n, -math.pi, math.pi) for n in ("x1", "x2", "x3")]
    rows = {r.assumption: r for r in indices(ishigami, us, samples=4096, seed=1)["y"]}
    for n in ("x1", "x2", "x3"):
        # Tolerance 0.04 absolute (N = 4096 Saltelli samples); the 95 % intervals are sane.
        assert rows[n].S1 == pytest.approx(S1[n], abs=0.04), n
        assert rows[n].ST == pytest.approx(ST[n], abs=0.04), n
        assert 0 < rows[n].S1_conf < 0.1 and 0 < rows[n].ST_conf < 0.1
    assert [r.assumption for r in indices(ishigami, us, samples=1024)["y"]] == ["x1", "x2", "x3"]


def test_morris_mu_star_of_a_linear_function_is_its_slope_times_range() -> None:
    us = [_uniform("a", 0, 1), _uniform("b", 0, 1), _uniform("c", 10, 20)]

    def linear(v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"y": 1.0 * v["a"] + 2.0 * v["b"] + 0.0 * v["c"]}

    rows = {r.assumption: r for r in indices(linear, us, method="morris", samples=50)["y"]}
    # Effects are per unit of the (0, 1) probability scale: slope x range, no spread.
    assert rows["a"].mu_star == pytest.approx(1.0, rel=1e-3)
    assert rows["b"].mu_star == pytest.approx(2.0, rel=1e-3)
    assert rows["c"].mu_star == pytest.approx(0.0, abs=1e-9)
    assert rows["a"].sigma == pytest.approx(0.0, abs=1e-6)
