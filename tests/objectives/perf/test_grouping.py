"""Hardware grouping of the perf search: rows grouped exactly by the bits of their values."""

from __future__ import annotations

import numpy as np

from objectives._groups import dedup as _dedup
from objectives._groups import same_hash as _same_hash


def _check_partition(key: np.ndarray, first: np.ndarray, inv: np.ndarray) -> None:
    """``inv`` groups rows exactly as ``key`` does; ``first[g]`` is a row of group g."""
    _, by_key = np.unique(key, axis=0, return_inverse=True)
    by_key = by_key.ravel()
    assert np.array_equal(inv[first], np.arange(first.size))
    assert np.all(np.diff(first) > 0)  # groups in the order of their representatives
    # the same partition: a one-to-one map between the two labellings
    pairs = np.unique(np.stack([by_key, inv]), axis=1)
    assert pairs.shape[1] == first.size == np.unique(by_key).size


def test_dedup_groups_rows_equal_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    n = 5000
    base = rng.choice([0.0, -0.0, 1.5, np.nan, 1e300, 2.0**-1074], size=(40, 3))
    pick = rng.integers(0, 40, n)
    cols = [base[pick, j] for j in range(3)]
    cols.append(np.broadcast_to(np.array(7.0), (n,)))  # stride 0
    cols.append(np.full(n, 3.0))  # one value
    g = _dedup(cols)
    assert g is not None
    key = np.stack([c.view(np.uint64) if c.strides != (0,) else np.zeros(n, np.uint64)
                    for c in cols[:3]], axis=1)  # fmt: skip
    _check_partition(key, g.first, g.inv)
    # -0.0 and 0.0, or NaN payloads, are different bits: never one group
    for j in range(3):
        assert np.array_equal(cols[j][g.first[g.inv]].view(np.uint64), cols[j].view(np.uint64))


def test_dedup_of_columns_with_one_value_is_one_group() -> None:
    n = 100
    g = _dedup([np.full(n, 2.0), np.broadcast_to(np.array(1.0), (n,))])
    assert g is not None and g.first.size == 1 and not g.inv.any()


def test_same_hash_settles_hashes_that_share_every_bucket() -> None:
    # hashes differing only in the top bits share a bucket in every window of bits: the rows
    # left over are grouped by sorting, and every row still gets a row of its own hash
    rng = np.random.default_rng(1)
    top = rng.integers(0, 32, 3000).astype(np.uint64) << np.uint64(59)
    low = rng.integers(0, 50, 3000).astype(np.uint64)
    h = top | low
    rep = _same_hash(h)
    assert np.array_equal(h[rep], h)
    assert np.array_equal(rep[rep], rep)  # a representative represents itself
    first = np.flatnonzero(rep == np.arange(h.size))
    assert first.size == np.unique(h).size
