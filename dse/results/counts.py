"""Trial counts that add up: every trial is in exactly one bucket, named as a reader expects.

``finished`` = ``complete`` + ``failed`` + ``pruned`` (what a study's ``trials:`` total counts);
``feasible`` is a subset of ``complete``; ``waiting`` trials (warm-start designs queued for
later) and ``stale`` ones (abandoned by a dead worker and retried) are counted apart, so a
summary never reads "100 trials (50 complete)" after ``--trials 50``.
"""

from __future__ import annotations

from typing import Any

BUCKETS = ("finished", "complete", "feasible", "failed", "pruned", "running", "waiting", "stale")


#: The buckets that are one trial state each (``STALE``: a FAIL retired after a lost worker).
_STATES = {
    "complete": "COMPLETE",
    "failed": "FAIL",
    "pruned": "PRUNED",
    "running": "RUNNING",
    "waiting": "WAITING",
    "stale": "STALE",
}


def trial_counts(trials: Any) -> dict[str, int]:
    """Counts of a trials frame (``dse.results.records.trials_frame``), one bucket per trial."""
    if len(trials) == 0:
        return dict.fromkeys(BUCKETS, 0)
    state = trials["state"].astype(str)
    stale = trials["stale"].astype(bool) if "stale" in trials else state == ""
    state = state.mask(stale & (state == "FAIL"), "STALE")
    feasible = int(((state == "COMPLETE") & trials["feasible"].astype(bool)).sum())
    return counts_from_states(state.value_counts().to_dict(), feasible=feasible)


def counts_from_states(states: dict[str, int], *, feasible: int) -> dict[str, int]:
    """The same buckets from a ``{STATE: n}`` tally (``dse status``; ``STALE`` counted apart)."""
    counts = {b: int(states.get(s, 0)) for b, s in _STATES.items()}
    counts["feasible"] = feasible
    counts["finished"] = counts["complete"] + counts["failed"] + counts["pruned"]
    return {b: counts[b] for b in BUCKETS}


def counts_line(counts: dict[str, int]) -> str:
    """``"50 trials finished (50 complete, 42 feasible, 0 failed); 50 waiting (...)"``."""
    c = counts
    line = (
        f"{c['finished']} trials finished ({c['complete']} complete, {c['feasible']} feasible, "
        f"{c['failed']} failed" + (f", {c['pruned']} pruned" if c["pruned"] else "") + ")"
    )
    if c["running"]:
        line += f"; {c['running']} running"
    if c["waiting"]:
        line += f"; {c['waiting']} waiting (queued designs a later run evaluates first)"
    if c["stale"]:
        line += f"; {c['stale']} stale (retried after a lost worker)"
    return line
