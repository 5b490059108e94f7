"""Vectorized sweeps: the exact Pareto front of a discretized space, by brute force.

The evaluators take numpy arrays, so a grid (every ``step``/choice combination) or N
quasi-random samples are evaluated in chunks with the same :meth:`StudyModel.evaluate` that
serves one trial. Only the running non-dominated feasible set is kept, so memory is
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

import numpy as np
import pandas as pd

from dse.errors import SweepError
from dse.model.study_model import StudyModel
from dse.search.storage import study_dir
from dse.search.sweep.chunks import (
    DEFAULT_CHUNK,
    ChunkFront,
    ChunkStore,
    SweepPlan,
    SweepTally,
    axis_length,
    evaluate_chunk,
    front_frame,
    grid_axis,
    halton,
    sweep_key,
)
from dse.search.sweep.scheduler_address import check_scheduler
from dse.spec.atomic import write_text_atomic
from dse.spec.schema import FloatParam, ParamSpec

SWEEP_FRONT_CSV = "sweep_front.csv"
SWEEP_JSON = "sweep.json"

__all__ = [
    "DEFAULT_CHUNK",
    "SWEEP_FRONT_CSV",
    "SWEEP_JSON",
    "SweepResult",
    "grid_axes",
    "halton",
    "read_sweep",
    "sweep",
]


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
    workers: int = 1
    chunks_resumed: int = 0
    #: Seconds to start the local workers or reach the Dask cluster (in ``seconds``).
    startup_s: float = 0.0
    #: CPU seconds of this process during the sweep, and of the workers (None in-process).
    client_cpu_s: float = 0.0
    worker_cpu_s: float | None = None
    #: ``--jobs N``: chunks this process evaluated itself (it is one of the N).
    chunks_in_client: int = 0
    #: ``--jobs N``: times the worker processes were restarted after one died.
    worker_restarts: int = 0

    def summary(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("front")
        d["directory"] = str(self.directory) if self.directory else None
        return d


# -- design generators --------------------------------------------------------------------------


#: The largest grid a sweep takes: ~3 hours at 1 M designs/s on one core. Sizes are counted
#: before anything is allocated (one axis of 10**12 values would be 8 TB).
MAX_GRID_DESIGNS = 10**10


def grid_size(space: dict[str, ParamSpec]) -> float:
    """The grid's design count (a float, so a huge one is inf rather than a huge int)."""
    return math.prod(float(axis_length(p)) for p in space.values())


def grid_axes(space: dict[str, ParamSpec]) -> dict[str, np.ndarray]:
    """Every parameter's grid values; continuous floats (no ``step``) and grids over
    :data:`MAX_GRID_DESIGNS` are refused before anything is allocated."""
    bad = [n for n, p in space.items() if isinstance(p, FloatParam) and p.step is None]
    if bad:
        raise SweepError(
            f"a grid needs a 'step' for float parameters: {', '.join(bad)} "
            "(add step: ..., or use --samples N)"
        )
    size = grid_size(space)
    if size > MAX_GRID_DESIGNS:
        widest = max(space, key=lambda n: axis_length(space[n]))
        raise SweepError(
            f"the grid has {size:.3g} designs, more than a sweep takes ({MAX_GRID_DESIGNS:.0e}; "
            f"{widest} alone has {float(axis_length(space[widest])):.3g} values): use a coarser "
            "step, or --samples N for N quasi-random designs"
        )
    return {n: grid_axis(p) for n, p in space.items()}  # type: ignore[misc] # none is None


def _sample_chunks(
    space: dict[str, ParamSpec], n: int, chunk: int, seed: int | None
) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    """The chunks of ``n`` quasi-random designs, as a sweep draws them (the benchmarks')."""
    plan = SweepPlan("samples", n, chunk, seed, space=space)
    return (plan.designs(index) for index in range(plan.n_chunks))


# -- the sweep ----------------------------------------------------------------------------------


def space_size(space: dict[str, ParamSpec]) -> int | None:
    """Number of grid points, or None when a float has no step (an infinite axis) or the grid
    is over the cap (counted, never allocated)."""
    size = grid_size(space)
    return int(size) if size <= MAX_GRID_DESIGNS else None


def sweep(
    model: StudyModel,
    *,
    samples: int | None = None,
    chunk: int = DEFAULT_CHUNK,
    seed: int | None = 0,
    write: bool = True,
    on_progress: Callable[[int, int, int], None] | None = None,
    jobs: int = 1,
    scheduler: str | None = None,
    resume: bool = True,
) -> SweepResult:
    """Evaluate the grid (``samples=None``) or N quasi-random samples; keep the feasible front.

    ``on_progress(done, total, front_size)`` is called after each chunk (the front size as of
    the last merge; the last call has the final one). With ``write`` the
    front goes to ``studies/<study>/sweep_front.csv`` and the counts to ``sweep.json``, and
    every finished chunk's front is kept under ``sweep_chunks/`` until the sweep completes, so
    an interrupted sweep resumes from its finished chunks (``resume``). ``jobs > 1`` runs the
    chunks on that many processes of this machine, this one included
    (:mod:`dse.search.sweep._local`), ``scheduler`` (``tcp://host:port``) on an existing Dask
    cluster; the front is the same in every case (:mod:`dse.search.sweep.chunks`).
    """
    plan = _plan(model, samples=samples, chunk=chunk, seed=seed, jobs=jobs)
    if scheduler is not None:  # before the study folder is made
        check_scheduler(scheduler)
    tally = SweepTally(model.objective_names, model.maximize)
    key = sweep_key(model, plan)
    store = ChunkStore(study_dir(model.spec.study, create=True), key) if write else None
    done = _resumed_chunks(store, plan, tally, resume=resume)
    if on_progress and done:
        on_progress(tally.designs, plan.total, tally.archive.size(exact=False))

    fresh = [0]

    def on_chunk(cf: ChunkFront) -> None:
        fresh[0] += cf.designs
        if store is not None:
            store.save(cf)
        tally.add(cf)
        if on_progress:  # the front size as of the archive's last merge (merges are batched)
            on_progress(tally.designs, plan.total, tally.archive.size(exact=False))

    todo = (i for i in range(plan.n_chunks) if i not in done)
    jobs = max(1, min(jobs, plan.n_chunks - len(done)))  # a process per chunk at most
    t0, c0 = time.perf_counter(), time.process_time()
    used = _run_chunks(model, plan, todo, on_chunk, jobs=jobs, scheduler=scheduler, key=key)
    seconds = time.perf_counter() - t0
    client_cpu_s = time.process_time() - c0

    front = front_frame(tally, model.objective_names)
    if on_progress:  # the bar's last count is the front as written (a design found twice: once)
        on_progress(tally.designs, plan.total, len(front))
    result = SweepResult(
        study=model.spec.study,
        mode=plan.mode,
        designs_evaluated=tally.designs,
        finite=tally.finite,
        feasible=tally.feasible,
        front_size=len(front),
        seconds=seconds,
        designs_per_s=fresh[0] / seconds if seconds > 0 else math.inf,
        chunk=chunk,
        seed=seed if plan.mode == "samples" else None,
        space_size=space_size(dict(model.spec.space)),
        objectives=[o.model_dump(mode="json") for o in model.spec.objectives],
        front=front,
        chunks_resumed=len(done),
        client_cpu_s=client_cpu_s,
        **used,
    )
    if store is not None:
        result.directory = _write_result(model, result)
        store.clear()
    return result


def _plan(
    model: StudyModel, *, samples: int | None, chunk: int, seed: int | None, jobs: int
) -> SweepPlan:
    """The sweep's chunks: the whole grid, or ``samples`` quasi-random designs."""
    if chunk < 1:
        raise SweepError(f"--chunk must be at least 1 (got {chunk})")
    if jobs < 1:
        raise SweepError(f"--jobs must be at least 1 (got {jobs})")
    space = dict(model.spec.space)
    if samples is None:
        axes = grid_axes(space)
        return SweepPlan("grid", math.prod(len(a) for a in axes.values()), chunk, None, axes=axes)
    if samples < 1:
        raise SweepError(f"--samples must be at least 1 (got {samples})")
    return SweepPlan("samples", samples, chunk, seed, space=space)


def _resumed_chunks(
    store: ChunkStore | None, plan: SweepPlan, tally: SweepTally, *, resume: bool
) -> set[int]:
    """The chunks an interrupted sweep of the same plan finished, added to ``tally`` (without
    ``resume`` the stored ones are cleared)."""
    done: set[int] = set()
    if store is not None and resume:
        for index in store.finished():
            cf = store.load(index) if index < plan.n_chunks else None
            if cf is not None:
                tally.add(cf)
                done.add(index)
    elif store is not None:
        store.clear()
    return done


def _run_chunks(
    model: StudyModel,
    plan: SweepPlan,
    todo: Iterator[int],
    on_chunk: Callable[[ChunkFront], None],
    *,
    jobs: int,
    scheduler: str | None,
    key: str,
) -> dict[str, Any]:
    """Evaluate the chunks ``todo`` here, on local processes or on a Dask cluster; return
    what was used (SweepResult's workers, startup_s, worker_cpu_s, ... fields)."""
    if jobs == 1 and scheduler is None:
        for index in todo:
            on_chunk(evaluate_chunk(model, plan, index))
        return {}
    if scheduler is None:
        from dse.search.sweep._local import run_chunks_local

        return run_chunks_local(model, plan, todo, on_chunk, jobs=jobs)
    from dse.search.sweep._dask import run_chunks_dask

    return run_chunks_dask(model, plan, todo, on_chunk, scheduler=scheduler, key=key)


def _write_result(model: StudyModel, result: SweepResult) -> Path:
    """``sweep_front.csv`` and ``sweep.json`` in the study's folder, each whole or not at all."""
    directory = study_dir(model.spec.study, create=True)
    write_text_atomic(directory / SWEEP_FRONT_CSV, result.front.to_csv(index=False))
    write_text_atomic(
        directory / SWEEP_JSON,
        json.dumps({**result.summary(), "directory": str(directory)}, indent=2) + "\n",
    )
    return directory


def read_sweep(name: str) -> tuple[dict[str, Any], pd.DataFrame] | None:
    """A study's recorded sweep (summary, front), or None when it has none."""
    directory = study_dir(name)
    js, csv = directory / SWEEP_JSON, directory / SWEEP_FRONT_CSV
    if not js.is_file() or not csv.is_file():
        return None
    return json.loads(js.read_text(encoding="utf-8")), pd.read_csv(csv)
