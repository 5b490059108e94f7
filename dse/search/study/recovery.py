"""Trial ownership and crash recovery: which worker runs a trial, and what to do when it dies.

The journal storage has no heartbeat, so ownership is a ``host:pid`` tag (plus the process start
time, so a reused pid is not mistaken for the owner); RDB storages add Optuna's heartbeat for
workers on other hosts. A dead worker's trial is retired (FAIL, stale, never counted) and its
parameters are re-queued, so no sample is lost and none counts twice.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime
from pathlib import Path
from typing import Any

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import FrozenTrial, TrialState

from dse.search.optuna_private import (
    forget_cached_trials,
    pop_waiting_trial_id,
    stale_trial_ids,
    storage_of,
    study_id,
)
from dse.search.optuna_private import trial_id as private_trial_id
from dse.search.storage import set_trials_user_attrs
from dse.search.stored import FAIL_ATTR, STALE_ATTR, WORKER_ATTR
from dse.spec.atomic import pid_alive

FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
#: The kernel's start time of the worker process, to tell a reused pid from the dead owner.
WORKER_START_ATTR = "dse.worker_start"
#: A RUNNING trial no worker tagged this long after it started lost its worker in between.
ORPHAN_GRACE_S = 10.0


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _proc_start(pid: int) -> str | None:
    """Start time of a process in clock ticks since boot (Linux ``/proc``), else None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def _owner_tags() -> dict[str, Any]:
    tags: dict[str, Any] = {WORKER_ATTR: worker_id()}
    start = _proc_start(os.getpid())
    if start is not None:
        tags[WORKER_START_ATTR] = start
    return tags


def _owner_dead(owner: str, started: Any, host: str) -> bool:
    owner_host, _, pid_text = owner.rpartition(":")
    if owner_host != host or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return True  # one worker per process: this process has no trial in flight right now
    if not pid_alive(pid):
        return True
    now_start = _proc_start(pid)
    return started is not None and now_start is not None and str(started) != now_start


def _stale_reason(
    t: FrozenTrial, *, host: str, heartbeat_stale: set[int], now: datetime
) -> str | None:
    """Why a RUNNING trial has no live worker any more, or None while it may still have one."""
    owner = str(t.user_attrs.get(WORKER_ATTR, ""))
    if private_trial_id(t) in heartbeat_stale:
        return f"worker {owner or '?'} stopped sending heartbeats"
    if not owner:
        age = (now - t.datetime_start).total_seconds() if t.datetime_start else 0.0
        return "its worker died before claiming it" if age > ORPHAN_GRACE_S else None
    if _owner_dead(owner, t.user_attrs.get(WORKER_START_ATTR), host):
        return f"worker {owner} died"
    return None


def retire_trial(study: optuna.Study, trial_id: int, reason: str) -> bool:
    """Fail a trial so it never counts toward the total; False if another worker finished or
    retired it first (the state change is the arbiter, so exactly one retirer wins)."""
    storage = storage_of(study)
    try:
        storage.set_trial_user_attr(trial_id, STALE_ATTR, True)
        storage.set_trial_user_attr(trial_id, FAIL_ATTR, reason)
        return bool(storage.set_trial_state_values(trial_id, TrialState.FAIL))
    except UpdateFinishedTrialError:
        return False


def recover_stale_trials(study: optuna.Study) -> int:
    """Fail and re-queue trials whose worker is gone.

    The journal storage has no heartbeat, so a ``kill -9`` leaves RUNNING trials behind: a
    trial whose owner pid is dead on this host is stale. RDB storages also have Optuna's
    heartbeat, which covers workers on other hosts. Parameters are enqueued again, so the
    study loses no sample, and stale trials never count, so none counts twice.
    """
    heartbeat_stale = set(stale_trial_ids(study))
    host = socket.gethostname()
    now = datetime.now()
    n = 0
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        reason = _stale_reason(t, host=host, heartbeat_stale=heartbeat_stale, now=now)
        if reason is None:
            continue
        if retire_trial(study, private_trial_id(t), f"{reason}; parameters re-queued"):
            if t.params:
                study.enqueue_trial(t.params, skip_if_exists=False)
            n += 1
    return n


def counts_toward_total(t: FrozenTrial) -> bool:
    """Finished or running, and not a stale (retired) trial."""
    if t.state == TrialState.WAITING:
        return False
    return not (t.state == TrialState.FAIL and t.user_attrs.get(STALE_ATTR))


def study_load(study: optuna.Study) -> tuple[int, int]:
    """(finished, running) trials that count toward the study's total."""
    finished = running = 0
    for t in study.get_trials(deepcopy=False):
        if not counts_toward_total(t):
            continue
        if t.state == TrialState.RUNNING:
            running += 1
        else:
            finished += 1
    return finished, running


def finished_count(study: optuna.Study) -> int:
    return study_load(study)[0]


def claim_trial(study: optuna.Study) -> int:
    """A RUNNING trial owned by this worker: the next queued one, or a new one created with the
    owner already in it (one write, so a crash cannot leave an ownerless new trial)."""
    forget_cached_trials(study)
    tags = _owner_tags()
    waiting = pop_waiting_trial_id(study)
    if waiting is not None:
        set_trials_user_attrs(storage_of(study), {waiting: tags})  # one journal append
        return waiting
    template = FrozenTrial(
        number=0,
        state=TrialState.RUNNING,
        value=None,
        datetime_start=datetime.now(),
        datetime_complete=None,
        params={},
        distributions={},
        user_attrs=tags,
        system_attrs={},
        intermediate_values={},
        trial_id=0,
    )
    return storage_of(study).create_new_trial(study_id(study), template_trial=template)


def enqueue_trials(study: optuna.Study, designs: list[dict[str, Any]]) -> None:
    """Queue designs not already in the study (``enqueue_trial(..., skip_if_exists=True)``)."""
    for p in designs:
        study.enqueue_trial(p, skip_if_exists=True)


def give_back_trial(study: optuna.Study, claimed: int, reason: str) -> None:
    """Retire a claimed trial before evaluating it, re-queueing its parameters if it had some."""
    fixed = storage_of(study).get_trial(claimed).system_attrs.get("fixed_params")
    if retire_trial(study, claimed, reason) and fixed:
        study.enqueue_trial(fixed, skip_if_exists=False)
