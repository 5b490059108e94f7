"""Command-line options shared by several commands (one definition, one help text).

Closed choices are enums, so ``--help`` lists them, shell completion offers them and a typo is
refused with the valid choices before anything runs. Kept free of heavy imports: the values
are checked against the engine's own lists in ``tests/cli/test_conventions.py``.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

__all__ = [
    "JsonOpt",
    "MetricOpt",
    "OutputFormat",
    "ProgressOpt",
    "RobustOpt",
    "SensitivityMethod",
    "SetOpt",
    "SpecArg",
    "Statistic",
    "StatisticOpt",
    "StorageOpt",
]


class Statistic(StrEnum):
    """How ``--robust`` reduces a design's K samples to one value (dse.model.robust)."""

    mean = "mean"
    p10 = "p10"
    p90 = "p90"
    pessimistic = "pessimistic"
    optimistic = "optimistic"


class OutputFormat(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"


class SensitivityMethod(StrEnum):
    tornado = "tornado"
    sobol = "sobol"
    morris = "morris"


SpecArg = Annotated[Path, typer.Argument(help="Study spec (YAML)", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output (JSON)")]
MetricOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--metric",
        help="Only these metrics (repeatable; a name, an evaluator prefix such as cost., "
        "or a glob such as '*watt*')",
        metavar="METRIC",
    ),
]
StorageOpt = Annotated[str | None, typer.Option(help="Override the recorded storage URL")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="name=value for a parameter or a dotted fixed value (repeatable)",
        metavar="NAME=VALUE",
    ),
]
RobustOpt = Annotated[
    int | None,
    typer.Option(help="Evaluate each design under K samples of the uncertain assumptions"),
]
StatisticOpt = Annotated[
    Statistic, typer.Option(help="With --robust: how the K samples become one value")
]
ProgressOpt = Annotated[
    bool, typer.Option(help="Show progress (a bar on a terminal, a line every few s in logs)")
]
