"""A study's Pareto front as a table (``dse run``, ``dse pareto``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dse.cli.console import note, out

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["bound_notes", "front_subset", "print_bound_notes", "print_front"]


def front_subset(front: pd.DataFrame, objectives: list[str]) -> pd.DataFrame:
    params = [c for c in front.columns if c.startswith("params.")]
    cols = ["number", *objectives, *params]
    return front[[c for c in cols if c in front.columns]]


def print_front(
    front: pd.DataFrame, objectives: list[str], *, title: str, max_rows: int | None = None
) -> None:
    """The front as a table; a long one is thinned evenly along the first objective."""
    import numpy as np
    from rich.table import Table

    from dse.inspect.formatting import fmt

    sub = front_subset(front, objectives)
    caption = None
    if max_rows is not None and len(sub) > max_rows:
        keep = np.unique(np.linspace(0, len(sub) - 1, max_rows).round().astype(int))
        caption = f"{len(keep)} of {len(sub)} front designs shown; all in pareto.csv / dse pareto"
        sub = sub.iloc[keep]
    table = Table(title=title, caption=caption)
    cells = [[fmt(v) for v in row] for row in sub.itertuples(index=False)]
    for i, c in enumerate(sub.columns):
        # In a narrow terminal the long metric names fold; a value (the trial number above
        # all) is never cut or dropped.
        widest = max((len(r[i]) for r in cells), default=1)
        table.add_column(
            c.removeprefix("params."), justify="right", overflow="fold", min_width=widest
        )
    for r in cells:
        table.add_row(*r)
    out.print(table)


def bound_notes(front: pd.DataFrame, space: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per searched number whose front designs sit on an end of its range: the
    space may be cutting the front short there (widen the range to see past it)."""
    lines = []
    for name, p in space.items():
        col = f"params.{name}"
        if p.get("type") not in ("float", "int") or col not in front or not len(front):
            continue
        values = front[col].astype(float)
        span = float(p["high"]) - float(p["low"])
        tol = 1e-9 * max(span, 1.0)
        for end, value in (("bottom", float(p["low"])), ("top", float(p["high"]))):
            n = int(((values - value).abs() <= tol).sum())
            if n:
                lines.append(
                    f"{n} of {len(front)} front designs have {name} at the {end} of its range "
                    f"({value:g}): the front may go on past it; widen the range to see"
                )
    return lines


def print_bound_notes(front: pd.DataFrame, space: Mapping[str, Mapping[str, Any]]) -> None:
    for line in bound_notes(front, space):
        note(f"note: {line}")
