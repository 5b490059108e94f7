"""``dse run SPEC``: create or resume the spec's study, with a progress bar, a graceful Ctrl-C
and the front printed at the end."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dse.cli.console import err, note, optuna_logging, out
from dse.cli.front_table import front_subset, print_bound_notes, print_front
from dse.cli.options import JsonOpt, ProgressOpt, RobustOpt, SpecArg, Statistic, StatisticOpt

if TYPE_CHECKING:
    from dse.model.study_model import StudyModel
    from dse.results.run_result import RunResult

__all__ = ["GracefulStop", "run_command"]


def run_command(
    spec: SpecArg,
    trials: Annotated[
        int | None, typer.Option(help="Total finished trials the study ends with", min=1)
    ] = None,
    storage: Annotated[
        str | None, typer.Option(help="Optuna storage URL (default: journal file)")
    ] = None,
    progress: ProgressOpt = True,
    robust: RobustOpt = None,
    statistic: StatisticOpt = Statistic.mean,
    jobs: Annotated[
        int, typer.Option(help="Worker processes on one study; --trials is their total", min=1)
    ] = 1,
    as_json: JsonOpt = False,
) -> None:
    """Create or resume the spec's study and record its Pareto front."""
    import warnings

    from dse import api
    from dse.errors import DseError
    from dse.search.study.local_processes import jobs_problem

    why = jobs_problem(jobs)
    if why:  # before the spec is read: nothing is made
        raise DseError(why)
    optuna_logging()
    robust_opt = (robust, statistic.value) if robust is not None else None
    model = api.load(spec, robust=robust_opt)
    from dse.cli.catalog import plausibility_notes

    plausibility_notes(model)
    from dse.cli.extras import require_storage_driver

    require_storage_driver(storage or model.spec.storage)
    target = trials if trials is not None else model.spec.search.trials
    bar, begin = _progress(model.spec.study, target, shown=progress and not as_json)
    stop = GracefulStop()
    if jobs > 1:
        run_fn = partial(
            api.run_jobs, spec, jobs=jobs, robust=robust_opt, should_stop=stop.requested
        )
    else:
        run_fn = partial(api.run, model, should_stop=stop.requested, log=None)
    try:
        with stop, warnings.catch_warnings():
            warnings.simplefilter("ignore", api.NothingToRun)  # said in words below
            result = run_fn(
                trials=target,
                storage=storage,
                on_begin=begin,
                on_progress=lambda p: bar.update(
                    p.finished, feasible=p.feasible, front=p.front_size, failed=p.failed
                ),
            )
    finally:
        bar.stop()
    if stop.requested():  # main() says "interrupted" for every exit 130
        raise typer.Exit(130)
    if result.note:
        note(f"note: {result.note}")
    if as_json:
        out.print_json(json.dumps(_payload(model, result)))
        return
    _print_result(model, result)


def _progress(study: str, target: int, *, shown: bool) -> tuple[Any, Callable[[int, int], None]]:
    """The run's progress bar, and the ``on_begin`` hook that starts it: progress appears only
    once the study is open and there is work to do, so a refused run prints its one line
    alone and a finished study shows no 0/N bar (``shown`` False: the result alone)."""
    from dse.cli.progress import Progress

    bar = Progress(
        study, total=target, fields={"feasible": 0, "front": 0, "failed": 0}, enabled=shown
    )

    def begin(before: int, total: int) -> None:
        if before < total:
            if shown:
                note(f"{study}: {total - before} trials to run ({before} of {total} done)")
            bar.start(before)

    return bar, begin


def _payload(model: StudyModel, result: RunResult) -> dict[str, Any]:
    """``dse run --json``: the counts and the front's objectives and parameters."""
    from dse import api

    counts = api.trial_counts(result.trials)
    front = front_subset(result.front, model.objective_names)
    return {
        "study": model.spec.study,
        "directory": str(result.directory),
        "trials": counts["finished"],
        "counts": counts,
        "requested": result.requested,
        "added": result.added,
        "note": result.note,
        "front": json.loads(front.to_json(orient="records")),
    }


def _print_result(model: StudyModel, result: RunResult) -> None:
    """The front (thinned to 20 rows), the counts, and a warning when every trial failed."""
    from dse import api

    counts = api.trial_counts(result.trials)
    print_front(
        result.front,
        model.objective_names,
        title=f"Pareto front of {model.spec.study}",
        max_rows=20,
    )
    out.print(
        f"{api.counts_line(counts)}; {result.added} new this run; front {len(result.front)}; "
        f"records in {result.directory}"
    )
    space = {k: v.model_dump() for k, v in model.spec.space.items()}
    print_bound_notes(result.front, space)
    from dse.cli.catalog import print_headlines

    print_headlines(model.context)
    failed = result.trials[result.trials["state"] == "FAIL"]
    if "stale" in failed:
        failed = failed[~failed["stale"].astype(bool)]
    if counts["complete"] == 0 and len(failed):
        err.print(
            f"warning: every trial failed; the first: {failed['fail_reason'].iloc[0]}",
            markup=False,
            highlight=False,
        )


class GracefulStop:
    """First Ctrl-C: finish the trial in flight, write the records, exit 130. Second: abort.

    A flag set by a signal handler cannot be lost the way a KeyboardInterrupt raised inside a
    finalizer or C callback can ("Exception ignored in ..."), so one Ctrl-C always stops.
    """

    def __init__(self) -> None:
        self._flag = False
        self._previous: Any = None

    def requested(self) -> bool:
        return self._flag

    def _handle(self, signum: int, frame: Any) -> None:
        if self._flag:
            raise KeyboardInterrupt
        self._flag = True
        err.print("stopping after the trial in flight (Ctrl-C again to abort now)")

    def __enter__(self) -> GracefulStop:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
