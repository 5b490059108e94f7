"""The capacity a cluster keeps 99 % of the time, by hand and against a simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from objectives.availability.spares import capacity_quantile, poisson_quantile


@pytest.mark.parametrize("mean", [0.0, 0.3, 2.0, 17.5, 400.0])
def test_poisson_quantile_matches_scipy(mean: float) -> None:
    for q in (0.5, 0.9, 0.99, 0.999):
        assert float(poisson_quantile(q, mean)) == stats.poisson.ppf(q, mean), (mean, q)


def test_vectorized_equals_scalar() -> None:
    means = np.array([0.1, 1.0, 5.0, 50.0])
    batch = capacity_quantile(np.array([8.0, 32.0, 64.0, 512.0]), np.array([0, 1, 2, 10]), means)
    for i, m in enumerate(means):
        one = capacity_quantile([8.0, 32.0, 64.0, 512.0][i], [0, 1, 2, 10][i], m)
        assert float(batch[i]) == float(one)


def test_by_hand_big_replicas_lose_more_at_the_tail() -> None:
    # m = 2 GPUs in repair on average: the 99th percentile is 6 (P(K <= 6) = 0.9955).
    # No spares: 6 replicas down; of 8 replicas that is 25 % of capacity, of 64 it is 9.4 %.
    assert float(capacity_quantile(8, 0, 2.0)) == pytest.approx(1 - 6 / 8)
    assert float(capacity_quantile(64, 0, 2.0)) == pytest.approx(1 - 6 / 64)
    # Six spares cover the tail; four leave two replicas down.
    assert float(capacity_quantile(8, 6, 2.0)) == 1.0
    assert float(capacity_quantile(8, 4, 2.0)) == pytest.approx(1 - 2 / 8)
    assert float(capacity_quantile(0, 4, 2.0)) == 0.0


@pytest.mark.slow  # 6 s: bisects 23,000 means x 8 quantiles
def test_step_table_gives_the_bisection_answer() -> None:
    """The fast path (a table of the means where the answer steps up) answers what bisecting
    poisson_cdf answers: means on both sides of where the table ends, right at its steps,
    quantiles near 0 and 1, and odd inputs."""
    from objectives.availability.spares import _bisect, _steps

    rng = np.random.default_rng(7)
    m = np.concatenate(
        [rng.uniform(0, 8, 20000), np.logspace(-9, 2.5, 3000), [0.0, np.nan, np.inf, 32.0, 33.0]]
    )
    for q in (0.5, 0.99):  # at the steps and just beside them
        at = _steps(q)[0]
        m = np.concatenate([m, at, np.nextafter(at, 0.0), np.nextafter(at, 99.0)])
    hi = np.ceil(m + 10.0 * np.sqrt(m) + 10.0)
    for q in (1e-6, 0.5, 0.99, 0.999, 1 - 1e-7, 1 - 5e-9, 1 - 1e-9, 1.0):
        np.testing.assert_array_equal(poisson_quantile(q, m), _bisect(q, m, hi))
    # P(K <= 1) at m = 2 is 3 e^-2 = 0.406: a q that close defers to the bisection
    assert float(poisson_quantile(3 * np.exp(-2.0), 2.0)) == 1.0


def test_edge_count_by_grid_is_numpys_search() -> None:
    """The grid look-up of ``_settled`` counts the edges <= m exactly as np.searchsorted does:
    at the edges, a hair to either side, past the grid, and NaN, signed zeros, infinities."""
    from objectives.availability.spares import _edges_at_or_below, _steps

    rng = np.random.default_rng(3)
    for q in (0.5, 0.9, 0.99, 0.999):
        edges = _steps(q)[0]
        odd = [np.nan, -1.0, 0.0, -0.0, np.inf, -np.inf, 1e300]
        m = np.concatenate([rng.uniform(0, 40, 5000), edges, np.nextafter(edges, -np.inf),
                            np.nextafter(edges, np.inf), odd])  # fmt: skip
        got = _edges_at_or_below(q, edges, m)
        np.testing.assert_array_equal(got, np.searchsorted(edges, m, side="right"))
