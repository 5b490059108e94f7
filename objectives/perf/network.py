"""Collective-communication times on the scale-up fabric (alpha-beta model).

Each GPU has ``bw`` bytes/s per direction into a non-blocking fabric (NVSwitch or an optical
circuit/packet switch), so ring and tree algorithms are limited by the per-GPU bandwidth; the
collective library picks the faster of the two, as NCCL does by message size.
"""

from __future__ import annotations

import numpy as np

Arr = np.ndarray


def allreduce_s(nbytes: Arr, p: Arr, bw: Arr, alpha: Arr) -> Arr:
    """All-reduce of ``nbytes`` over ``p`` GPUs: min(ring, double binary tree); 0 when p = 1.

    Ring: reduce-scatter + all-gather, 2(p-1) steps of n/p bytes.
    Tree: reduce up and broadcast down a depth-log2(p) tree, pipelined (bandwidth term 2n/bw).
    """
    p = np.maximum(p, 1.0)
    ring = 2 * (p - 1) / p * nbytes / bw + 2 * (p - 1) * alpha
    tree = 2 * nbytes / bw + 2 * np.log2(p) * alpha
    return np.where(p > 1, np.minimum(ring, tree), 0.0)


def allgather_s(nbytes: Arr, p: Arr, bw: Arr, alpha: Arr) -> Arr:
    """All-gather of a total of ``nbytes`` (each GPU holds n/p): min(ring, tree)."""
    p = np.maximum(p, 1.0)
    ring = (p - 1) / p * nbytes / bw + (p - 1) * alpha
    tree = nbytes / bw + np.log2(p) * alpha
    return np.where(p > 1, np.minimum(ring, tree), 0.0)


def p2p_s(nbytes: Arr, bw: Arr, alpha: Arr) -> Arr:
    """One point-to-point send (pipeline stage boundary)."""
    return nbytes / bw + alpha
