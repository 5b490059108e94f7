"""``dse worker SPEC``: one worker process on a shared study (see :mod:`dse.search.workers`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dse import api
from dse.cli.options import RobustOpt, StatisticOpt
from dse.search.recovery import finished_count


def worker_command(
    spec: Annotated[Path, typer.Argument(help="Study spec (YAML)", show_default=False)],
    storage: Annotated[
        str | None,
        typer.Option(help="Optuna storage URL shared by all workers, e.g. postgresql://..."),
    ] = None,
    trials: Annotated[
        int | None, typer.Option(help="Study-wide total of finished trials", min=1)
    ] = None,
    seed_offset: Annotated[
        int | None,
        typer.Option(
            help="Added to the spec's seed (default: the number of the worker's first trial, "
            "unique, so workers differ)"
        ),
    ] = None,
    heartbeat_s: Annotated[
        int, typer.Option(help="RDB heartbeat interval while a trial runs", min=1)
    ] = 10,
    grace_s: Annotated[
        int, typer.Option(help="Silence after which another worker takes a trial over", min=1)
    ] = 60,
    records: Annotated[
        bool, typer.Option(help="Write trials/pareto records under studies/ when done")
    ] = False,
    robust: RobustOpt = None,
    statistic: StatisticOpt = "mean",
    parent: Annotated[int | None, typer.Option(hidden=True)] = None,
) -> None:
    """Join the spec's study (creating it if needed) and run trials until the study-wide
    total is reached; run one per core, on as many hosts as share the storage."""
    study, target = api.run_worker(
        spec,
        storage=storage,
        trials=trials,
        seed_offset=seed_offset,
        heartbeat_s=heartbeat_s,
        grace_s=grace_s,
        records=records,
        robust=(robust, statistic) if robust is not None else None,
        parent=parent,
    )
    if parent is None:
        done = finished_count(study)
        typer.echo(f"worker done: study {study.study_name!r} holds {done}/{target} trials")
