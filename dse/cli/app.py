"""The ``dse`` command line (typer). Exit codes: 0 ok, 2 bad input, 1 internal error."""

from __future__ import annotations

import errno
import json
import signal
import sys
import threading
import warnings
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pandas as pd
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from dse import api
from dse.cli.compare import compare_command
from dse.cli.inspect import dashboard_command, report_command
from dse.cli.options import RobustOpt, StatisticOpt
from dse.cli.sensitivity import sensitivity_command
from dse.cli.status import status_command
from dse.cli.sweep import sweep_command
from dse.cli.worker import worker_command
from dse.inspect.formatting import fmt
from dse.model import outcome
from dse.model.registry import builtin_evaluators
from dse.model.study_model import EvaluationError
from dse.results.quality import print_quality
from dse.spec.errors import DseError, SpecError, shorten
from dse.spec.schema import json_schema

app = typer.Typer(
    help="Declarative design-space explorer for AI clusters.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Pipes and CI logs get a wide console so tables keep whole metric names.
out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, soft_wrap=True)

SpecArg = Annotated[Path, typer.Argument(help="Study spec (YAML)", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output")]
_INTERRUPTED = "interrupted; re-run the same command to resume"


@app.command()
def validate(spec: SpecArg) -> None:
    """Check a spec without running anything; every problem is listed, sorted by line."""
    model, problems = api.validate(spec)
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
    progress: Annotated[bool, typer.Option(help="Show a progress bar")] = True,
    robust: RobustOpt = None,
    statistic: StatisticOpt = "mean",
    jobs: Annotated[
        int, typer.Option(help="Worker processes on one study; --trials is their total", min=1)
    ] = 1,
    as_json: JsonOpt = False,
) -> None:
    """Create or resume the spec's study and record its Pareto front."""
    robust_opt = (robust, statistic) if robust is not None else None
    model = api.load(spec, robust=robust_opt)
    target = trials if trials is not None else model.spec.search.trials
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(
            "feasible {task.fields[feasible]}  front {task.fields[front]}  "
            "failed {task.fields[failed]}"
        ),
        TimeElapsedColumn(),
        console=err,
        disable=not progress or as_json,
    )
    task = bar.add_task(model.spec.study, total=target, feasible=0, front=0, failed=0)

    def begin(before: int, total: int) -> None:
        # The bar appears only once the study is open and there is work to do: a refused run
        # prints its one line alone, and a finished study shows no 0/N bar.
        if before < total:
            bar.update(task, completed=before)
            bar.start()
            shown.append(True)

    shown: list[bool] = []

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
                    task,
                    completed=p.finished,
                    feasible=p.feasible,
                    front=p.front_size,
                    failed=p.failed,
                ),
            )
    except KeyboardInterrupt:
        # typer turns KeyboardInterrupt into a silent exit 130 before main() sees it.
        if shown:
            bar.stop()
        err.print(_INTERRUPTED)
        raise typer.Exit(130) from None
    finally:
        if shown:
            bar.stop()
    if stop.requested():
        err.print(_INTERRUPTED)
        raise typer.Exit(130)
    if result.note:
        err.print(f"note: {result.note}", markup=False, highlight=False)
    objectives = model.objective_names
    if as_json:
        payload = {
            "study": model.spec.study,
            "directory": str(result.directory),
            "trials": int((result.trials["state"] != "RUNNING").sum())
            if len(result.trials)
            else 0,
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
    n_ok = int((result.trials["state"] == "COMPLETE").sum())
    n_feas = int(result.trials["feasible"].sum())
    out.print(
        f"{len(result.trials)} trials ({n_ok} complete, {n_feas} feasible; {result.added} new "
        f"this run), front {len(result.front)}; records in {result.directory}"
    )
    failed = result.trials[result.trials["state"] == "FAIL"]
    if "stale" in failed:
        failed = failed[~failed["stale"].astype(bool)]
    if n_ok == 0 and len(failed):
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


@app.command()
def evaluate(
    spec: SpecArg,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="name=value for a parameter or a dotted fixed value"),
    ] = None,
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
    """Evaluate the spec's fixed design and print every metric with its unit."""
    model, params = api.load_for_evaluate(spec, set_ or [])
    metrics = api.evaluate(model, params)
    if breakdown:
        _print_waterfalls(model, metrics)
        return
    if simulate:
        _print_simulations(model, params, runs=runs, years=years, seed=seed, as_json=as_json)
        return
    units = {k: model.metrics[k].unit for k in metrics if k in model.metrics}
    constraints = _constraint_rows(model, params, metrics)
    feasible = outcome.feasible([c["violation"] for c in constraints])
    if as_json:
        payload = {
            "params": params,
            "metrics": metrics,
            "units": units,
            "constraints": constraints,
            "feasible": feasible,
        }
        print(json.dumps(payload, indent=2))
        return
    table = Table(title=f"{model.spec.study}: {params or 'fixed design'}")
    for c in ("metric", "value", "unit"):
        table.add_column(c, justify="right" if c == "value" else "left", no_wrap=True)
    table.add_column("meaning")
    for k, v in metrics.items():
        info = model.metrics.get(k)
        table.add_row(k, fmt(v), info.unit if info else "", info.description if info else "")
    out.print(table)
    if constraints:
        ctable = Table(title="constraints (violation <= 0 is satisfied)")
        for c in ("constraint", "value", "violation", "satisfied"):
            ctable.add_column(c, justify="left" if c == "constraint" else "right", no_wrap=True)
        for c in constraints:
            ok = "[green]yes[/green]" if c["satisfied"] else "[red]NO[/red]"
            ctable.add_row(escape(c["constraint"]), fmt(c["value"]), fmt(c["violation"]), ok)
        out.print(ctable)
    n_bad = sum(not c["satisfied"] for c in constraints)
    if not constraints:
        out.print("[green]feasible[/green]: the spec has no constraints")
    elif feasible:
        out.print(f"[green]feasible[/green]: meets all {len(constraints)} constraints of the spec")
    else:
        out.print(
            f"[red]infeasible[/red]: violates {n_bad} of {len(constraints)} constraints of the "
            "spec"
        )


def _constraint_rows(
    model: Any, params: dict[str, Any], metrics: dict[str, float]
) -> list[dict[str, Any]]:
    """Each constraint of the spec on one design: what it measures, its violation, verdict."""
    env = model.env(params, metrics)
    rows = []
    for expr in model.constraints:
        violation = float(expr.violation(env))
        rows.append(
            {
                "constraint": expr.source,
                "value": float(expr.value(env)),
                "violation": violation,
                "satisfied": outcome.satisfied(violation),
            }
        )
    return rows


def _print_waterfalls(model: Any, metrics: dict[str, float]) -> None:
    """Each evaluator with a ``waterfall(metrics)`` attribute gets its line-by-line table."""
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
    design = model.design(params)
    summary: dict[str, dict[str, float]] = {}
    for ev in model.evaluators.values():
        fn = ev.simulate
        if fn is None:
            continue
        try:
            results = fn(design, years=years, runs=runs, seed=seed)
        except ValueError as exc:  # the model's refusal (e.g. too many events for memory)
            raise DseError(f"--simulate: {getattr(exc, 'message', exc)}") from None
        for key, samples in results.items():
            a = np.asarray(samples, dtype=float)
            summary[f"{ev.name}.{key}"] = {
                "mean": float(a.mean()),
                "std": float(a.std()),
                "p1": float(np.percentile(a, 1)),
                "p50": float(np.percentile(a, 50)),
                "p99": float(np.percentile(a, 99)),
                "min": float(a.min()),
                "max": float(a.max()),
            }
    if not summary:
        raise DseError("no evaluator of this spec provides a Monte Carlo simulation")
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
        str, typer.Option("--format", help="table | csv | json", case_sensitive=False)
    ] = "table",
    storage: Annotated[str | None, typer.Option(help="Override the recorded storage URL")] = None,
    quality: Annotated[
        bool,
        typer.Option("--quality", help="Also print hypervolume and IGD+ (dse.results.quality)"),
    ] = False,
) -> None:
    """Print a study's feasible Pareto front."""
    fmt = format_.lower()
    if fmt not in ("table", "csv", "json"):
        raise DseError(f"--format {format_!r}: valid choices: csv, json, table")
    lock = api.read_lock(study)
    objectives = [o["metric"] for o in lock["objectives"]]
    _, front = api.load_study(study, storage=storage)
    if fmt == "csv":
        sys.stdout.write(front.to_csv(index=False))
    elif fmt == "json":
        sys.stdout.write(front.to_json(orient="records", indent=2) + "\n")
    else:
        _print_front(front, objectives, title=f"Pareto front of {study} ({len(front)} trials)")
    if quality:
        print_quality(study, storage=storage, console=out if fmt == "table" else err)


@app.command()
def evaluators(as_json: JsonOpt = False) -> None:
    """List every installed evaluator with its metrics, units and meanings."""
    evs = builtin_evaluators()
    if as_json:
        payload = {
            name: {
                "origin": ev.origin,
                "vectorized": ev.vectorized,
                "metrics": {
                    k: {"unit": m.unit, "description": m.description}
                    for k, m in (ev.metrics or {}).items()
                },
            }
            for name, ev in evs.items()
        }
        print(json.dumps(payload, indent=2))
        return
    for name, ev in evs.items():
        table = Table(title=f"{name}  ({ev.origin}; vectorized={ev.vectorized})")
        for c in ("metric", "unit", "meaning"):
            table.add_column(c)
        for k, m in (ev.metrics or {}).items():
            table.add_row(f"{name}.{k}", m.unit, m.description)
        out.print(table)


@app.command()
def schema() -> None:
    """Print the JSON Schema of a study spec (for editor completion and checks)."""
    print(json.dumps(json_schema(), indent=2))


app.command("sweep")(sweep_command)
app.command("worker")(worker_command)
app.command("status")(status_command)
app.command("sensitivity")(sensitivity_command)
app.command("report")(report_command)
app.command("dashboard")(dashboard_command)
app.command("compare")(compare_command)


def main() -> None:
    """Entry point: user errors print one line each and exit 2, never a traceback."""
    try:
        app()
    except SpecError as exc:
        for p in exc.problems:
            err.print(str(p), markup=False, highlight=False)
        sys.exit(2)
    except (DseError, EvaluationError) as exc:  # EvaluationError: a user's design (evaluate)
        err.print(f"error: {shorten(str(exc))}", markup=False, highlight=False)
        sys.exit(2)
    except KeyboardInterrupt:
        err.print(_INTERRUPTED)
        sys.exit(130)
    except OSError as exc:  # a full or read-only disk: the storage is left as it was
        err.print(f"error: {os_error_line(exc)}", markup=False, highlight=False)
        sys.exit(1)


def os_error_line(exc: OSError) -> str:
    """One line for a file-system error, saying what to do about it."""
    where = f" {exc.filename}" if exc.filename else ""
    what = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = "free some space, then run the same command again to resume"
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        hint = "make it writable (or set DSE_STUDIES_DIR / --storage elsewhere), then run again"
    else:
        hint = "fix it, then run the same command again"
    return f"cannot use{where}: {what}; finished trials are kept in the storage; {hint}"


if __name__ == "__main__":
    main()
