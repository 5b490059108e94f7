"""A sweep cut into numbered chunks: each chunk's designs are a pure function of its number.

That is what lets chunks run anywhere (in-process, local worker processes, a Dask cluster), in
any order, and be re-run after a lost worker or an interrupted sweep with the same result:
every chunk is reduced to its own feasible front on the worker (a few hundred rows whatever the
chunk size), and :class:`SweepTally` merges chunk fronts into the one incremental archive
(:class:`~dse.model.pareto.ParetoArchive`) as they arrive. The
non-dominated subset of a union does not depend on the merge order, and each front row keeps
its global design number, so the final front is identical however the chunks were scheduled.
Finished chunk fronts are persisted atomically (:class:`ChunkStore`) for resuming.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import pickle
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dse.errors import DseError
from dse.model.batched import as_column
from dse.model.outcome import Outcome
from dse.model.pareto import ParetoArchive, nondominated_mask
from dse.model.study_model import StudyModel
from dse.spec.schema import CategoricalParam, IntParam, ParamSpec

if TYPE_CHECKING:
    import pandas as pd

#: Folder (inside the study folder) holding the finished chunk fronts of unfinished sweeps.
CHUNKS_DIR = "sweep_chunks"
#: Designs per vectorized call: per-call costs of the evaluators (thousands of small numpy
#: calls) are ~12 % of a 65,536-design chunk, ~5 % of this (benchmarks/RESULTS.md).
DEFAULT_CHUNK = 1 << 17


# -- design generators (numpy only, index-addressable) ---------------------------------------


def axis_length(p: ParamSpec) -> float:
    """How many grid values a parameter has, counted without making them (inf: a float
    without ``step``)."""
    if isinstance(p, CategoricalParam):
        return len(p.choices)
    if isinstance(p, IntParam):
        return (p.high - p.low) // p.step + 1
    count = (p.high - p.low) / p.step if p.step else math.inf
    return math.floor(count + 1e-9) + 1 if math.isfinite(count) else math.inf


def grid_axis(p: ParamSpec) -> np.ndarray | None:
    """Every grid value of a parameter (the grid sampler's and the sweep's); None for a float
    without ``step``."""
    if isinstance(p, CategoricalParam):
        return as_column(p.choices)
    n = axis_length(p)
    if not math.isfinite(n):
        return None
    return p.low + p.step * np.arange(int(n), dtype=np.int64 if isinstance(p, IntParam) else float)


_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79)


_TABLE_SIZE = 1 << 12


@functools.cache
def _radical_table(base: int, digits: int) -> np.ndarray:
    """The base-``base`` radical inverse of every number below ``base**digits``."""
    k = np.arange(base**digits, dtype=np.int64)
    f, r = 1.0, np.zeros(len(k))
    for _ in range(digits):
        f /= base
        r += f * (k % base)
        k = k // base
    return r


def _radical_inverse_run(base: int, first: int, n: int) -> np.ndarray:
    """Radical inverses of the consecutive numbers ``first .. first+n-1`` in ``base``.

    The low p digits (a table of ``base**p`` entries) repeat cyclically along a run and the
    higher digits change once per cycle, so the low part is a slice of the tiled table and
    each higher digit group adds one repeated term per cycle: no per-element division. The
    terms are added in the same order as the digit-by-digit sum (low digits first), so the
    values are bit-identical to it.
    """
    if n < 1:
        return np.zeros(0)
    p = max(1, int(math.log(_TABLE_SIZE) / math.log(base)))
    group = base**p
    table = _radical_table(base, p)
    off = first % group
    r = np.tile(table, -(-(off + n) // group))[off : off + n]
    q = np.arange(first // group, (first + n - 1) // group + 1, dtype=np.int64)
    if len(q) == 1:
        counts = np.array([n])
    else:
        counts = np.full(len(q), group, dtype=np.int64)
        counts[0] = group - off
        counts[-1] = first + n - q[-1] * group
    scale = 1.0
    while q.any():
        scale /= group
        q, digits = np.divmod(q, group)
        term = scale * table[digits]
        r += term[0] if len(term) == 1 else np.repeat(term, counts)
    return r


def halton(start: int, n: int, dim: int, *, seed: int | None) -> np.ndarray:
    """Rows ``start..start+n`` of a randomly shifted Halton sequence in ``[0, 1)^dim``.

    numpy only, so samples are identical with or without scipy installed. The Cranley-Patterson
    shift (seeded) decorrelates runs with different seeds while keeping low discrepancy.
    """
    if dim > len(_PRIMES):
        raise DseError(f"quasi-random samples support at most {len(_PRIMES)} parameters")
    out = np.empty((dim, n))  # one contiguous row per dimension, returned transposed
    shift = np.random.default_rng(seed).random(dim)
    for j in range(dim):  # skip the all-zero point: numbers start at 1
        row = out[j]
        np.add(_radical_inverse_run(_PRIMES[j], start + 1, n), shift[j], out=row)
        row[row >= 1.0] -= 1.0  # (u + shift) mod 1, exactly: u + shift < 2
    return out.T


def _from_unit(p: ParamSpec, u: np.ndarray) -> np.ndarray:
    """Map uniform ``u`` to a parameter the way Optuna's distributions sample it."""
    if isinstance(p, CategoricalParam):
        choices = as_column(p.choices)
        return choices[np.minimum((u * len(choices)).astype(np.int64), len(choices) - 1)]
    if isinstance(p, IntParam):
        if p.log:
            lo, hi = math.log(p.low - 0.5), math.log(p.high + 0.5)
            v = np.rint(np.exp(lo + u * (hi - lo))).astype(np.int64)
        else:
            k = (p.high - p.low) // p.step + 1
            v = p.low + p.step * np.minimum((u * k).astype(np.int64), k - 1)
        return np.clip(v, p.low, p.high)
    if p.step is not None:
        k = int(math.floor((p.high - p.low) / p.step + 1e-9)) + 1
        return p.low + p.step * np.minimum((u * k).astype(np.int64), k - 1).astype(float)
    if p.log:
        lo, hi = math.log(p.low), math.log(p.high)
        return np.exp(lo + u * (hi - lo))
    return p.low + u * (p.high - p.low)


@dataclass(frozen=True)
class SweepPlan:
    """Which designs chunk ``i`` holds: grid or Halton rows ``i*chunk`` onwards."""

    mode: str
    total: int
    chunk: int
    seed: int | None
    axes: dict[str, np.ndarray] | None = None  # grid
    space: dict[str, Any] | None = None  # samples: name -> ParamSpec

    @property
    def n_chunks(self) -> int:
        return math.ceil(self.total / self.chunk)

    def designs(self, index: int) -> tuple[int, dict[str, np.ndarray]]:
        """(number of designs, params) of chunk ``index``."""
        start = index * self.chunk
        m = min(self.chunk, self.total - start)
        if self.axes is not None:
            names = list(self.axes)
            shape = tuple(len(self.axes[n]) for n in names)
            flat = np.arange(start, start + m, dtype=np.int64)
            idx = np.unravel_index(flat, shape) if shape else ()
            return m, {n: self.axes[n][i] for n, i in zip(names, idx, strict=True)}
        assert self.space is not None
        names = list(self.space)
        u = halton(start, m, len(names), seed=self.seed)
        return m, {n: _from_unit(self.space[n], u[:, j]) for j, n in enumerate(names)}


@dataclass
class ChunkFront:
    """One chunk's counts and feasible non-dominated designs (with global design numbers)."""

    index: int
    designs: int
    finite: int
    feasible: int
    ids: np.ndarray
    params: dict[str, np.ndarray]
    metrics: dict[str, np.ndarray]


def chunks_per_task(remaining: int, workers: int, cap: int) -> int:
    """Consecutive chunks to send as one task: up to ``cap`` while at least 4 tasks per worker
    remain, then fewer, down to one for the last ones (a task's overhead is per task; the
    tail's imbalance is per task too). Each chunk is still its own front and resume file."""
    return max(1, min(cap, remaining // (4 * workers)))


def evaluate_chunk(model: StudyModel, plan: SweepPlan, index: int) -> ChunkFront:
    """Evaluate chunk ``index`` in one vectorized call and keep its feasible front."""
    m, params = plan.designs(index)
    ok = model.screen(params, m)
    if ok.all():
        metrics = model.evaluate(params, strict=False)
    else:  # evaluate only the designs the design-only constraints let through
        full = {k: np.broadcast_to(v, (m,)) for k, v in params.items()}
        keep = ok if ok.any() else np.arange(m) < 1  # none: one design, for the metric names
        part = model.evaluate({k: v[keep] for k, v in full.items()}, strict=False)
        metrics = {k: np.full(m, np.nan) for k in part}
        if ok.any():
            for k, v in part.items():
                metrics[k][ok] = v
    out = Outcome.batch(metrics, model.violations(params, metrics), model.objective_names, m)
    obj = np.column_stack(out.objectives)
    ok = np.all(np.isfinite(obj), axis=1)
    finite = int(ok.sum())
    ok &= out.feasible
    keep = np.flatnonzero(ok)
    feasible = len(keep)
    if feasible:
        keep = keep[nondominated_mask(obj[keep], model.maximize)]
    return ChunkFront(
        index=index,
        designs=m,
        finite=finite,
        feasible=feasible,
        ids=keep.astype(np.int64) + index * plan.chunk,
        params={k: np.broadcast_to(v, (m,))[keep] for k, v in params.items()},
        metrics={k: v[keep] for k, v in out.metrics.items()},
    )


@dataclass
class SweepTally:
    """The counts of every chunk merged so far and their feasible front, kept in the one
    incremental archive (:class:`~dse.model.pareto.ParetoArchive`) with the columns of the
    front table: ``id`` (global design number), ``params.<name>`` and every metric."""

    objectives: list[str]
    maximize: list[bool]
    designs: int = 0
    finite: int = 0
    feasible: int = 0
    chunks: int = 0
    archive: ParetoArchive = field(init=False)

    def __post_init__(self) -> None:
        self.archive = ParetoArchive(self.maximize)

    def __len__(self) -> int:
        return len(self.archive)

    def add(self, cf: ChunkFront) -> None:
        self.designs += cf.designs
        self.finite += cf.finite
        self.feasible += cf.feasible
        self.chunks += 1
        if len(cf.ids):
            cols = {"id": cf.ids, **{f"params.{k}": v for k, v in cf.params.items()}}
            cols.update(cf.metrics)
            self.archive.add(np.column_stack([cf.metrics[k] for k in self.objectives]), cols)


def front_frame(tally: SweepTally, objectives: list[str]) -> pd.DataFrame:
    """The front as a table, in an order independent of chunk scheduling: by the first
    objective, ties by design number; a design found twice (samples) is listed once.
    pandas is imported here, not by the module: worker processes never build the table."""
    import pandas as pd

    archive = tally.archive
    if not len(tally):
        return pd.DataFrame()
    order = archive.order(tie="id")
    columns = archive.columns
    params = [k for k in columns if k.startswith("params.")]
    metrics = [k for k in columns if k != "id" and k not in params]
    names = params + [k for k in objectives if k in metrics]
    names += [k for k in metrics if k not in objectives]
    df = pd.DataFrame({k: columns[k][order] for k in names})
    if params:
        df = df.drop_duplicates(subset=params)
    return df.reset_index(drop=True)


def sweep_key(model: StudyModel, plan: SweepPlan) -> str:
    """A digest of everything that decides the chunks' results (spec, overrides, plan)."""
    payload = {
        "spec": model.spec.model_dump(mode="json"),
        "overrides": model.fixed_overrides,
        "context": model.context,
        "plan": [plan.mode, plan.total, plan.chunk, plan.seed],
    }
    text = json.dumps(payload, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class ChunkStore:
    """Finished chunk fronts of one sweep, one file each, written atomically (tmp + rename).

    No fsync: a killed sweep never sees a torn file (the rename is atomic), and after a power
    loss an unreadable file is simply re-run; fsync per chunk would cost seconds per sweep.
    """

    def __init__(self, study_directory: Path, key: str) -> None:
        self.directory = study_directory / CHUNKS_DIR / key

    def _path(self, index: int) -> Path:
        return self.directory / f"chunk-{index:09d}.pkl"

    def finished(self) -> list[int]:
        if not self.directory.is_dir():
            return []
        out = []
        for p in self.directory.glob("chunk-*.pkl"):
            try:
                out.append(int(p.stem.removeprefix("chunk-")))
            except ValueError:
                continue
        return sorted(out)

    def load(self, index: int) -> ChunkFront | None:
        """The stored chunk, or None when its file is unreadable (it is then re-run)."""
        try:
            with open(self._path(index), "rb") as fh:
                cf = pickle.load(fh)
        except (OSError, pickle.UnpicklingError, EOFError, ValueError, AttributeError):
            return None
        return cf if isinstance(cf, ChunkFront) and cf.index == index else None

    def save(self, cf: ChunkFront) -> None:
        """One pickle per chunk (0.5 ms; an .npz of ~90 small arrays took 3 ms of the
        client's time per chunk). The folder is this sweep's own scratch space."""
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self._path(cf.index)
        tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            pickle.dump(cf, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, final)

    def clear(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
        parent = self.directory.parent
        if parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
