"""``dse compare``: fixed designs side by side (see :mod:`dse.inspect.compare`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dse.inspect.compare import compare, to_csv
from dse.inspect.formatting import fmt
from dse.spec.errors import DesignError


def _cell(v: object, *, is_ratio: bool) -> str:
    if v is None:
        return ""
    if is_ratio and isinstance(v, float):
        return f"{v:.3g}x"
    return fmt(v)


def compare_command(
    designs: Annotated[
        list[str],
        typer.Argument(
            help="SPEC or SPEC::name=value,name=value (parameters or dotted fixed values)",
            show_default=False,
        ),
    ],
    csv_path: Annotated[
        Path | None, typer.Option("--csv", help="Also write the table as CSV here ('-': stdout)")
    ] = None,
    label: Annotated[
        list[str] | None,
        typer.Option("--label", help="Name of a design in the table, in argument order"),
    ] = None,
) -> None:
    """Compare fixed designs side by side: every metric, its unit, and the ratio to the first."""
    evaluated, rows = compare(designs, labels=label)
    if csv_path is not None and str(csv_path) == "-":
        sys.stdout.write(to_csv(rows))
        return
    out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 10_000)
    table = Table(title="Designs compared (ratios are to the first design)")
    cols = list(rows[0]) if rows else ["metric", "unit"]
    ratio_cols = {f"{d.label}/{evaluated[0].label}" for d in evaluated[1:]}
    for c in cols:
        left = c in ("metric", "unit")
        table.add_column(escape(c), justify="left" if left else "right", no_wrap=True)
    for r in rows:
        table.add_row(*(escape(_cell(r[c], is_ratio=c in ratio_cols)) for c in cols))
    out.print(table)
    for d in evaluated:
        sets = ", ".join(d.sets) or "fixed design"
        out.print(f"{escape(d.label)}: {escape(str(d.spec))} ({escape(sets)})", highlight=False)
    if csv_path is not None:
        try:
            csv_path.write_text(to_csv(rows), encoding="utf-8")
        except OSError as exc:
            raise DesignError(f"--csv {csv_path}: cannot write: {exc.strerror}") from None
        out.print(f"wrote {csv_path}")
