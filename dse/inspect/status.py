"""``dse status STUDY``: how far a (possibly distributed) study is, read live from its storage.

Trials by state, the workers that touched it recently (from the owner each trial records),
feasible trials and the current front size, so a team can watch many hosts from one shell.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

import optuna

from dse.results.records import front_frame, trials_frame
from dse.search.stored import STALE_ATTR, WORKER_ATTR, open_study
from dse.search.study.recovery import counts_toward_total


def study_status(
    name: str, *, storage: str | None = None, recent_s: float = 300.0
) -> dict[str, Any]:
    """Counts, recent workers and front size of a recorded study."""
    rec = open_study(name, storage=storage)
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
