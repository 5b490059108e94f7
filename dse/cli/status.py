"""``dse status STUDY``: a study's progress across workers (see :mod:`dse.inspect.status`)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from dse.cli.inspect import StudyArg, study_name
from dse.cli.options import JsonOpt, StorageOpt

__all__ = ["status_command"]


def status_command(
    study: StudyArg,
    storage: StorageOpt = None,
    recent_s: Annotated[
        float, typer.Option(help="A worker counts as recent if it touched a trial this recently")
    ] = 300.0,
    as_json: JsonOpt = False,
) -> None:
    """Show a study's trials by state, recent workers, feasible count and front size."""
    from rich.table import Table

    from dse import api
    from dse.cli.console import out

    info = api.status(study_name(study), storage=storage, recent_s=recent_s)
    if as_json:
        print(json.dumps(info, indent=2))
        return
    from dse.results.counts import counts_from_states, counts_line

    counts = counts_from_states(info["states"], feasible=info["feasible"])
    target = f" (the spec's total: {info['spec_trials']})" if info["spec_trials"] else ""
    out.print(
        f"[bold]{info['study']}[/bold]: {counts_line(counts)}{target}; front "
        f"{info['front_size']}  ({info['storage']})",
        highlight=False,
    )
    states = "  ".join(f"{k} {v}" for k, v in info["states"].items()) or "no trials yet"
    out.print(f"trials by state: {states}", highlight=False)
    if not info["workers"]:
        out.print(f"no worker seen in the last {recent_s:g} s")
        return
    table = Table(title=f"workers seen in the last {recent_s:g} s")
    for c in ("worker", "finished", "running", "last seen"):
        table.add_column(c, justify="left" if c == "worker" else "right")
    for name, w in info["workers"].items():
        table.add_row(name, str(w["finished"]), str(w["running"]), f"{w['last_seen_s']:.0f} s ago")
    out.print(table)
