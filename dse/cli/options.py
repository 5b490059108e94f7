"""Command-line options shared by several commands (one definition, one help text)."""

from __future__ import annotations

from typing import Annotated

import typer

RobustOpt = Annotated[
    int | None,
    typer.Option(help="Evaluate each design under K samples of the uncertain assumptions"),
]
StatisticOpt = Annotated[
    str, typer.Option(help="With --robust: mean | p10 | p90 | pessimistic | optimistic")
]
