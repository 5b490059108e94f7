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


def test_on_whole_numbers_is_f_of_the_batch_bit_for_bit() -> None:
    from objectives._groups import on_whole_numbers

    rng = np.random.default_rng(1)
    x = rng.integers(1, 300, 4096).astype(float)
    calls: list[int] = []

    def f(v: np.ndarray) -> np.ndarray:
        calls.append(v.size)
        return 0.97**v * (1.0 / np.maximum(v ** (1.0 / 3.0), 1.0))

    got = on_whole_numbers(f, x)
    assert np.array_equal(got.view(np.uint64), f(x).view(np.uint64))
    assert calls[0] == x.max()  # once per number 1..max, not per row
    # not small whole numbers >= 1 (a fraction, a zero, NaN, few rows): f of the batch itself
    for y in (x + 0.5, np.append(x, 0.0), np.append(x, np.nan), x[:10]):
        calls.clear()
        assert np.array_equal(on_whole_numbers(f, y), f(y), equal_nan=True)
        assert calls[0] == y.size


def test_dedup_of_one_varying_column_groups_its_bits() -> None:
    """One varying column is grouped by its hash alone (the mix is a bijection of 64-bit
    words): still exactly its bits, -0.0 apart from 0.0."""
    rng = np.random.default_rng(2)
    col = rng.choice([0.0, -0.0, 1.5, np.nan, 2.0**-1074, 3.0], size=3000)
    g = _dedup([col, np.full(3000, 2.0)])
    assert g is not None
    _check_partition(col.view(np.uint64)[:, None], g.first, g.inv)
