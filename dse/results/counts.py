"""Trial counts that add up: every trial is in exactly one bucket, named as a reader expects.

``finished`` = ``complete`` + ``failed`` + ``pruned`` (what a study's ``trials:`` total counts);
``feasible`` is a subset of ``complete``; ``waiting`` trials (warm-start designs queued for
later) and ``stale`` ones (abandoned by a dead worker and retried) are counted apart, so a
summary never reads "100 trials (50 complete)" after ``--trials 50``.
"""

from __future__ import annotations

from typing import Any

BUCKETS = ("finished", "complete", "feasible", "failed", "pruned", "running", "waiting", "stale")


def trial_counts(trials: Any) -> dict[str, int]:
    """Counts of a trials frame (``dse.results.records.trials_frame``), one bucket per trial."""
    counts = dict.fromkeys(BUCKETS, 0)
    if len(trials) == 0:
        return counts
    state = trials["state"].astype(str)
    stale = trials["stale"].astype(bool) if "stale" in trials else state == ""
    counts["stale"] = int((stale & (state == "FAIL")).sum())
    counts["complete"] = int((state == "COMPLETE").sum())
    counts["feasible"] = int(((state == "COMPLETE") & trials["feasible"].astype(bool)).sum())
    counts["failed"] = int(((state == "FAIL") & ~stale).sum())
    counts["pruned"] = int((state == "PRUNED").sum())
    counts["running"] = int((state == "RUNNING").sum())
    counts["waiting"] = int((state == "WAITING").sum())
    counts["finished"] = counts["complete"] + counts["failed"] + counts["pruned"]
    return counts


def counts_from_states(states: dict[str, int], *, feasible: int) -> dict[str, int]:
    """The same buckets from a ``{STATE: n}`` tally (``dse status``; ``STALE`` counted apart)."""
    counts = dict.fromkeys(BUCKETS, 0)
    counts["complete"] = states.get("COMPLETE", 0)
    counts["failed"] = states.get("FAIL", 0)
    counts["pruned"] = states.get("PRUNED", 0)
    counts["running"] = states.get("RUNNING", 0)
    counts["waiting"] = states.get("WAITING", 0)
    counts["stale"] = states.get("STALE", 0)
    counts["feasible"] = feasible
    counts["finished"] = counts["complete"] + counts["failed"] + counts["pruned"]
    return counts


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
