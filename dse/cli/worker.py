"""``dse worker SPEC``: one worker process on a shared study (:mod:`dse.search.study.workers`)."""

from __future__ import annotations

from typing import Annotated

import typer

from dse.cli.options import RobustOpt, SpecArg, Statistic, StatisticOpt

__all__ = ["worker_command"]


def worker_command(
    spec: SpecArg,
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
    statistic: StatisticOpt = Statistic.mean,
    parent: Annotated[int | None, typer.Option(hidden=True)] = None,
) -> None:
    """Join the spec's study (creating it if needed) and run trials until the study-wide
    total is reached; run one per core, on as many hosts as share the storage."""
    from dse import api
    from dse.cli.console import note, optuna_logging, progress_line, verbosity
    from dse.search.study.recovery import finished_count
    from dse.search.study.workers import WorkerProgress

    optuna_logging()
    if parent is not None:
        _interrupted_once()
    from dse.cli.extras import require_storage_driver

    require_storage_driver(storage)
    if parent is None:
        note(f"worker on {spec}: running trials until the study holds its total")
    # Progress lines on stderr (hidden by -q); --jobs workers leave it to their parent.
    quiet = verbosity.quiet or parent is not None
    progress = None if quiet else WorkerProgress(emit=progress_line)
    hooks = {"on_begin": progress.begin, "on_progress": progress} if progress is not None else {}
    study, target = api.run_worker(
        spec,
        storage=storage,
        trials=trials,
        seed_offset=seed_offset,
        heartbeat_s=heartbeat_s,
        grace_s=grace_s,
        records=records,
        robust=(robust, statistic.value) if robust is not None else None,
        parent=parent,
        **hooks,
    )
    if progress is not None:
        progress.end()
    if parent is None:
        done = finished_count(study)
        typer.echo(f"worker done: study {study.study_name!r} holds {done}/{target} trials")


def _interrupted_once() -> None:
    """A ``--jobs`` worker hears Ctrl-C twice: the terminal's, sent to its process group, and
    the one its parent forwards (which alone reaches it after ``kill -INT`` of the parent).
    The first interrupts it; later ones must not interrupt its giving its trials back."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # started with Ctrl-C ignored
        return

    def interrupt(signum: int, frame: object) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
