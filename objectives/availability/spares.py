"""Spares provisioned per silicon, judged at a tail: the capacity a cluster keeps 99 % of the
time, not only on average.

``spare_fraction`` is a share of the serving GPUs, so at equal total compute silicon every die
size holds the same spare silicon (up to one GPU of rounding). What the share buys differs:
K ~ Poisson(m) GPUs are in repair at a random time (m = failure rate x repair time), the spares
cover S of them, and each of the (K - S)^+ left waiting takes a replica down (at worst a
different one each). ``capacity_quantile`` is the share of replicas serving at the q-th worst
time: 1 - min((K_q - S)^+, R) / R with K_q the q quantile of K. A big GPU's replica is a big
share of the cluster, so one uncovered failure costs it more capacity.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from objectives.availability._poisson import poisson_cdf

_BISECT_STEPS = 40  # integer bisection: covers K up to 2^40


def poisson_quantile(q: float, mean: ArrayLike) -> np.ndarray:
    """The smallest k with P(K <= k) >= q for K ~ Poisson(mean), vectorized."""
    m = np.asarray(mean, float)
    lo = np.zeros(m.shape)  # P(K <= lo - 1) < q is kept: lo - 1 is below the answer
    hi = np.ceil(m + 10.0 * np.sqrt(m) + 10.0)  # P(K <= hi) >= q for any q < 1 - 1e-15
    for _ in range(_BISECT_STEPS):
        if np.all(hi <= lo):
            break
        mid = np.floor((lo + hi) / 2.0)
        ok = poisson_cdf(mid, m) >= q
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid + 1.0)
    return hi


def capacity_quantile(
    replicas: ArrayLike, spares: ArrayLike, mean_in_repair: ArrayLike, q: float = 0.99
) -> np.ndarray:
    """Share of the replicas serving at the time only 1 - q of the time is worse."""
    r = np.asarray(replicas, float)
    down = np.maximum(poisson_quantile(q, mean_in_repair) - np.asarray(spares, float), 0.0)
    return np.where(r >= 1, 1.0 - np.minimum(down, r) / np.maximum(r, 1.0), 0.0)
