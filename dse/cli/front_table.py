"""A study's Pareto front as a table (``dse run``, ``dse pareto``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dse.cli.console import out

if TYPE_CHECKING:
    import pandas as pd


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
    for c in sub.columns:
        table.add_column(c.removeprefix("params."), justify="right", no_wrap=True)
    for row in sub.itertuples(index=False):
        table.add_row(*(fmt(v) for v in row))
    out.print(table)
