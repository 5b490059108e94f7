"""``dse evaluate SPEC``: one design's feasibility, objectives and metrics, or its cost
breakdown (``--breakdown``) or Monte Carlo summaries (``--simulate``)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from dse.cli.console import out
from dse.cli.options import JsonOpt, MetricOpt, SetOpt, SpecArg
from dse.errors import DseError

__all__ = ["MAX_RUNS", "MAX_YEARS", "evaluate_command"]

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


def evaluate_command(
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
    trial: Annotated[
        int | None,
        typer.Option(
            "--trial",
            help="Evaluate this recorded trial of a study: SPEC is then the study (its name, "
            "folder or spec)",
            min=0,
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Evaluate one design: feasibility, the objectives, then every metric with its unit.

    Feasibility comes first (each violated constraint named), then the objectives, then the
    other metrics grouped by evaluator; --metric keeps only some."""
    from dse import api

    if trial is not None:
        if set_:
            raise DseError("--trial evaluates a recorded design as it ran; leave out --set")
        model, params = api.trial_design(str(spec), trial)
    else:
        model, params = api.load_for_evaluate(spec, set_ or [])
    from dse.cli.catalog import plausibility_notes

    plausibility_notes(model)
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
    from dse.cli.catalog import print_headlines
    from dse.cli.design_view import print_design  # rich tables: not for --json

    print_headlines(model.context)
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
