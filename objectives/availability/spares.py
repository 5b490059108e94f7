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
