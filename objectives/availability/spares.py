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

import functools
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
    ``poisson_cdf``, by integer bisection. A table of the means where the answer steps up
    settles most elements first (``_settled``); the bisection runs on the rest."""
    m = np.asarray(mean, float)
    k, settled = _settled(q, m)
    if settled.all():
        return k
    rest = ~settled
    mr = m[rest]
    k[rest] = _bisect(q, mr, _bisect_top(mr))
    return k


def _bisect_top(m: np.ndarray) -> np.ndarray:
    """Where the bisection starts: P(K <= top) >= q for any q < 1 - 1e-15."""
    return np.ceil(m + 10.0 * np.sqrt(m) + 10.0)


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


#: The table covers means up to this (e^-m a normal double, ~60 terms of the pmf)...
_TABLE_MAX_MEAN = 32.0
#: ... and settles a mean where every P(K <= j) is farther than this from q: ``poisson_cdf``
#: is within 2e-12 of it (tests/objectives/test_special.py), so it compares with q as the
#: exact value does, and the bisection gives the exact quantile.
_MARGIN = 1e-9


def _settled(q: float, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(k, settled): where ``settled``, the answer of the bisection of ``poisson_cdf``.

    P(K <= j) falls with the mean, so the answer is the number of the table's steps below m
    (``_steps``); a mean inside a step's band, where P(K <= j) is within 2 x the margin of
    q, is left to the bisection."""
    if not 4 * _MARGIN < q < 1.0 - 4 * _MARGIN:
        return np.zeros(m.shape), np.zeros(m.shape, dtype=bool)
    edges, cover = _steps(float(q))
    i = _edges_at_or_below(float(q), edges, m)
    settled = ((i & 1) == 0) & (m >= 0.0) & (m <= cover)  # (i >= 0: a bit, not a division)
    return np.array(i >> 1, dtype=float), np.asarray(settled)


def _edges_at_or_below(q: float, edges: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``np.searchsorted(edges, m, side="right")`` (NaN sorts past every edge): the count of
    a grid point near each m (``_grid_counts``), kept where it lies between the edges around m,
    searched elsewhere (a mean near an edge, past the grid, NaN). A binary search per element
    is numpy's slowest step of an availability batch, the grid's look-up a few gathers."""
    if m.ndim != 1 or m.size < 64:
        return np.searchsorted(edges, m, side="right")
    around, counts, scale = _grid_counts(q)
    at = np.fmin(np.fmax(m * scale, 0.0), counts.size - 1.0)  # NaN: 0, and checked below
    i = np.take(counts, at.astype(np.intp))
    ok = (np.take(around, i) <= m) & (m < np.take(around, i + 1))
    if not ok.all():
        rest = np.flatnonzero(~ok)
        i[rest] = np.searchsorted(edges, m[rest], side="right")
    return i


@functools.lru_cache(maxsize=8)
def _grid_counts(q: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(the edges of ``_steps`` between -inf and inf, the count of edges <= each of 16,384 points
    evenly over them, points per unit of mean)."""
    edges = _steps(q)[0]
    scale = 16384 / max(float(edges[-1]) if edges.size else 1.0, 1e-300)
    points = np.arange(16384) / scale
    around = np.concatenate([[-np.inf], edges, [np.inf]])
    return around, np.searchsorted(edges, points, side="right"), scale


@functools.lru_cache(maxsize=8)
def _steps(q: float) -> tuple[np.ndarray, float]:
    """([lo_1, hi_1, lo_2, hi_2, ...], the largest mean they settle): P(K <= j - 1) is
    q + 2 margin at mean lo_j and q - 2 margin at hi_j, so below lo_j the answer is at most
    j - 1 and above hi_j at least j.

    Each by bisection on the mean of the pmf summed from 0 (within ~1e-14 of P(K <= j), far
    inside the margin), up to the first lo_j past ``_TABLE_MAX_MEAN``. Once per q (~3 ms)."""
    top = _TABLE_MAX_MEAN
    k, term, cdf = 0, np.exp(-top), np.exp(-top)
    while cdf <= q + 2 * _MARGIN and k < 1000:  # the last row: P(K <= k) above q at the top
        k += 1
        term *= top / k
        cdf += term
    n = np.arange(0.0, k + 1.0)
    rows = np.concatenate([n, n])
    target = np.repeat([q + 2 * _MARGIN, q - 2 * _MARGIN], n.size)
    lo, hi = np.zeros(rows.shape), rows + 20.0 * np.sqrt(rows + 1.0) + 40.0
    for _ in range(64):  # P(K <= n) >= target at lo, < target at hi (to ~1e-17)
        mid = 0.5 * (lo + hi)
        above = _summed_cdf(rows, mid) >= target
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    lo_j, hi_j = hi[: n.size], hi[n.size :]
    # Steps in order (each band past the one before: q near 1 widens them until they meet),
    # answering below where the bisection starts (above the hi of P(K <= n): n + 1)
    good = (lo_j < hi_j) & (n + 1.0 <= _bisect_top(hi_j))
    good[1:] &= lo_j[1:] > hi_j[:-1]
    end = int(np.argmin(good)) if not good.all() else n.size
    past = np.flatnonzero(lo_j[:end] > _TABLE_MAX_MEAN)
    end = int(past[0]) + 1 if past.size else end
    edges = np.stack([lo_j[:end], hi_j[:end]], axis=1).reshape(-1)
    # below the last step's band every P(K <= j) from there on is above q: settled
    return edges, min(_TABLE_MAX_MEAN, float(lo_j[end - 1])) if end else -np.inf


def _summed_cdf(n: np.ndarray, m: np.ndarray) -> np.ndarray:
    """P(K <= n) for K ~ Poisson(m), row by row: the pmf summed from 0 (m up to ~700)."""
    width = int(n.max()) + 1
    terms = np.empty((n.size, width))
    terms[:, 0] = np.exp(-m)
    terms[:, 1:] = m[:, None] / np.arange(1.0, width)  # p(i) = p(i - 1) m / i
    cdf = np.cumsum(np.cumprod(terms, axis=1), axis=1)
    return cdf[np.arange(n.size), n.astype(np.intp)]


def capacity_quantile(
    replicas: ArrayLike, spares: ArrayLike, mean_in_repair: ArrayLike, q: float = 0.99
) -> np.ndarray:
    """Share of the replicas serving at the time only 1 - q of the time is worse."""
    r = np.asarray(replicas, float)
    down = np.maximum(poisson_quantile(q, mean_in_repair) - np.asarray(spares, float), 0.0)
    return np.where(r >= 1, 1.0 - np.minimum(down, r) / np.maximum(r, 1.0), 0.0)
