"""``dse sensitivity SPEC``: the tornado table of :mod:`dse.inspect.sensitivity`."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dse.inspect.sensitivity import assumptions_source, sensitivity
from dse.model.load import evaluate, load_for_evaluate


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def sensitivity_command(
    spec: Annotated[Path, typer.Argument(help="Study spec (YAML)", show_default=False)],
    design: Annotated[
        list[str] | None,
        typer.Option("--design", help="name=value,name=value: the design's parameters"),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="name=value for a parameter or a dotted fixed value"),
    ] = None,
    metric: Annotated[
        list[str] | None, typer.Option("--metric", help="Metric to analyse (default: objectives)")
    ] = None,
    top: Annotated[int, typer.Option(help="Rows per table (0: all)", min=0)] = 15,
    method: Annotated[
        str,
        typer.Option(
            help="tornado (one at a time, p10/p90) | sobol (first-order and total indices) | "
            "morris (elementary effects); sobol and morris use SALib"
        ),
    ] = "tornado",
    samples: Annotated[
        int,
        typer.Option(help="sobol: base samples N (N x (d+2) runs); morris: trajectories", min=8),
    ] = 512,
    seed: Annotated[int, typer.Option(help="Seed of the sobol/morris samples")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Which assumptions move each objective of one design most: a tornado table, or global
    Sobol / Morris indices over the spec's uncertain assumptions."""
    sets = [item for group in design or [] for item in group.split(",") if item.strip()]
    sets += set_ or []
    model, params = load_for_evaluate(spec, sets)
    evaluate(model, params)  # the nominal design itself must evaluate (finite metrics)
    if method != "tornado":
        _global(
            model,
            params,
            method=method,
            metrics=metric,
            samples=samples,
            seed=seed,
            top=top,
            as_json=as_json,
        )
        return
    table = sensitivity(model, params, metrics=metric)
    source = assumptions_source(model)
    source = f"p10/p90 of {source}" if model.uncertain else source
    if as_json:
        payload = {
            "params": params,
            "swings_from": source,
            "metrics": {
                m: [{**asdict(s), "swing": s.swing} for s in rows] for m, rows in table.items()
            },
        }
        print(json.dumps(payload, indent=2))
        return
    console = Console(soft_wrap=True, width=200)
    for m, rows in table.items():
        unit = model.metrics[m].unit if m in model.metrics else ""
        nominal = rows[0].nominal if rows else float("nan")
        # escape: a unit such as "[1/J]" would otherwise be read as rich markup and vanish
        t = Table(title=escape(f"{m} [{unit}]: nominal {_fmt(nominal)}; swings from {source}"))
        for c in ("assumption", "low", "high", f"{m} @ low", f"{m} @ high", "swing", "swing %"):
            t.add_column(c, justify="left" if c == "assumption" else "right", no_wrap=True)
        for s in rows[: top or None]:
            t.add_row(
                s.assumption,
                _fmt(s.low),
                _fmt(s.high),
                _fmt(s.metric_at_low),
                _fmt(s.metric_at_high),
                _fmt(s.swing),
                f"{100 * s.swing_fraction:.2f}",
            )
        console.print(t)


def _global(
    model: Any,
    params: dict[str, Any],
    *,
    method: str,
    metrics: list[str] | None,
    samples: int,
    seed: int,
    top: int,
    as_json: bool,
) -> None:
    """Sobol or Morris indices: printed, and recorded in the study folder for ``dse report``."""
    from dse.inspect.global_sensitivity import global_sensitivity, record_global

    table = global_sensitivity(
        model, params, method=method, metrics=metrics, samples=samples, seed=seed
    )
    source = assumptions_source(model)
    source = source if model.uncertain else f"{source} (triangular)"
    payload = {
        "method": method,
        "samples": samples,
        "seed": seed,
        "params": params,
        "assumptions_from": source,
        "metrics": {m: [r.as_dict() for r in rows] for m, rows in table.items()},
    }
    path = record_global(model.spec.study, payload)
    if as_json:
        print(json.dumps(payload, indent=2))
        return
    console = Console(soft_wrap=True, width=200)
    for m, rows in table.items():
        unit = model.metrics[m].unit if m in model.metrics else ""
        what = (
            "Sobol indices (95 % confidence half-widths)"
            if method == "sobol"
            else ("Morris elementary effects (mu* in the metric's unit per full range)")
        )
        t = Table(title=escape(f"{m} [{unit}]: {what}; assumptions from {source}"))
        cols = ("S1", "S1 ±", "ST", "ST ±") if method == "sobol" else ("mu*", "mu* ±", "sigma")
        t.add_column("assumption", no_wrap=True)
        for c in cols:
            t.add_column(c, justify="right", no_wrap=True)
        for r in rows[: top or None]:
            vals = (
                (r.S1, r.S1_conf, r.ST, r.ST_conf)
                if method == "sobol"
                else (r.mu_star, r.mu_star_conf, r.sigma)
            )
            t.add_row(r.assumption, *(_fmt(v) for v in vals))
        console.print(t)
    console.print(f"recorded in {path} (shown by dse report)", markup=False, highlight=False)
