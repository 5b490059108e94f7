"""Rows of a batch grouped by equal values, bit for bit, without sorting: what the evaluators
compute once per group (the perf search per distinct hardware, the cost model per distinct die)
every row of the group gets exactly as if computed for it alone."""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

DEDUP_MIN = 64  # below this many rows, work on the rows as they are


@dataclass
class Groups:
    """Rows grouped by equal values: ``first[g]`` is a row of group g (groups in the order of
    these rows), ``inv[i]`` row i's group."""

    first: np.ndarray
    inv: np.ndarray

    @staticmethod
    def each(n: int) -> Groups:
        r = np.arange(n)
        return Groups(r, r)


def dedup(columns: list[np.ndarray]) -> Groups | None:
    """Group the rows of equal-length float columns that are equal bit for bit.

    Rows with equal hashes of the bits are grouped (``same_hash``), then every row is checked
    against its group's representative (all columns but the last, which equal hashes then
    make equal), so the work done once per group gives every row exactly what it would have
    got by itself. None when there are too few rows to be worth it or the hash collides.
    """
    n = columns[0].size if columns else 0
    if n < DEDUP_MIN:
        return None
    bits = []
    for c in columns:
        if c.ndim == 1 and c.strides == (0,) and c.dtype == float:
            continue  # broadcast from one value: equal on every row
        b = np.ascontiguousarray(c, dtype=float).view(np.uint64)
        if not (b == b[0]).all():  # a column of one value groups nothing
            bits.append(b)
    if not bits:
        return Groups(np.zeros(1, np.intp), np.zeros(n, np.intp))
    h = bits[0] * np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(29)
    for b in bits[1:]:  # a column xored in, multiplied and xor-shifted: a light mix each
        h ^= b
        h *= np.uint64(0xFF51AFD7ED558CCD)
        h ^= h >> np.uint64(29)
    # then splitmix64's finalizer once, spreading every bit into the bucket bits
    h += np.uint64(0x9E3779B97F4A7C15)
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    rep = same_hash(h)
    # Every step of the mix is a bijection of 64-bit words, so rows of one hash whose other
    # columns are equal have the last column equal too: only those others are checked.
    if not all(np.array_equal(np.take(b, rep), b) for b in bits[:-1]):
        return None  # a hash collision: no dedup (never seen, but never wrong)
    first = np.flatnonzero(rep == np.arange(n))
    group = np.empty(n, dtype=np.intp)
    group[first] = np.arange(first.size)
    return Groups(first, group[rep])


def on_whole_numbers(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """``f(x)`` for an elementwise ``f`` (whose other operands are one value) of a batch ``x``
    of small whole numbers >= 1 (bonds of a package, GPUs of a block): ``f`` of each number
    1..max(x) once, taken per row, where that table is much shorter than the batch (the same
    operations on the same values); else ``f(x)`` itself."""
    if x.ndim == 1 and x.size >= DEDUP_MIN:
        lo, hi = x.min(), x.max()  # NaN fails both tests
        if lo >= 1 and hi <= x.size // 4 and bool((np.floor(x) == x).all()):
            table = f(np.arange(1.0, hi + 1.0))
            if table.shape == (int(hi),):  # (else an operand of f was not one value)
                return np.take(table, x.astype(np.intp) - 1)
    return f(x)


def same_hash(h: np.ndarray) -> np.ndarray:
    """For every row, the representative row of its hash value (a row whose representative is
    itself), without sorting: rows scatter their index into a table of >= 2n buckets keyed by
    hash bits and read back the bucket's; a row finding another hash there tries again on other
    bits (rows of one hash always share a bucket, so each round settles every bucket's owner)."""
    n = h.size
    width = max(int(2 * n - 1).bit_length(), 4)  # 2^width >= 2n buckets
    mask = np.uint64((1 << width) - 1)
    table = np.empty(1 << width, dtype=np.intp)
    rows, hr = np.arange(n), h
    rep = rows  # every row's found row, the few found with another hash redone
    for shift in range(0, 64 - width + 1, 7):
        bucket = ((hr >> np.uint64(shift)) & mask).view(np.int64)
        table[bucket] = rows
        found = table[bucket]
        if rows is rep:
            rep = found
        else:
            rep[rows] = found
        other = np.flatnonzero(np.take(h, found) != hr)
        if other.size == 0:
            return rep
        rows, hr = rows[other], hr[other]
    # left over after every window of bits (never seen): sort those few
    _, where, back = np.unique(hr, return_index=True, return_inverse=True)
    rep[rows] = rows[where][back]
    return rep


def same_bits(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` hold the same values bit for bit: mappings, sequences and
    dataclasses item by item, arrays and floats by their bytes (-0.0 is not 0.0), anything
    else by ``==`` and its type."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):  # first: most values of a technology table
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, int | str):
        return a == b
    if isinstance(a, Mapping):
        return a.keys() == b.keys() and all(same_bits(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same_bits(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray | np.generic):
        return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if dataclasses.is_dataclass(a):
        fields = (f.name for f in dataclasses.fields(a))
        return all(same_bits(getattr(a, k), getattr(b, k)) for k in fields)
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # no plain answer (an array-like): not known to be the same
        return False
