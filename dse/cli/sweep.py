"""``dse sweep SPEC``: the vectorized sweep of :mod:`dse.search.sweep`, with a progress bar."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from dse.model.load import load
from dse.search.sweep import DEFAULT_CHUNK, SweepError, sweep


def sweep_command(
    spec: Annotated[Path, typer.Argument(help="Study spec (YAML)", show_default=False)],
    grid: Annotated[
        bool, typer.Option("--grid", help="Every step/choice combination (the default)")
    ] = False,
    samples: Annotated[
        int | None, typer.Option(help="N quasi-random (Halton) designs instead of the grid")
    ] = None,
    chunk: Annotated[int, typer.Option(help="Designs per vectorized call", min=1)] = DEFAULT_CHUNK,
    seed: Annotated[int, typer.Option(help="Seed of the quasi-random shift")] = 0,
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
    progress: Annotated[bool, typer.Option(help="Show a progress bar")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Evaluate the whole space in vectorized chunks and record its exact feasible front."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    if grid and samples is not None:
        raise SweepError("give either --grid or --samples N, not both")
    if jobs < 1:
        raise SweepError(f"--jobs must be at least 1 (got {jobs})")
    if scheduler is not None and jobs != 1:
        raise SweepError("give either --jobs N (local workers) or --scheduler URL, not both")
    model = load(spec, nominal=True)
    err = Console(stderr=True)
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("front {task.fields[front]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        disable=not progress or as_json,
        # Redrawn per chunk, not by a refresh thread: a single-threaded process may fork its
        # --jobs workers (milliseconds) instead of starting a forkserver (see sweep_local).
        auto_refresh=False,
    )
    with bar:
        task = bar.add_task(f"sweep {model.spec.study}", total=None, front=0)

        def update(done: int, total: int, front: int) -> None:
            bar.update(task, completed=done, total=total, front=front, refresh=True)

        result = sweep(
            model,
            samples=samples,
            chunk=chunk,
            seed=seed,
            on_progress=update,
            jobs=jobs,
            scheduler=scheduler,
            resume=resume,
        )
    summary = result.summary()
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    out = Console()
    out.print(
        f"{result.designs_evaluated:,} designs ({result.mode}) in {result.seconds:.1f} s"
        f" on {result.workers} worker{'s' if result.workers != 1 else ''}"
        + (f" ({result.chunks_resumed} chunks resumed)" if result.chunks_resumed else "")
        + ": "
        f"{result.designs_per_s:,.0f} designs/s; {result.feasible:,} feasible; "
        f"front {result.front_size}; written to {result.directory}"
    )
