"""``dse sensitivity SPEC``: the tornado table of :mod:`dse.inspect.sensitivity`."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dse.inspect.sensitivity import sensitivity
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
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Tornado table: which assumptions move each objective of one design most."""
    sets = [item for group in design or [] for item in group.split(",") if item.strip()]
    sets += set_ or []
    model, params = load_for_evaluate(spec, sets)
    evaluate(model, params)  # the nominal design itself must evaluate (finite metrics)
    table = sensitivity(model, params, metrics=metric)
    source = "p10/p90 of the spec's distributions" if model.uncertain else "technology +/-20 %"
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
        # escape: "[tokens/J]" would otherwise be read as rich markup and vanish
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
