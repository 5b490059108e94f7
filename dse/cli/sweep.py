"""``dse sweep SPEC``: the vectorized sweep of :mod:`dse.search.sweep.sweep`, with its progress."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from dse.cli.options import JsonOpt, ProgressOpt, SpecArg

if TYPE_CHECKING:
    from dse.search.sweep.sweep import SweepResult

__all__ = ["DEFAULT_CHUNK", "sweep_command"]

#: dse.search.sweep.sweep.DEFAULT_CHUNK, repeated so that ``dse --help`` needs no numpy (a test
#: checks that the two agree).
DEFAULT_CHUNK = 1 << 17


def sweep_command(
    spec: SpecArg,
    grid: Annotated[
        bool, typer.Option("--grid", help="Every step/choice combination (the default)")
    ] = False,
    samples: Annotated[
        int | None, typer.Option(help="N quasi-random (Halton) designs instead of the grid")
    ] = None,
    chunk: Annotated[int, typer.Option(help="Designs per vectorized call", min=1)] = DEFAULT_CHUNK,
    seed: Annotated[int, typer.Option(help="Seed of the quasi-random shift", min=0)] = 0,
    jobs: Annotated[
        int,
        typer.Option(help="Processes evaluating the chunks on this machine (this one included)"),
    ] = 1,
    scheduler: Annotated[
        str | None,
        typer.Option(
            help="Run the chunks on an existing Dask cluster (tcp://HOST:PORT); its workers "
            "need this project installed"
        ),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(help="Reuse the finished chunks of an interrupted sweep of the same spec"),
    ] = True,
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
) -> None:
    """Evaluate the whole space in vectorized chunks and record its exact feasible front."""
    from dse import api
    from dse.cli.console import note
    from dse.cli.progress import Progress
    from dse.search.storage import check_study_dir
    from dse.search.sweep.sweep import space_size

    _check_options(grid=grid, samples=samples, jobs=jobs, scheduler=scheduler)
    model = api.load(spec, nominal=True)
    if scheduler is not None:  # one line, before anything is said or made
        from dse.search.sweep.scheduler_address import check_scheduler

        check_scheduler(scheduler)
    check_study_dir(model.spec.study)
    size = samples if samples is not None else space_size(dict(model.spec.space))
    if size is not None and not as_json:
        where = f"{jobs} local process{'es' if jobs > 1 else ''}" if not scheduler else scheduler
        note(
            f"sweep {model.spec.study}: {size:,} designs ({'samples' if samples else 'grid'}) "
            f"in {-(-size // chunk):,} chunks of {chunk:,} on {where}; the expected time "
            "follows the first chunk"
        )
    bar = Progress(
        f"sweep {model.spec.study}",
        total=size,
        fields={"front": 0},
        enabled=progress and not as_json,
        # Redrawn per chunk, not by a refresh thread: a single-threaded process may fork its
        # --jobs workers (milliseconds) instead of starting a forkserver (see sweep_local).
        auto_refresh=False,
    )
    bar.start(0)
    try:
        result = api.sweep(
            model,
            samples=samples,
            chunk=chunk,
            seed=seed,
            on_progress=lambda done, total, front: bar.update(done, total=total, front=front),
            jobs=jobs,
            scheduler=scheduler,
            resume=resume,
        )
    finally:
        bar.stop()
    if as_json:
        print(json.dumps(result.summary(), indent=2))
        return
    _print_summary(result)


def _check_options(*, grid: bool, samples: int | None, jobs: int, scheduler: str | None) -> None:
    """One line for options that cannot go together, before the spec is even read."""
    from dse.errors import SweepError

    if grid and samples is not None:
        raise SweepError("give either --grid or --samples N, not both")
    from dse.search.study.local_processes import jobs_problem

    why = jobs_problem(jobs)
    if why:
        raise SweepError(why)
    if samples is not None and samples < 1:  # before the plan line, which would say -1 designs
        raise SweepError(f"--samples must be at least 1 (got {samples})")
    if scheduler is not None and jobs != 1:
        raise SweepError("give either --jobs N (local workers) or --scheduler URL, not both")
    if scheduler is not None:
        from dse.cli.extras import require

        require("dask", "distributed", "dse sweep --scheduler")


def _print_summary(result: SweepResult) -> None:
    from dse.cli.console import out

    out.print(
        f"{result.designs_evaluated:,} designs ({result.mode}) in {result.seconds:.1f} s"
        f" on {result.workers} worker{'s' if result.workers != 1 else ''}"
        + (f" ({result.chunks_resumed} chunks resumed)" if result.chunks_resumed else "")
        + ": "
        f"{result.designs_per_s:,.0f} designs/s; {result.feasible:,} feasible; "
        f"front {result.front_size}; written to {result.directory}",
        highlight=False,
    )
