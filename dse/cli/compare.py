"""``dse compare``: fixed designs side by side (see :mod:`dse.inspect.compare`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dse.cli.options import JsonOpt, MetricOpt, SetOpt

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["compare_command"]


def _cell(v: object, *, is_ratio: bool) -> str:
    from dse.inspect.formatting import fmt

    if v is None:
        return ""
    if is_ratio and isinstance(v, float):
        return f"{v:.3g}x"
    return fmt(v)


def compare_command(
    designs: Annotated[
        list[str],
        typer.Argument(
            help="SPEC, or SPEC::name=value,name=value for values of that design alone "
            "(an option cannot follow one argument, so per-design values stay in the argument)",
            show_default=False,
        ),
    ],
    set_: SetOpt = None,
    metric: MetricOpt = None,
    csv_path: Annotated[
        Path | None, typer.Option("--csv", help="Also write the table as CSV here ('-': stdout)")
    ] = None,
    label: Annotated[
        list[str] | None,
        typer.Option("--label", help="Name of a design in the table, in argument order"),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Compare fixed designs side by side, with the ratio to the first design.

    Feasibility and violated constraints first, then the objectives, then every metric with
    its unit. --set values apply to every design."""
    from dse.errors import DesignError
    from dse.inspect.compare import compare, to_csv

    evaluated, rows = compare(designs, labels=label, sets=set_, metrics=metric)
    if csv_path is not None and str(csv_path) == "-":
        sys.stdout.write(to_csv(rows))
        return
    if as_json:
        print(json.dumps(_payload(evaluated, rows), indent=2))
        return
    out = _print_table(evaluated, rows)
    if csv_path is not None:
        try:
            csv_path.write_text(to_csv(rows), encoding="utf-8")
        except OSError as exc:
            raise DesignError(f"--csv {csv_path}: cannot write: {exc.strerror}") from None
        out.print(f"wrote {csv_path}")


def _payload(evaluated: list[Any], rows: list[dict[str, object]]) -> dict[str, Any]:
    """``--json``: each design's spec, values and verdict, and the metric rows."""
    return {
        "designs": [
            {
                "label": d.label,
                "spec": str(d.spec),
                "sets": d.sets,
                "feasible": d.feasible,
                "violated": d.violated,
                "headlines": d.headlines,
            }
            for d in evaluated
        ],
        "rows": rows[2:],
    }


def _print_table(evaluated: list[Any], rows: list[dict[str, object]]) -> Console:
    """The rows as one table, a section per group (verdict, objectives, each evaluator), then
    where each design came from; returns the console it printed on."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from dse.inspect.compare import headline_lines

    out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 10_000)
    table = Table(title="Designs compared (ratios are to the first design)")
    cols = list(rows[0]) if rows else ["metric", "unit"]
    ratio_cols = {f"{d.label}/{evaluated[0].label}" for d in evaluated[1:]}
    for c in cols:
        left = c in ("metric", "unit")
        table.add_column(escape(c), justify="left" if left else "right", no_wrap=True)
    objectives = {m for d in evaluated for m in d.objectives}
    group = None
    for i, r in enumerate(rows):
        name = str(r["metric"])
        this = "verdict" if i < 2 else "objective" if name in objectives else name.split(".")[0]
        if group is not None and this != group:
            table.add_section()
        group = this
        style = "red" if i == 0 and any(not d.feasible for d in evaluated) else None
        table.add_row(*(escape(_cell(r[c], is_ratio=c in ratio_cols)) for c in cols), style=style)
    out.print(table)
    for d in evaluated:
        sets = ", ".join(d.sets) or "fixed design"
        out.print(f"{escape(d.label)}: {escape(str(d.spec))} ({escape(sets)})", highlight=False)
    for text in headline_lines(evaluated):
        out.print(text, markup=False, highlight=False)
    return out
