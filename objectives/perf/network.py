"""Collective-communication times on the scale-up fabric (alpha-beta model).

Each GPU has ``bw`` bytes/s per direction for the collective (already reduced by the topology:
see ``objectives.fabric.topology.group_links``). On a switched or packet fabric the collective
library picks the faster of ring and double binary tree, as NCCL does by message size; on a
torus (direct or OCS fabric) the collective runs dimension by dimension, one neighbour hop per
step. Pass the per-candidate ``fabric`` figures (``alpha_s``, ``torus_dims``, ``p2p_alpha_s``)
to use the topology; without them every fabric is a non-blocking switch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives.fabric.topology import torus_steps

Arr = np.ndarray


def _latency(
    p: Arr, alpha: Arr, fabric: Mapping[str, Any] | None, ring_steps: Arr, tree_steps: Arr
) -> tuple[Arr, Arr | None, Arr]:
    """(ring-or-torus steps, tree steps or None where no fabric has a tree, alpha)."""
    if fabric is None or "torus_dims" not in fabric:
        return ring_steps, tree_steps, alpha
    dims = fabric["torus_dims"]
    alpha = fabric["alpha_s"]
    torus = dims > 0
    if not torus.any():
        return ring_steps, tree_steps, alpha
    steps = torus_steps(p, dims)  # equals the ring's p - 1 where dims <= 1
    if torus.all():
        return steps, None, alpha
    return steps, np.where(torus, np.inf, tree_steps), alpha


def _rows(cond: Any, x: Any) -> np.ndarray | None:
    """The rows a (k, 1) condition is false on, when ``x`` is a (k, n) float array (else None);
    likewise a (k, 1, ..., 1) condition against a (k, ...) array of as many axes (the search's
    product grid, objectives.perf.search.Grid)."""
    c = np.asarray(cond)
    if (
        isinstance(x, np.ndarray)
        and x.dtype == np.float64
        and x.ndim >= 2
        and c.ndim == x.ndim
        and c.shape[0] == x.shape[0]
        and c.size == x.shape[0]
        and c.dtype == bool
    ):
        return ~c.reshape(-1)
    return None


def where_zero(cond: Any, fresh: Arr) -> Arr:
    """``np.where(cond, fresh, 0.0)``, overwriting ``fresh`` (an array no one else holds): a
    (k, 1) condition zeroes whole rows, several times faster than numpy's where per element."""
    off = _rows(cond, fresh)
    if off is None or not fresh.flags.writeable:
        return np.where(cond, fresh, 0.0)
    fresh[off] = 0.0
    return fresh


def plus_where(base: Arr, cond: Any, extra: Arr) -> Arr:
    """``base + np.where(cond, extra, 0.0)`` (the same values), by whole rows for a (k, 1)
    condition against a (k, n) ``base``."""
    off = _rows(cond, base)
    if off is None or np.broadcast_shapes(base.shape, np.shape(extra)) != base.shape:
        return base + np.where(cond, extra, 0.0)
    out = base + extra
    out[off] = base[off] + 0.0
    return out


def allreduce_s(
    nbytes: Arr, p: Arr, bw: Arr, alpha: Arr, fabric: Mapping[str, Any] | None = None
) -> Arr:
    """All-reduce of ``nbytes`` over ``p`` GPUs; 0 when p = 1.

    Ring: reduce-scatter + all-gather, 2(p-1) steps of n/p bytes (on a torus 2 x the torus
    steps, same bytes). Tree: reduce up and broadcast down a depth-log2(p) tree, pipelined
    (bandwidth term 2n/bw); not on a torus.
    """
    p = np.maximum(p, 1.0)
    steps, tree_steps, alpha = _latency(p, alpha, fabric, p - 1, np.log2(p))
    ring = 2 * (p - 1) / p * nbytes / bw + 2 * steps * alpha
    if tree_steps is not None:
        ring = np.minimum(ring, 2 * nbytes / bw + 2 * tree_steps * alpha)
    return where_zero(p > 1, ring)


def allgather_s(
    nbytes: Arr, p: Arr, bw: Arr, alpha: Arr, fabric: Mapping[str, Any] | None = None
) -> Arr:
    """All-gather of a total of ``nbytes`` (each GPU holds n/p): min(ring, tree)."""
    p = np.maximum(p, 1.0)
    steps, tree_steps, alpha = _latency(p, alpha, fabric, p - 1, np.log2(p))
    ring = (p - 1) / p * nbytes / bw + steps * alpha
    if tree_steps is not None:
        ring = np.minimum(ring, nbytes / bw + tree_steps * alpha)
    return where_zero(p > 1, ring)


def p2p_s(nbytes: Arr, bw: Arr, alpha: Arr, fabric: Mapping[str, Any] | None = None) -> Arr:
    """One point-to-point send (pipeline stage boundary)."""
    if fabric is not None and "alpha_s" in fabric:
        alpha = fabric["alpha_s"]
    return nbytes / bw + alpha


def all_to_all_s(
    nbytes: Arr, p: Arr, bw: Arr, alpha: Arr, fabric: Mapping[str, Any] | None = None
) -> Arr:
    """All-to-all in which every GPU of ``p`` sends ``nbytes`` in all to the others (expert
    parallelism's dispatch or combine); 0 when p = 1.

    Each byte crosses ``a2a_hops`` links and every GPU's links carry its share of the load, so
    the time is nbytes x hops / bw plus one latency per hop of the longest path. On a switch a
    byte crosses one hop. On a k-dimensional torus of side n = p^(1/k) (bidirectional rings,
    shortest paths) the mean distance to the other GPUs is k n^(k+1) / (4 (p - 1)) for even n
    (a ring of 8: 16/7), the longest k floor(n/2).
    """
    p = np.maximum(np.asarray(p, float), 1.0)
    hops, longest = a2a_hops(p, fabric)
    if fabric is not None and "alpha_s" in fabric:
        alpha = fabric["alpha_s"]
    return where_zero(p > 1, nbytes * hops / bw + longest * alpha)


def a2a_hops(p: Arr, fabric: Mapping[str, Any] | None = None) -> tuple[Arr, Arr]:
    """(mean links a byte crosses, links of the longest path) of an all-to-all over p GPUs."""
    p = np.maximum(np.asarray(p, float), 1.0)
    if fabric is None or "torus_dims" not in fabric:
        return np.ones_like(p), np.ones_like(p)
    dims = np.asarray(fabric["torus_dims"], float)
    # the group's torus uses up to dims dimensions, each of side >= 2
    k = np.maximum(np.minimum(dims, np.floor(np.log2(p) + 1e-9)), 1.0)
    n = p ** (1.0 / k)
    mean = k * n ** (k + 1) / (4.0 * np.maximum(p - 1.0, 1.0))
    longest = k * np.floor(n / 2.0 + 1e-9)
    torus = dims > 0
    return np.where(torus, mean, 1.0), np.where(torus, longest, 1.0)


def dispatch_destinations(experts: float, per_token: float, ep: Arr) -> Arr:
    """Expected GPUs other than its own that one token is sent to when its ``per_token``
    distinct experts are drawn uniformly from ``experts`` spread evenly over ``ep`` GPUs (each
    destination gets the token once, as DeepEP and TensorRT-LLM's all-to-all send it)."""
    ep = np.maximum(np.asarray(ep, float), 1.0)
    local = experts / ep
    none = np.ones_like(ep)  # P(a given other GPU holds none of the token's experts)
    for i in range(int(per_token)):
        none = none * np.maximum(experts - local - i, 0.0) / (experts - i)
    return (ep - 1.0) * (1.0 - none)
