"""Spares provisioned per silicon, judged at a tail: the capacity a cluster keeps 99 % of the
time, not only on average.

Two fields provision hot spares, and add: ``spare_fraction`` rounds a share of the serving GPUs
up to whole GPUs (ceil), so a reticle die's cluster gets up to one reticle die of spare silicon
more than the share; ``spare_silicon_fraction`` rounds down (floor(share x GPUs)), so no class
holds more spare silicon than the share and at equal compute silicon every class holds the same
spare silicon but for less than one of its own GPUs. Both are priced (``installed_gpus`` in
the cost model) and both replace failed GPUs in ``capacity_availability`` and ``capacity_p99``.

``spare_fraction`` is a share of the serving GPUs, so at equal total compute silicon every die
size holds the same spare silicon (up to one GPU of rounding). What the share buys differs:
K ~ Poisson(m) GPUs are in repair at a random time (m = failure rate x repair time), the spares
cover S of them, and each of the (K - S)^+ left waiting takes a replica down (at worst a
different one each). ``capacity_quantile`` is the share of replicas serving at the q-th worst
time: 1 - min((K_q - S)^+, R) / R with K_q the q quantile of K. A big GPU's replica is a big
share of the cluster, so one uncovered failure costs it more capacity.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from objectives._evaluator import value
from objectives.availability._poisson import poisson_cdf
from objectives.availability.closed_form import spare_count
from objectives.package import optional

_BISECT_STEPS = 40  # integer bisection: covers K up to 2^40


def silicon_spares(design: Mapping[str, Any]) -> np.ndarray:
    """Spares bought with ``spare_silicon_fraction`` of the serving GPUs' compute silicon:
    floor(share x silicon / silicon per GPU) = floor(share x cluster_size) whole GPUs."""
    share = optional(design, "spare_silicon_fraction")
    raw = share * value(design, "cluster_size")
    return np.maximum(np.floor(raw + 1e-9), 0.0)


def provisioned_spares(design: Mapping[str, Any]) -> np.ndarray:
    """Every hot spare the design pays for: ceil(spare_fraction x GPUs) + the silicon share's."""
    n = value(design, "cluster_size")
    by_gpu = spare_count(n, value(design, "spare_fraction"))
    if "spare_silicon_fraction" not in design or not np.any(
        np.asarray(design["spare_silicon_fraction"], float)
    ):
        return by_gpu  # exactly as before the silicon share existed
    return by_gpu + silicon_spares(design)


def poisson_quantile(q: float, mean: ArrayLike) -> np.ndarray:
    """The smallest k with P(K <= k) >= q for K ~ Poisson(mean), vectorized: P(K <= k) of
    ``poisson_cdf``, by integer bisection. The pmf summed up to the answer settles most
    elements first (see ``_settled_by_sum``); the bisection runs on the rest."""
    m = np.asarray(mean, float)
    hi = np.ceil(m + 10.0 * np.sqrt(m) + 10.0)  # P(K <= hi) >= q for any q < 1 - 1e-15
    k, settled = _settled_by_sum(q, m, hi)
    if settled.all():
        return k
    rest = ~settled
    k[rest] = _bisect(q, m[rest], hi[rest])
    return k


def _bisect(q: float, m: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The smallest k in [0, hi] with ``poisson_cdf(k, m) >= q`` (hi where none is)."""
    lo = np.zeros(m.shape)  # P(K <= lo - 1) < q is kept: lo - 1 is below the answer
    for _ in range(_BISECT_STEPS):
        if np.all(hi <= lo):
            break
        mid = np.floor((lo + hi) / 2.0)
        ok = poisson_cdf(mid, m) >= q
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid + 1.0)
    return hi


#: Where the pmf summed from k = 0 decides P(K <= k) >= q: the mean at most this (e^-m stays
#: a normal double, at most ~60 terms)...
_SUM_MAX_MEAN = 32.0
#: ... and both P(K <= k - 1) and P(K <= k) farther than this from q. The sum of <= 60 positive
#: terms is within ~1e-14 of P(K <= k), ``poisson_cdf`` within 2e-12 (tests/objectives/
#: test_special.py), so outside the margin both compare with q alike: the bisection would
#: give this k.
_SUM_MARGIN = 1e-9


def _settled_by_sum(q: float, m: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(k, settled): k the smallest with the summed pmf >= q, where ``settled`` the answer of
    the bisection of ``poisson_cdf`` (the sum is clear of q by the margin at k - 1 and k)."""
    k = np.array(hi, dtype=float, copy=True)
    settled = np.zeros(m.shape, dtype=bool)
    if not 0.0 < q < 1.0 - _SUM_MARGIN:
        return k, settled
    flat_k, flat_ok = k.reshape(-1), settled.reshape(-1)
    idx = np.flatnonzero((m >= 0.0) & (m <= _SUM_MAX_MEAN))
    mu = m.reshape(-1)[idx]
    term = np.exp(-mu)
    cdf = term.copy()
    below = np.zeros(mu.shape)  # P(K <= k - 1); none below k = 0
    j = 0.0
    while idx.size:
        done = cdf >= q
        if done.any():
            sure = done & (cdf - q > _SUM_MARGIN) & ((j == 0.0) | (q - below > _SUM_MARGIN))
            sure &= j <= hi.reshape(-1)[idx]
            flat_k[idx[sure]] = j
            flat_ok[idx[sure]] = True
            keep = ~done
            idx, mu, term, cdf = idx[keep], mu[keep], term[keep], cdf[keep]
        j += 1.0
        below = cdf
        term = term * mu / j
        cdf = cdf + term
    return k, settled


def capacity_quantile(
    replicas: ArrayLike, spares: ArrayLike, mean_in_repair: ArrayLike, q: float = 0.99
) -> np.ndarray:
    """Share of the replicas serving at the time only 1 - q of the time is worse."""
    r = np.asarray(replicas, float)
    down = np.maximum(poisson_quantile(q, mean_in_repair) - np.asarray(spares, float), 0.0)
    return np.where(r >= 1, 1.0 - np.minimum(down, r) / np.maximum(r, 1.0), 0.0)
