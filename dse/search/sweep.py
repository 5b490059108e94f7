"""Vectorized sweeps: the exact Pareto front of a discretized space, by brute force.

The evaluators take numpy arrays, so a grid (every ``step``/choice combination) or N
quasi-random samples are evaluated in chunks with the same :meth:`StudyModel.evaluate` that
serves one trial. Only the running non-dominated feasible set is kept (moocore), so memory is
bounded by the chunk size plus the front, whatever the size of the space. The grid front is the
yardstick for the samplers' search quality (:mod:`dse.results.quality`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import moocore
import numpy as np
import pandas as pd

from dse.model.pareto import as_min, nondominated_mask, reference_point
from dse.model.study_model import StudyModel
from dse.search.storage import study_dir
from dse.spec.errors import DseError
from dse.spec.schema import CategoricalParam, FloatParam, IntParam, ParamSpec

SWEEP_FRONT_CSV = "sweep_front.csv"
SWEEP_JSON = "sweep.json"
DEFAULT_CHUNK = 1 << 16

__all__ = [
    "SWEEP_FRONT_CSV",
    "SWEEP_JSON",
    "SweepError",
    "SweepResult",
    "grid_axes",
    "halton",
    "read_sweep",
    "sweep",
    "warm_start_designs",
]


class SweepError(DseError):
    """A sweep cannot be set up (continuous parameter on a grid, bad sizes)."""


@dataclass
class SweepResult:
    """What a sweep found, and how fast."""

    study: str
    mode: str
    designs_evaluated: int
    finite: int
    feasible: int
    front_size: int
    seconds: float
    designs_per_s: float
    chunk: int
    seed: int | None
    space_size: int | None
    objectives: list[dict[str, Any]]
    front: pd.DataFrame
    directory: Path | None = None

    def summary(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("front")
        d["directory"] = str(self.directory) if self.directory else None
        return d


# -- design generators --------------------------------------------------------------------------


def _axis(name: str, p: ParamSpec) -> np.ndarray:
    if isinstance(p, CategoricalParam):
        return _choices(p)
    if isinstance(p, IntParam):
        return np.arange(p.low, p.high + 1, p.step, dtype=np.int64)
    if p.step is None:
        raise SweepError(
            f"space.{name}: a grid needs a 'step' for float parameters "
            "(add step: ..., or use --samples N)"
        )
    n = int(math.floor((p.high - p.low) / p.step + 1e-9))
    return p.low + p.step * np.arange(n + 1, dtype=float)


def _choices(p: CategoricalParam) -> np.ndarray:
    """The choices as an array; mixed types (``[0.5, big, 2]``) stay Python objects, since
    numpy would turn them all into strings."""
    if len({type(c) for c in p.choices}) == 1:
        return np.asarray(p.choices)
    out = np.empty(len(p.choices), dtype=object)
    out[:] = p.choices
    return out


def grid_axes(space: dict[str, ParamSpec]) -> dict[str, np.ndarray]:
    """Every parameter's grid values; continuous floats (no ``step``) are refused."""
    bad = [n for n, p in space.items() if isinstance(p, FloatParam) and p.step is None]
    if bad:
        raise SweepError(
            f"a grid needs a 'step' for float parameters: {', '.join(bad)} "
            "(add step: ..., or use --samples N)"
        )
    return {n: _axis(n, p) for n, p in space.items()}


def _grid_chunks(
    axes: dict[str, np.ndarray], chunk: int
) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    names = list(axes)
    shape = tuple(len(axes[n]) for n in names)
    total = math.prod(shape)
    for start in range(0, total, chunk):
        flat = np.arange(start, min(start + chunk, total), dtype=np.int64)
        idx = np.unravel_index(flat, shape) if shape else ()
        yield len(flat), {n: axes[n][i] for n, i in zip(names, idx, strict=True)}


_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79)


def halton(start: int, n: int, dim: int, *, seed: int | None) -> np.ndarray:
    """Rows ``start..start+n`` of a randomly shifted Halton sequence in ``[0, 1)^dim``.

    numpy only, so samples are identical with or without scipy installed. The Cranley-Patterson
    shift (seeded) decorrelates runs with different seeds while keeping low discrepancy.
    """
    if dim > len(_PRIMES):
        raise SweepError(f"quasi-random samples support at most {len(_PRIMES)} parameters")
    idx = np.arange(start + 1, start + n + 1, dtype=np.int64)  # skip the all-zero point
    out = np.empty((n, dim))
    for j in range(dim):
        base = _PRIMES[j]
        k = idx.copy()
        f = 1.0
        r = np.zeros(n)
        while np.any(k > 0):
            f /= base
            r += f * (k % base)
            k //= base
        out[:, j] = r
    shift = np.random.default_rng(seed).random(dim)
    return (out + shift) % 1.0


def _from_unit(p: ParamSpec, u: np.ndarray) -> np.ndarray:
    """Map uniform ``u`` to a parameter the way Optuna's distributions sample it."""
    if isinstance(p, CategoricalParam):
        choices = _choices(p)
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


def _sample_chunks(
    space: dict[str, ParamSpec], n: int, chunk: int, seed: int | None
) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    names = list(space)
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        u = halton(start, m, len(names), seed=seed)
        yield m, {name: _from_unit(space[name], u[:, j]) for j, name in enumerate(names)}


# -- the sweep ----------------------------------------------------------------------------------


def space_size(space: dict[str, ParamSpec]) -> int | None:
    """Number of grid points, or None when a float has no step."""
    try:
        return math.prod(len(a) for a in grid_axes(space).values())
    except SweepError:
        return None


def sweep(
    model: StudyModel,
    *,
    samples: int | None = None,
    chunk: int = DEFAULT_CHUNK,
    seed: int | None = 0,
    write: bool = True,
    on_progress: Callable[[int, int, int], None] | None = None,
) -> SweepResult:
    """Evaluate the grid (``samples=None``) or N quasi-random samples; keep the feasible front.

    ``on_progress(done, total, front_size)`` is called after each chunk. With ``write`` the
    front goes to ``studies/<study>/sweep_front.csv`` and the counts to ``sweep.json``.
    """
    if chunk < 1:
        raise SweepError(f"--chunk must be at least 1 (got {chunk})")
    space = dict(model.spec.space)
    size = space_size(space)
    if samples is None:
        axes = grid_axes(space)
        total = math.prod(len(a) for a in axes.values())
        chunks = _grid_chunks(axes, chunk)
        mode = "grid"
    else:
        if samples < 1:
            raise SweepError(f"--samples must be at least 1 (got {samples})")
        total = samples
        chunks = _sample_chunks(space, samples, chunk, seed)
        mode = "samples"

    names = model.objective_names
    maximize = model.maximize
    front_params: dict[str, np.ndarray] = {}
    front_metrics: dict[str, np.ndarray] = {}
    done = finite_n = feasible_n = 0
    t0 = time.perf_counter()
    for m, params in chunks:
        metrics = model.evaluate(params, strict=False)
        obj = np.column_stack([np.broadcast_to(metrics[k], (m,)) for k in names])
        ok = np.all(np.isfinite(obj), axis=1)
        finite_n += int(ok.sum())
        viol = model.violations(params, metrics)
        for v in viol:
            ok &= np.broadcast_to(np.asarray(v, dtype=float) <= 0.0, (m,))
        feasible_n += int(ok.sum())
        done += m
        if ok.any():
            keep = np.flatnonzero(ok)
            keep = keep[nondominated_mask(obj[keep], maximize)]
            cand_p = {k: np.broadcast_to(v, (m,))[keep] for k, v in params.items()}
            cand_m = {k: np.broadcast_to(v, (m,))[keep] for k, v in metrics.items()}
            if front_params or front_metrics:
                cand_p = {k: np.concatenate([front_params[k], v]) for k, v in cand_p.items()}
                cand_m = {k: np.concatenate([front_metrics[k], v]) for k, v in cand_m.items()}
            pts = np.column_stack([cand_m[k] for k in names])
            mask = nondominated_mask(pts, maximize)
            front_params = {k: v[mask] for k, v in cand_p.items()}
            front_metrics = {k: v[mask] for k, v in cand_m.items()}
        if on_progress:
            n_front = len(next(iter(front_metrics.values()))) if front_metrics else 0
            on_progress(done, total, n_front)
    seconds = time.perf_counter() - t0

    front = _front_frame(front_params, front_metrics, names, maximize)
    result = SweepResult(
        study=model.spec.study,
        mode=mode,
        designs_evaluated=done,
        finite=finite_n,
        feasible=feasible_n,
        front_size=len(front),
        seconds=seconds,
        designs_per_s=done / seconds if seconds > 0 else math.inf,
        chunk=chunk,
        seed=seed if mode == "samples" else None,
        space_size=size,
        objectives=[o.model_dump(mode="json") for o in model.spec.objectives],
        front=front,
    )
    if write:
        directory = study_dir(model.spec.study, create=True)
        front.to_csv(directory / SWEEP_FRONT_CSV, index=False)
        (directory / SWEEP_JSON).write_text(
            json.dumps({**result.summary(), "directory": str(directory)}, indent=2) + "\n",
            encoding="utf-8",
        )
        result.directory = directory
    return result


def _front_frame(
    params: dict[str, np.ndarray],
    metrics: dict[str, np.ndarray],
    objectives: list[str],
    maximize: list[bool],
) -> pd.DataFrame:
    cols: dict[str, Any] = {f"params.{k}": v for k, v in params.items()}
    cols.update({k: metrics[k] for k in objectives if k in metrics})
    cols.update({k: v for k, v in metrics.items() if k not in objectives})
    df = pd.DataFrame(cols)
    if df.empty:
        return df
    pcols = [c for c in df.columns if c.startswith("params.")]
    if pcols:
        df = df.drop_duplicates(subset=pcols)
    return df.sort_values(objectives[0], ascending=not maximize[0]).reset_index(drop=True)


def warm_start_designs(
    model: StudyModel, *, samples: int, k: int, seed: int | None = 0
) -> list[dict[str, Any]]:
    """Up to ``k`` designs of a coarse quasi-random sweep's feasible front, chosen for volume.

    Enqueued as a sampler's first trials (``search.warm_start``), they start NSGA-II's first
    generation on the front instead of at random: the vectorized sweep costs about a second
    for 10^5 designs, while as many Optuna trials would take minutes. The ``k`` designs are
    chosen by greedily dropping the design of least hypervolume contribution (moocore), with
    the reference point of :func:`dse.model.pareto.reference_point` (thresholds, else the
    coarse front's nadir + 10 %).
    """
    front = sweep(model, samples=samples, seed=seed, write=False).front
    if front.empty or k < 1:
        return []
    names, maximize = model.objective_names, model.maximize
    values = front[names].to_numpy(dtype=float)
    ref = reference_point(
        thresholds=[o.threshold for o in model.spec.objectives],
        maximize=maximize,
        reference_set=values,
    )
    pts, r = as_min(values, maximize), as_min(ref, maximize)[0]
    idx = np.flatnonzero(np.all(pts < r, axis=1))
    while len(idx) > k:
        contrib = moocore.hv_contributions(pts[idx], ref=r)
        idx = np.delete(idx, int(np.argmin(contrib)))
    cols = {n: front[f"params.{n}"].to_numpy() for n in model.spec.space}
    return [{n: _plain(v[i]) for n, v in cols.items()} for i in sorted(idx)]


def _plain(v: Any) -> Any:
    """numpy scalars -> Python values (Optuna checks enqueued params against distributions)."""
    return v.item() if isinstance(v, np.generic) else v


def read_sweep(name: str) -> tuple[dict[str, Any], pd.DataFrame] | None:
    """A study's recorded sweep (summary, front), or None when it has none."""
    directory = study_dir(name)
    js, csv = directory / SWEEP_JSON, directory / SWEEP_FRONT_CSV
    if not js.is_file() or not csv.is_file():
        return None
    return json.loads(js.read_text(encoding="utf-8")), pd.read_csv(csv)
