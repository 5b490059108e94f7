"""``dse evaluate``'s terminal view of :func:`dse.inspect.design.design_view`: the verdict first,
then the objectives, then one narrow table per evaluator (name, value, unit, meaning)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from dse.cli.console import out
from dse.inspect.formatting import fmt

__all__ = ["print_design", "verdict_line"]


def verdict_line(view: dict[str, Any]) -> str:
    """``feasible: meets all 3 constraints`` or ``infeasible: violates 1 of 3 ...: a`` (markup)."""
    n = len(view["constraints"])
    if view["feasible"]:
        if not n:
            return "[green]feasible[/green]: the spec has no constraints"
        return f"[green]feasible[/green]: meets all {n} constraints of the spec"
    names = "; ".join(escape(v) for v in view["violated"])
    return f"[red]infeasible[/red]: violates {len(view['violated'])} of {n} constraints: {names}"


def print_design(model: Any, view: dict[str, Any]) -> None:
    params = view["params"]
    out.print(f"[bold]{escape(model.spec.study)}[/bold]: {escape(str(params or 'fixed design'))}")
    out.print(verdict_line(view))
    if view["constraints"]:
        ctable = Table(title="constraints (violation <= 0 is satisfied)", title_justify="left")
        for c in ("constraint", "value", "violation", "satisfied"):
            ctable.add_column(c, justify="left" if c == "constraint" else "right", no_wrap=True)
        for c in view["constraints"]:
            ok = "[green]yes[/green]" if c["satisfied"] else "[red]NO[/red]"
            ctable.add_row(escape(c["constraint"]), fmt(c["value"]), fmt(c["violation"]), ok)
        out.print(ctable)
    if view["objectives"]:
        otable = Table(title="objectives", title_justify="left")
        for c in ("objective", "value", "unit", "goal"):
            otable.add_column(c, justify="right" if c == "value" else "left", no_wrap=True)
        for name, o in view["objectives"].items():
            otable.add_row(name, fmt(o["value"]), escape(o["unit"]), o["direction"] or "")
        out.print(otable)
    for group, names in view["groups"].items():
        table = Table(title=f"{group} metrics", title_justify="left")
        for c in ("metric", "value", "unit"):
            table.add_column(c, justify="right" if c == "value" else "left", no_wrap=True)
        table.add_column("meaning", max_width=70)
        for k in names:
            info = model.metrics.get(k)
            table.add_row(
                k.split(".", 1)[1] if "." in k else k,
                fmt(view["metrics"][k]),
                escape(info.unit if info else ""),
                escape(info.description if info else ""),
            )
        out.print(table)
