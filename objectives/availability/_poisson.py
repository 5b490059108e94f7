"""Poisson tail probabilities in pure numpy (no scipy in the core dependencies).

The closed-form availability needs P(K <= n) and log P(K > n) for a Poisson count K of GPUs in
repair, accurately in the far tail (many spares: P(K > S) ~ 1e-30) and for large means (tens of
thousands of GPUs). Both are regularized incomplete gamma functions, evaluated with the classic
series / continued-fraction pair (Numerical Recipes 6.2) vectorized over the batch: the loops
run over iterations, never over designs, and only on the elements that have not converged.
"""

from __future__ import annotations

import numpy as np

_EPS = 1e-15
_TINY = 1e-300
_MAX_ITER = 200_000
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


def lgamma(x: np.ndarray) -> np.ndarray:
    """log Γ(x), x > 0: Stirling series after shifting the argument up by 8 (abs err < 1e-11)."""
    x = np.asarray(x, dtype=float)
    y = x + 8.0
    inv = 1.0 / y
    inv2 = inv * inv
    series = inv * (1 / 12 - inv2 * (1 / 360 - inv2 * (1 / 1260 - inv2 / 1680)))
    stirling = (y - 0.5) * np.log(y) - y + _HALF_LOG_2PI + series
    shift = sum(np.log(x + k) for k in range(8))
    return stirling - shift


def _log_lower_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log P(a, x) (regularized lower incomplete gamma) by its power series; for x < a + 1."""
    total = 1.0 / a
    # The elements still summing, packed (contiguous arithmetic, no gathers); an element's sum
    # is written back to ``total`` when it converges and it leaves the packed arrays.
    idx = np.arange(a.size)
    xs, ap, term, acc = x.copy(), a.copy(), total.copy(), total.copy()
    for _ in range(_MAX_ITER):
        ap += 1.0
        term *= xs / ap
        acc += term
        going = term >= acc * _EPS  # both > 0 (a > 0, 0 < x < a + 1): no abs needed
        if going.all():
            continue
        done = ~going
        total[idx[done]] = acc[done]
        idx, xs, ap, term, acc = idx[going], xs[going], ap[going], term[going], acc[going]
        if idx.size == 0:
            break
    return np.log(total) - x + a * np.log(x) - lgamma(a)


def _log_upper_cf(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log Q(a, x) (regularized upper incomplete gamma) by Lentz's continued fraction; x >= a+1."""
    b = x + 1.0 - a
    c = np.full_like(a, 1.0 / _TINY)
    d = 1.0 / b
    h = d.copy()
    idx = np.arange(a.size)
    for i in range(1, _MAX_ITER):
        an = -i * (i - a[idx])
        b[idx] += 2.0
        dd = an * d[idx] + b[idx]
        dd = np.where(np.abs(dd) < _TINY, _TINY, dd)
        cc = b[idx] + an / c[idx]
        cc = np.where(np.abs(cc) < _TINY, _TINY, cc)
        dd = 1.0 / dd
        delta = dd * cc
        d[idx], c[idx] = dd, cc
        h[idx] *= delta
        idx = idx[np.abs(delta - 1.0) >= _EPS]
        if idx.size == 0:
            break
    return np.log(h) - x + a * np.log(x) - lgamma(a)


_RECENT: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
_RECENT_MAX = 4  # an availability evaluation asks for the same tails more than once


def _log_tails(n: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log P(K <= n), log P(K > n)) for K ~ Poisson(mu), n >= 0 integer-valued, mu >= 0.

    The last few answers are kept and reused for bit-identical inputs (copies either way).
    """
    n, mu = np.broadcast_arrays(np.asarray(n, dtype=float), np.asarray(mu, dtype=float))
    if not n.any() and (mu >= 0).all():  # n = 0: the closed form costs less than the cache
        with np.errstate(divide="ignore"):  # mu = 0: log P(K > 0) = -inf
            return -mu, np.log(-np.expm1(-mu))
    for rn, rmu, rcdf, rsf in tuple(_RECENT):
        if rn.shape == n.shape and np.array_equal(rn, n) and np.array_equal(rmu, mu):
            return rcdf.copy(), rsf.copy()
    log_cdf, log_sf = _compute_log_tails(n, mu)
    _RECENT[:] = [(n.copy(), mu.copy(), log_cdf, log_sf), *_RECENT[: _RECENT_MAX - 1]]
    return log_cdf.copy(), log_sf.copy()


def _compute_log_tails(n: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    shape = n.shape
    a = n.ravel() + 1.0
    x = mu.ravel()
    one = a == 1.0  # n = 0 (no spares): P(K <= 0) = e^-mu exactly, no series needed
    if one.all() and (x >= 0).all():
        with np.errstate(divide="ignore"):  # mu = 0: log P(K > 0) = -inf, as below
            return (-x).reshape(shape), np.log(-np.expm1(-x)).reshape(shape)
    log_cdf = np.zeros(a.size)
    log_sf = np.full(a.size, -np.inf)
    pos = x > 0
    if one.any():
        first = pos & one
        log_cdf[first] = -x[first]
        log_sf[first] = np.log(-np.expm1(-x[first]))
        pos &= ~one
    series = pos & (x < a + 1.0)
    cf = pos & ~series
    if series.any():
        lp = _log_lower_series(a[series], x[series])  # P(a, x) = P(K > n)
        log_sf[series] = lp
        log_cdf[series] = np.log1p(-np.exp(np.minimum(lp, -1e-300)))
    if cf.any():
        lq = _log_upper_cf(a[cf], x[cf])  # Q(a, x) = P(K <= n)
        log_cdf[cf] = lq
        log_sf[cf] = np.log1p(-np.exp(np.minimum(lq, -1e-300)))
    return log_cdf.reshape(shape), log_sf.reshape(shape)


def poisson_cdf(n: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """P(K <= n) for K ~ Poisson(mu); 0 for n < 0."""
    n = np.asarray(n, dtype=float)
    if (n < 0).all():  # e.g. P(K <= spares - 1) without spares
        return np.zeros(np.broadcast_shapes(n.shape, np.shape(mu)))
    log_cdf, _ = _log_tails(np.maximum(n, 0.0), mu)
    return np.where(n < 0, 0.0, np.exp(log_cdf))


def poisson_log_sf(n: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """log P(K > n) for K ~ Poisson(mu), n >= 0 (-inf when mu = 0)."""
    return _log_tails(n, mu)[1]
