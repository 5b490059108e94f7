"""The ``dse`` command line (typer). Exit codes: 0 ok, 2 bad input, 1 internal error.

Start-up matters (every worker, every shell completion runs it): this module imports typer and
rich's console only; each command imports what it needs (``tests/cli/test_conventions.py``
checks that ``dse --help`` imports no numpy, pandas, pyarrow or optuna).
"""

from __future__ import annotations

import errno
import json
import signal
import sys
import threading
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dse import __version__
from dse.cli.console import err, note, optuna_logging, out, verbosity
from dse.cli.options import (
    JsonOpt,
    OutputFormat,
    ProgressOpt,
    RobustOpt,
    SetOpt,
    SpecArg,
    Statistic,
    StatisticOpt,
    StorageOpt,
)
from dse.spec.errors import DseError, SpecError, shorten

if TYPE_CHECKING:
    import pandas as pd

app = typer.Typer(
    help="Declarative design-space explorer for AI clusters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
_INTERRUPTED = "interrupted; re-run the same command to resume"


def _version(value: bool) -> None:
    if value:
        print(f"dse (litegpu-dse) {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit"
        ),
    ] = False,
    quiet: Annotated[
        bool, typer.Option("-q", "--quiet", help="Results and errors only: no progress, no notes")
    ] = False,
    verbose: Annotated[
        int,
        typer.Option(
            "-v",
            "--verbose",
            count=True,
            help="Also Optuna's INFO log (each trial as it finishes)",
        ),
    ] = 0,
) -> None:
    """Declarative design-space explorer for AI clusters."""
    verbosity.level = -1 if quiet else verbose


@app.command()
def validate(spec: SpecArg, as_json: JsonOpt = False) -> None:
    """Check a spec without running anything; every problem is listed, sorted by line."""
    from dse import api

    model, problems = api.validate(spec)
    if as_json:
        payload: dict[str, Any] = {
            "spec": str(spec),
            "ok": not problems and model is not None,
            "problems": [
                {"line": p.line, "field": p.field, "message": p.message} for p in problems
            ],  # fmt: skip
        }
        if model is not None and not problems:
            payload.update(
                study=model.spec.study,
                parameters=list(model.spec.space),
                objectives=model.objective_names,
                constraints=[c.source for c in model.constraints],
                metrics=len(model.metrics),
            )
        print(json.dumps(payload, indent=2))
        if problems or model is None:
            raise typer.Exit(2)
        return
    if problems or model is None:
        raise SpecError(problems)
    out.print(
        f"[green]ok[/green] {spec}: study {model.spec.study!r}, {len(model.spec.space)} "
        f"parameters, {len(model.spec.objectives)} objectives, {len(model.constraints)} "
        f"constraints, {len(model.metrics)} metrics available"
    )


@app.command()
def run(
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
    from dse.cli.progress import Progress

    optuna_logging()
    robust_opt = (robust, statistic.value) if robust is not None else None
    model = api.load(spec, robust=robust_opt)
    if str(storage or model.spec.storage or "").startswith("postgres"):
        from dse.cli.extras import require

        require("postgres", "psycopg", "a postgresql:// storage")
    target = trials if trials is not None else model.spec.search.trials
    bar = Progress(
        model.spec.study,
        total=target,
        fields={"feasible": 0, "front": 0, "failed": 0},
        enabled=progress and not as_json,
    )
    shown: list[bool] = []

    def begin(before: int, total: int) -> None:
        # Progress appears only once the study is open and there is work to do: a refused run
        # prints its one line alone, and a finished study shows no 0/N bar.
        if before < total:
            if progress and not as_json:  # --no-progress: the error or summary alone
                todo = total - before
                note(f"{model.spec.study}: {todo} trials to run ({before} of {total} done)")
            bar.start(before)
            shown.append(True)

    stop = GracefulStop()
    if jobs > 1:
        run_fn = partial(api.run_jobs, spec, jobs=jobs, robust=robust_opt)
    else:
        run_fn = partial(api.run, model, should_stop=stop.requested)
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
    except KeyboardInterrupt:
        # typer turns KeyboardInterrupt into a silent exit 130 before main() sees it.
        bar.stop()
        err.print(_INTERRUPTED)
        raise typer.Exit(130) from None
    finally:
        bar.stop()
    if stop.requested():
        err.print(_INTERRUPTED)
        raise typer.Exit(130)
    if result.note:
        note(f"note: {result.note}")
    objectives = model.objective_names
    counts = api.trial_counts(result.trials)
    if as_json:
        payload = {
            "study": model.spec.study,
            "directory": str(result.directory),
            "trials": counts["finished"],
            "counts": counts,
            "requested": result.requested,
            "added": result.added,
            "note": result.note,
            "front": json.loads(_front_subset(result.front, objectives).to_json(orient="records")),
        }
        out.print_json(json.dumps(payload))
        return
    _print_front(
        result.front, objectives, title=f"Pareto front of {model.spec.study}", max_rows=20
    )
    out.print(
        f"{api.counts_line(counts)}; {result.added} new this run; front {len(result.front)}; "
        f"records in {result.directory}"
    )
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


def _front_subset(front: pd.DataFrame, objectives: list[str]) -> pd.DataFrame:
    params = [c for c in front.columns if c.startswith("params.")]
    cols = ["number", *objectives, *params]
    return front[[c for c in cols if c in front.columns]]


def _print_front(
    front: pd.DataFrame, objectives: list[str], *, title: str, max_rows: int | None = None
) -> None:
    """The front as a table; a long one is thinned evenly along the first objective."""
    import numpy as np
    from rich.table import Table

    from dse.inspect.formatting import fmt

    sub = _front_subset(front, objectives)
    caption = None
    if max_rows is not None and len(sub) > max_rows:
        keep = np.unique(np.linspace(0, len(sub) - 1, max_rows).round().astype(int))
        caption = f"{len(keep)} of {len(sub)} front designs shown; all in pareto.csv / dse pareto"
        sub = sub.iloc[keep]
    table = Table(title=title, caption=caption)
    for c in sub.columns:
        table.add_column(c.removeprefix("params."), justify="right", no_wrap=True)
    for row in sub.itertuples(index=False):
        table.add_row(*(fmt(v) for v in row))
    out.print(table)


#: Bounded work for --simulate: runs are vectorized, so memory grows with runs x years.
MAX_RUNS = 1_000_000
MAX_YEARS = 1000.0


def _count_parser(option: str, cap: int) -> Any:
    """A whole count from ``1000``, ``1e5`` or ``1_000``, within [1, cap], else one clear line."""

    def parse(text: str) -> int:
        try:
            value = float(str(text).replace("_", ""))
        except ValueError:
            raise DseError(f"{option} {text!r}: expected a whole number") from None
        if not value.is_integer() or not 1 <= value <= cap:
            raise DseError(f"{option} {text}: expected a whole number from 1 to {cap:,}")
        return int(value)

    return parse


MetricOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--metric",
        help="Only these metrics (repeatable; a name, an evaluator prefix such as cost., "
        "or a glob such as '*watt*')",
        metavar="METRIC",
    ),
]


@app.command()
def evaluate(
    spec: SpecArg,
    set_: SetOpt = None,
    metric: MetricOpt = None,
    breakdown: Annotated[
        bool, typer.Option("--breakdown", help="Print the cost waterfall of the design")
    ] = False,
    simulate: Annotated[
        bool, typer.Option("--simulate", help="Monte Carlo distributions (e.g. p99 capacity)")
    ] = False,
    runs: Annotated[
        int,
        typer.Option(
            help=f"Monte Carlo runs for --simulate (1 to {MAX_RUNS:,}; 1e5 is accepted)",
            parser=_count_parser("--runs", MAX_RUNS),
            metavar="INTEGER",
        ),
    ] = 1000,
    years: Annotated[
        float, typer.Option(help="Simulated years per run", min=0.001, max=MAX_YEARS)
    ] = 1.0,
    seed: Annotated[int, typer.Option(help="Monte Carlo seed")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """Evaluate one design: feasibility, the objectives, then every metric with its unit.

    Feasibility comes first (each violated constraint named), then the objectives, then the
    other metrics grouped by evaluator; --metric keeps only some."""
    from dse import api
    from dse.cli.design_view import print_design

    model, params = api.load_for_evaluate(spec, set_ or [])
    if breakdown:
        _print_waterfalls(model, api.evaluate(model, params))
        return
    if simulate:
        _print_simulations(model, params, runs=runs, years=years, seed=seed, as_json=as_json)
        return
    view = api.evaluate_design(model, params, metrics=metric)
    if as_json:
        print(json.dumps(view, indent=2))
        return
    print_design(model, view)


def _print_waterfalls(model: Any, metrics: dict[str, float]) -> None:
    """Each evaluator with a ``waterfall(metrics)`` attribute gets its line-by-line table."""
    from rich.table import Table

    shown = False
    for ev in model.evaluators.values():
        fn = ev.waterfall
        if fn is None:
            continue
        shown = True
        own = {k.split(".", 1)[1]: v for k, v in metrics.items() if k.startswith(ev.name + ".")}
        section = None
        table = Table(title=f"{ev.name} breakdown: {model.spec.study}")
        for c in ("", ev.waterfall_unit or "value", "share"):
            table.add_column(c, justify="left" if not c else "right", no_wrap=True)
        lines = fn(own)
        totals = {s: v for s, label, v in lines if label.startswith("=")}
        for sec, label, v in lines:
            if sec != section:
                table.add_section()
                table.add_row(f"[bold]{sec}[/bold]", "", "")
                section = sec
            total = totals.get(sec) or float("nan")
            share = "" if label.startswith("=") else f"{100 * v / total:.1f}%"
            style = "bold" if label.startswith("=") else None
            table.add_row(f"  {label}", f"{v:,.0f}", share, style=style)
        out.print(table)
    if not shown:
        raise DseError("no evaluator of this spec provides a cost breakdown")


def _print_simulations(
    model: Any, params: dict[str, Any], *, runs: int, years: float, seed: int, as_json: bool
) -> None:
    """Each evaluator with a ``simulate(design, years=, runs=, seed=)`` attribute: summaries."""
    from rich.table import Table

    from dse import api
    from dse.inspect.formatting import fmt

    summary = api.simulate(model, params, runs=runs, years=years, seed=seed)
    if as_json:
        print(json.dumps({"runs": runs, "years": years, "seed": seed, "samples": summary}))
        return
    table = Table(title=f"Monte Carlo: {runs} runs x {years:g} year(s), seed {seed}")
    cols = ["mean", "std", "p1", "p50", "p99", "min", "max"]
    table.add_column("quantity", no_wrap=True)
    for c in cols:
        table.add_column(c, justify="right", no_wrap=True)
    for k, row in summary.items():
        table.add_row(k, *(fmt(row[c]) for c in cols))
    out.print(table)


@app.command()
def pareto(
    study: Annotated[str, typer.Argument(help="Study name (folder under studies/)")],
    format_: Annotated[
        OutputFormat, typer.Option("--format", help="Output format", case_sensitive=False)
    ] = OutputFormat.table,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json")] = False,
    storage: StorageOpt = None,
    quality: Annotated[
        bool,
        typer.Option(
            "--quality",
            help="Also print the hypervolume (normalised by the reference point) and IGD+",
        ),
    ] = False,
) -> None:
    """Print a study's feasible Pareto front."""
    from dse import api
    from dse.results.quality import print_quality

    fmt = OutputFormat.json if as_json else format_
    lock = api.read_lock(study)
    objectives = [o["metric"] for o in lock["objectives"]]
    _, front = api.load_study(study, storage=storage)
    if fmt is OutputFormat.csv:
        sys.stdout.write(front.to_csv(index=False))
    elif fmt is OutputFormat.json:
        sys.stdout.write(front.to_json(orient="records", indent=2) + "\n")
    else:
        _print_front(front, objectives, title=f"Pareto front of {study} ({len(front)} trials)")
    if quality:
        print_quality(study, storage=storage, console=out if fmt is OutputFormat.table else err)


@app.command()
def evaluators(as_json: JsonOpt = False) -> None:
    """List every installed evaluator with its metrics, units and meanings."""
    from dse import api

    listing = api.list_evaluators()
    if as_json:
        print(json.dumps(listing, indent=2))
        return
    from rich.table import Table

    for name, ev in listing.items():
        table = Table(title=f"{name}  ({ev['origin']}; vectorized={ev['vectorized']})")
        for c in ("metric", "unit", "meaning"):
            table.add_column(c)
        for k, m in ev["metrics"].items():
            table.add_row(f"{name}.{k}", m["unit"], m["description"])
        out.print(table)


@app.command()
def schema() -> None:
    """Print the JSON Schema of a study spec (for editor completion and checks)."""
    from dse import api

    print(json.dumps(api.json_schema(), indent=2))


def _lazy(module: str, name: str) -> Any:
    """A command whose module (and its imports) loads only when typer needs its signature.

    typer reads a command's signature to build ``--help``; these modules import only typer and
    dse.cli.options at the top, so registering them costs little."""
    import importlib

    return getattr(importlib.import_module(f"dse.cli.{module}"), name)


app.command("sweep")(_lazy("sweep", "sweep_command"))
app.command("worker")(_lazy("worker", "worker_command"))
app.command("status")(_lazy("status", "status_command"))
app.command("sensitivity")(_lazy("sensitivity", "sensitivity_command"))
app.command("report")(_lazy("inspect", "report_command"))
app.command("dashboard")(_lazy("inspect", "dashboard_command"))
app.command("compare")(_lazy("compare", "compare_command"))


def main() -> None:
    """Entry point: user errors print one line each and exit 2, never a traceback."""
    from dse.heap import keep_freed_arrays

    keep_freed_arrays()  # this process only: the CLI owns its allocator (dse/heap.py)
    try:
        code = app(standalone_mode=False)  # a usage error is ours to print, in one line
    except typer.TyperException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare 'dse': the help, as before
            exc.show()  # type: ignore[attr-defined]
        else:
            err.print(f"error: {usage_line(exc)}", markup=False, highlight=False)
        sys.exit(getattr(exc, "exit_code", 2))
    except typer.Abort:
        err.print(_INTERRUPTED)
        sys.exit(130)
    except SpecError as exc:
        for p in exc.problems:
            err.print(str(p), markup=False, highlight=False)
        sys.exit(2)
    except DseError as exc:
        err.print(f"error: {shorten(str(exc))}", markup=False, highlight=False)
        sys.exit(2)
    except KeyboardInterrupt:
        err.print(_INTERRUPTED)
        sys.exit(130)
    except OSError as exc:  # a full or read-only disk: the storage is left as it was
        err.print(f"error: {os_error_line(exc)}", markup=False, highlight=False)
        sys.exit(1)
    except RuntimeError as exc:
        if not str(exc).startswith("Symlink loop from"):  # Path.resolve (Python < 3.13)
            raise
        err.print(f"error: {exc}: a path points back to itself", markup=False, highlight=False)
        sys.exit(2)
    except Exception as exc:
        if _is_evaluation_error(exc):  # a user's design failed to evaluate (dse evaluate)
            err.print(f"error: {shorten(str(exc))}", markup=False, highlight=False)
            sys.exit(2)
        raise
    sys.exit(code if type(code) is int else 0)  # typer.Exit(n) comes back as n


def usage_line(exc: Exception) -> str:
    """A command-line usage error (an unknown option, a value out of range) as one line, with
    where to read more."""
    fmt = getattr(exc, "format_message", None)
    text = " ".join((fmt() if fmt else str(exc)).split())
    ctx = getattr(exc, "ctx", None)
    more = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    return f"{shorten(text)}{more}"


def _is_evaluation_error(exc: Exception) -> bool:
    """Without importing the model layer: if it was never imported, nothing raised from it."""
    mod = sys.modules.get("dse.model.study_model")
    return mod is not None and isinstance(exc, mod.EvaluationError)


def os_error_line(exc: OSError) -> str:
    """One line for a file-system error, saying what to do about it."""
    where = f" {exc.filename}" if exc.filename else ""
    what = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = "free some space, then run the same command again to resume"
    elif exc.errno == errno.EFBIG:
        hint = "raise the file-size limit (ulimit -f), then run the same command again to resume"
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        hint = "make it writable (or set DSE_STUDIES_DIR / --storage elsewhere), then run again"
    else:
        hint = "fix it, then run the same command again"
    return f"cannot use{where}: {what}; finished trials are kept in the storage; {hint}"


if __name__ == "__main__":
    main()
