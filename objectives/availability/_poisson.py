"""Poisson tail probabilities from the regularized incomplete gamma, with a log-space far tail.

The closed-form availability needs P(K <= n) and log P(K > n) for a Poisson count K of GPUs in
repair, for large means (tens of thousands of GPUs) and far into the tail: with many spares
P(K > S) underflows a double (``pdtrc(200, 1.0)`` is 0.0, its log is -869.5), and the capacity
formula multiplies it by z^-S, which can be as large, so the log must stay finite. Where
P(K > n) falls below ``_LOG_SPACE_BELOW`` the log is taken from the series
P(K > n) = p(n + 1) M(1, n + 2, mu) (Kummer's function; DLMF 8.5.1 and 13.6.5).

The tails are P(K <= n) = Q(n + 1, mu) and P(K > n) = P(n + 1, mu) from
``objectives._special`` (numpy alone), not ``scipy.special.pdtr``/``pdtrc``: importing
scipy.special cost ~0.23 s of CPU on every ``dse evaluate``, the start-up target of issue 27
(benchmarks/RESULTS.md). scipy is the tests' oracle (tests/objectives/test_special.py).

Two hand-written parts stay, for a measured reason: n = 0 (no spares, most designs of a
search) is the closed form e^-mu, and the last few answers are reused for bit-identical inputs
(an availability evaluation asks for the same tails up to three times). Without them the
availability evaluator ran at 0.83x of the hand-written version on spaces/litegpu.yaml
(benchmarks/ab_evaluators.py --each, 262,144 designs; measured with scipy's incomplete gamma,
~0.3 us per element; the numpy one costs more), with them at 1.05x.
"""

from __future__ import annotations

import numpy as np

from objectives._special import gammainc_pq, gammaln, hyp1f1_one

#: Below this P(K > n) is recomputed in log space (the direct result has lost digits to
#: underflow from ~1e-308 down, and is 0 below ~5e-324).
_LOG_SPACE_BELOW = 1e-290
_RECENT: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []
_RECENT_MAX = 4


def _recall(kind: str, n: np.ndarray, mu: np.ndarray) -> np.ndarray | None:
    for k, rn, rmu, out in _RECENT:
        if k == kind and rn.shape == n.shape and np.array_equal(rn, n) and np.array_equal(rmu, mu):
            return out.copy()
    return None


def _remember(kind: str, n: np.ndarray, mu: np.ndarray, out: np.ndarray) -> np.ndarray:
    _RECENT[:] = [(kind, n.copy(), mu.copy(), out.copy()), *_RECENT[: _RECENT_MAX - 1]]
    return out


def poisson_cdf(n: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """P(K <= n) for K ~ Poisson(mu); 0 for n < 0."""
    n, mu = np.broadcast_arrays(np.asarray(n, dtype=float), np.asarray(mu, dtype=float))
    if (n < 0).all():  # e.g. P(K <= spares - 1) without spares
        return np.zeros(n.shape)
    if not n.any():  # no spares: the closed form
        return np.exp(-mu)
    hit = _recall("cdf", n, mu)
    if hit is not None:
        return hit
    more = n > 0
    tails = gammainc_pq(np.floor(n[more]) + 1.0, mu[more])[1]
    if tails.size == n.size:  # spares everywhere: no row of the closed forms
        return _remember("cdf", n, mu, tails.reshape(n.shape))
    out = np.where(n < 0, 0.0, np.exp(-mu))
    out[more] = tails
    return _remember("cdf", n, mu, out)


def poisson_log_sf(n: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """log P(K > n) for K ~ Poisson(mu), n >= 0 (-inf when mu = 0)."""
    n, mu = np.broadcast_arrays(np.asarray(n, dtype=float), np.asarray(mu, dtype=float))
    if not n.any():
        return _log_sf_zero(mu)
    hit = _recall("log_sf", n, mu)
    if hit is not None:
        return hit
    more = n > 0
    nm, mm = n[more], mu[more]
    sf, cdf = gammainc_pq(np.floor(nm) + 1.0, mm)
    with np.errstate(divide="ignore"):
        part = np.log(sf)
    near_one = sf > 0.5  # log(1 - P(K <= n)) keeps the digits log(sf) rounds away
    if near_one.any():
        part[near_one] = np.log1p(-cdf[near_one])
    far = (sf < _LOG_SPACE_BELOW) & (mm > 0)
    if far.any():
        k, m = nm[far], mm[far]
        log_p = (k + 1.0) * np.log(m) - m - gammaln(k + 2.0)  # log p(n + 1)
        part[far] = log_p + np.log(hyp1f1_one(k + 2.0, m))
    if part.size == n.size:  # spares everywhere: no row of the closed form
        return _remember("log_sf", n, mu, part.reshape(n.shape))
    out = _log_sf_zero(mu)
    out[more] = part
    return _remember("log_sf", n, mu, out)


def _log_sf_zero(mu: np.ndarray) -> np.ndarray:
    """log P(K > 0) = log(1 - e^-mu) (-inf when mu = 0)."""
    with np.errstate(divide="ignore"):
        return np.log(-np.expm1(-mu))
