"""objectives._special against scipy.special, the oracle, over wide grids and the extremes.

Tolerances (relative, where the oracle's value is above the stated floor; absolute below it):

- Poisson tails, incomplete gamma, Erlang C's ratio, means and counts up to ~300: 2e-12
  (measured: 7e-13). For parameters in the thousands scipy itself is off by up to 3e-11
  against mpmath at 50 digits, where these are within 3e-13 (measured at 2026-12-02 on the
  worst points of the grid below), so that grid is held to 1e-10.
- the normal distribution function: 3e-15 + 4e-16 z^2 (measured: 2.2e-15 near the centre,
  where each is within 6e-16 of mpmath; both round z/sqrt 2, whose square sets the error of
  exp(-z^2/2) in the far tail: 6e-14 at z = -30, against mpmath).
- the incomplete beta: 2e-12 down to 1e-250; below ~1e-270 scipy loses all digits
  (0.2-0.5 off against mpmath, where this is within 3e-13).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special as sp

from objectives import _special as S
from objectives.availability._poisson import poisson_cdf, poisson_log_sf
from objectives.perf.queueing import erlang_c, normal_cdf


def close(got: np.ndarray, want: np.ndarray, rtol: float, floor: float = 1e-300) -> None:
    got, want = np.broadcast_arrays(np.asarray(got, float), np.asarray(want, float))
    assert np.array_equal(np.isnan(got), np.isnan(want))
    big = np.abs(want) > floor
    assert np.array_equal(got[np.isinf(want)], want[np.isinf(want)])
    fin = big & np.isfinite(want)
    rel = np.abs(got[fin] - want[fin]) / np.abs(want[fin])
    assert rel.max(initial=0.0) <= rtol, rel.max()
    small = ~big & np.isfinite(want)
    assert np.all(np.abs(got[small] - want[small]) <= floor)  # both at most ~the floor


def test_gammaln_against_scipy() -> None:
    x = np.concatenate([np.logspace(-300, -1, 300), np.linspace(0.1, 30, 3000)])
    x = np.concatenate([x, np.logspace(1.5, 12, 300)])
    got, want = S.gammaln(x), sp.gammaln(x)
    # relative except near the zeros at 1 and 2, where 1e-14 absolute is the meaningful bound
    assert np.all(np.abs(got - want) <= 1e-14 + 2e-15 * np.abs(want))
    assert S.gammaln(np.array([0.0, np.inf])).tolist() == [np.inf, np.inf]


def test_poisson_tails_against_scipy() -> None:
    n, mu = np.meshgrid(np.arange(0.0, 301.0), np.concatenate([[0.0], np.logspace(-6, 3, 400)]))
    p, q = S.gammainc_pq(n + 1.0, mu)
    close(q, sp.pdtr(n, mu), 2e-12)
    close(p, sp.pdtrc(n, mu), 2e-12)
    big_n, big_mu = np.meshgrid(np.logspace(2.5, 5, 25).round(), np.logspace(1, 4.7, 60))
    p, q = S.gammainc_pq(big_n + 1.0, big_mu)
    close(q, sp.pdtr(big_n, big_mu), 1e-10)
    close(p, sp.pdtrc(big_n, big_mu), 1e-10)


def test_incomplete_gamma_edges() -> None:
    a = np.array([1.0, 5.0, 0.5, 0.0, -1.0, np.nan, 3.0, 2.0])
    x = np.array([0.0, np.inf, 1e-300, 1.0, 1.0, 1.0, np.nan, 1e300])
    p, q = S.gammainc_pq(a, x)
    close(p, sp.gammainc(a, x), 1e-13)
    close(q, sp.gammaincc(a, x), 1e-13)


def test_poisson_module_against_scipy() -> None:
    """The availability model's tails: the vectorized call equals scipy and equals the scalar
    calls; the log tail equals log(pdtrc) where that is representable and stays finite beyond."""
    n = np.array([0.0, 1.0, 2.0, 5.0, 30.0, 200.0, 1000.0, 20.0, 3.0])
    mu = np.array([0.5, 1e-9, 2.0, 40.0, 3.0, 1.0, 5e4, 1e3, 0.0])
    close(poisson_cdf(n, mu), sp.pdtr(n, mu), 2e-12)
    close(poisson_cdf(n - 1.0, mu), np.where(n - 1 < 0, 0.0, sp.pdtr(n - 1.0, mu)), 2e-12)
    with np.errstate(divide="ignore"):  # log1p(-cdf) near 1 keeps the digits log(sf) loses
        want = np.where(sp.pdtrc(n, mu) > 0.5, np.log1p(-sp.pdtr(n, mu)), np.log(sp.pdtrc(n, mu)))
    got = poisson_log_sf(n, mu)
    ok = sp.pdtrc(n, mu) > 1e-290
    close(got[ok], want[ok], 2e-12)
    assert np.isfinite(got[n == 200]).all() and got[n == 200][0] == pytest.approx(-869.5, abs=0.1)
    scalar = [poisson_log_sf(np.array(a), np.array(b)) for a, b in zip(n, mu, strict=True)]
    assert np.array_equal(np.array(scalar), got)


def test_far_tail_series_against_scipy() -> None:
    b, z = np.meshgrid(np.arange(2.0, 2000.0, 7.0), np.logspace(-3, 2.5, 60))
    below = z < b / 2
    close(S.hyp1f1_one(b[below], z[below]), sp.hyp1f1(1.0, b[below], z[below]), 1e-14)


def test_normal_cdf_against_scipy() -> None:
    z = np.concatenate([np.linspace(-37.0, 37.0, 30001), [0.0, 1e-300, -1e-300, 0.70710678]])
    got, want = normal_cdf(z), sp.ndtr(z)
    assert np.all(np.abs(got - want) <= (3e-15 + 4e-16 * z * z) * np.abs(want))
    edge = np.array([np.nan, np.inf, -np.inf, -40.0])
    close(normal_cdf(edge), sp.ndtr(edge), 0.0)
    assert [float(normal_cdf(v)) for v in z[::997]] == list(got[::997])


def test_erlang_c_ratio_against_scipy() -> None:
    """Erlang C's inputs: Q(c + 1, a) and log Gamma(c + 1) for non-integer slot counts too."""
    c, a = np.meshgrid(np.linspace(0.5, 500.0, 300), np.logspace(-4, 2.7, 200))
    close(S.gammainc_pq(c + 1.0, a)[1], sp.gammaincc(c + 1.0, a), 2e-12)
    b = np.exp(c * np.log(a) - a - sp.gammaln(c + 1.0)) / sp.gammaincc(c + 1.0, a)
    want = np.where(a >= c, 1.0, np.clip(b / (1.0 - a / c * (1.0 - b)), 0.0, 1.0))
    close(erlang_c(c, a), want, 1e-11)


def test_betainc_against_scipy() -> None:
    a, b, y = np.meshgrid(
        np.concatenate([[1e-300, 1e-5], np.linspace(0.01, 300.0, 80)]),
        np.linspace(0.5, 40.0, 40),
        np.concatenate([np.linspace(0.001, 0.999, 50), [0.9999, 0.99999, 0.0, 1.0]]),
    )
    close(S.betainc(a, b, y), sp.betainc(a, b, y), 2e-12, floor=1e-250)
    nan = np.array([-1.0, 1.0, 1.0, np.nan])
    assert np.isnan(S.betainc(nan, np.array([1.0, 0.0, 1.0, 1.0]), np.array(1.5))).all()
    grid = S.betainc(a, b, y)
    for i in range(0, a.size, 997):  # vectorized equals scalar
        one = S.betainc(np.array(a.flat[i]), np.array(b.flat[i]), np.array(y.flat[i]))
        assert one == grid.flat[i] or (np.isnan(one) and np.isnan(grid.flat[i]))


def test_betainc_is_the_binomial_sum_for_integer_counts() -> None:
    """I_y(n - k, k + 1) = sum_{j <= k} C(n, j) (1 - y)^j y^(n - j): the spared-cores yield."""
    from math import comb

    for n, k, y in [(144, 12, 0.97), (20, 0, 0.5), (60, 59, 0.1), (132, 3, 0.999)]:
        want = sum(comb(n, j) * (1 - y) ** j * y ** (n - j) for j in range(k + 1))
        got = float(S.betainc(np.array(n - k, float), np.array(k + 1.0), np.array(y)))
        assert got == pytest.approx(want, rel=1e-12)
