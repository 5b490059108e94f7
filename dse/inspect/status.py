"""``dse status STUDY``: how far a (possibly distributed) study is, read live from its storage.

Trials by state, the workers that touched it recently (from the owner each trial records),
feasible trials and the current front size, so a team can watch many hosts from one shell.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import Annotated, Any

import optuna
import typer
from rich.console import Console
from rich.table import Table

from dse.records import STALE_ATTR, WORKER_ATTR, front_frame, trials_frame


def study_status(
    name: str, *, storage: str | None = None, recent_s: float = 300.0
) -> dict[str, Any]:
    """Counts, recent workers and front size of a recorded study."""
    from dse import api
    from dse.recovery import counts_toward_total

    rec = api.open_study(name, storage=storage)
    lock, url, study = rec.lock, rec.url, rec.study
    objectives, maximize = rec.objectives, rec.maximize
    trials = study.get_trials(deepcopy=False)
    states: Counter[str] = Counter()
    for t in trials:
        stale = t.state == optuna.trial.TrialState.FAIL and t.user_attrs.get(STALE_ATTR)
        states["STALE" if stale else t.state.name] += 1
    now = datetime.now()
    workers: dict[str, dict[str, Any]] = {}
    for t in trials:
        owner = t.user_attrs.get(WORKER_ATTR)
        seen = t.datetime_complete or t.datetime_start
        if not owner or seen is None:
            continue
        age = (now - seen).total_seconds()
        running = t.state == optuna.trial.TrialState.RUNNING
        if age > recent_s and not running:
            continue
        w = workers.setdefault(str(owner), {"finished": 0, "running": 0, "last_seen_s": age})
        w["running" if running else "finished"] += 1
        w["last_seen_s"] = min(w["last_seen_s"], age)
    df = trials_frame(study, objectives=objectives, maximize=maximize)
    front = front_frame(df, objectives=objectives, maximize=maximize)
    finished = sum(1 for t in trials if counts_toward_total(t) and t.state.is_finished())
    return {
        "study": lock["study"],
        "storage": url,
        "finished": finished,
        "spec_trials": lock.get("search", {}).get("trials"),
        "states": dict(sorted(states.items())),
        "feasible": int(df["feasible"].sum()) if len(df) else 0,
        "front_size": len(front),
        "recent_s": recent_s,
        "workers": dict(sorted(workers.items())),
    }


def status_command(
    study: Annotated[str, typer.Argument(help="Study name (folder under studies/)")],
    storage: Annotated[str | None, typer.Option(help="Override the recorded storage URL")] = None,
    recent_s: Annotated[
        float, typer.Option(help="A worker counts as recent if it touched a trial this recently")
    ] = 300.0,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Show a study's trials by state, recent workers, feasible count and front size."""
    info = study_status(study, storage=storage, recent_s=recent_s)
    if as_json:
        print(json.dumps(info, indent=2))
        return
    out = Console(soft_wrap=True)
    target = f" of {info['spec_trials']} in the spec" if info["spec_trials"] else ""
    out.print(
        f"[bold]{info['study']}[/bold]: {info['finished']} finished{target}, "
        f"{info['feasible']} feasible, front {info['front_size']}  ({info['storage']})",
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
