"""Every use of Optuna's private API in the engine, in one place (issue 16, item 5; issue 37).

What is left is what Optuna's public API does not offer: the storage and ids behind a study
and a trial (no public ``Study.storage``; the dashboard and the retiring of dead workers'
trials need a trial's id); claiming a queued trial without ``study.ask`` (the owner tag goes
in the same write as the new trial); the per-thread trial cache dropped before a claim, as
``study.ask`` does; the stale-trial query of RDB heartbeats (the public
``fail_stale_trials`` fails them without leaving room to mark them stale and re-queue them);
a genetic sampler's generation attribute; many attributes in one journal append (one lock,
one fsync per batch instead of one per attribute); optuna-dashboard's notes and figures. So
``optuna>=5,<6`` stays pinned; ``tests/dse/search/test_optuna_private.py`` fails if a private
Optuna name appears anywhere else, and docs/storage.md lists these.
"""

from __future__ import annotations

from typing import Any

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import BaseStorage, JournalStorage
from optuna.storages.journal._storage import JournalOperation

__all__ = [
    "dashboard_figures",
    "dashboard_note",
    "dashboard_save_note_version",
    "forget_cached_trials",
    "generation_key",
    "journal_set_user_attrs",
    "pop_waiting_trial_id",
    "stale_trial_ids",
    "storage_of",
    "study_id",
    "trial_id",
]


def storage_of(study: optuna.Study) -> BaseStorage:
    """The storage object behind a study (``optuna.Study`` keeps it private)."""
    return study._storage


def study_id(study: optuna.Study) -> int:
    """The storage's id of a study (the dashboard's URLs and RDB queries use it)."""
    return study._study_id


def trial_id(trial: optuna.trial.FrozenTrial | optuna.Trial) -> int:
    """The storage's id of a trial (distinct from its number)."""
    return trial._trial_id


def stale_trial_ids(study: optuna.Study) -> list[int]:
    """Running trials whose heartbeat stopped (their worker died), per the storage; none
    where the storage keeps no heartbeats."""
    storage = storage_of(study)
    if getattr(storage, "get_heartbeat_interval", lambda: None)() is None:
        return []
    return list(storage._get_stale_trial_ids(study._study_id))  # type: ignore[attr-defined]


def forget_cached_trials(study: optuna.Study) -> None:
    """Drop the study's per-thread trial cache, so the next read sees other workers' trials."""
    study._thread_local.cached_all_trials = None


def pop_waiting_trial_id(study: optuna.Study) -> int | None:
    """Claim the oldest enqueued (WAITING) trial, as ``study.ask`` does; None if there is none."""
    return study._pop_waiting_trial_id()


def generation_key(sampler: Any) -> str:
    """The system attribute in which a genetic sampler records each trial's generation."""
    return str(type(sampler)._get_generation_key())


# --- storages: many user attributes in one write (the journal/RDB adapter of dse.search.storage)


def journal_set_user_attrs(
    backend: JournalStorage, attrs_by_trial: dict[int, dict[str, Any]]
) -> None:
    """Every attribute of every trial given, in one journal append (one lock, one fsync)."""
    worker = backend._replay_result.worker_id
    logs = [
        {
            "op_code": JournalOperation.SET_TRIAL_USER_ATTR,
            "worker_id": worker,
            "trial_id": trial_id,
            "user_attr": {k: v},
        }
        for trial_id, attrs in attrs_by_trial.items()
        for k, v in attrs.items()
    ]
    with backend._thread_lock:
        backend._backend.append_logs(logs)
        # Replaying raises at the first attr of a finished trial; replay the rest too, so
        # no later call trips over this batch.
        error: UpdateFinishedTrialError | None = None
        for _ in range(len(logs) + 1):
            try:
                backend._sync_with_backend()
                break
            except UpdateFinishedTrialError as exc:
                error = exc
        if error is not None:
            raise error


# --- optuna-dashboard: notes and figures of finished trials (no public call takes those)


def dashboard_figures(system_attrs: dict[str, Any]) -> dict[str, Any]:
    """The plotly figures optuna-dashboard stored in a study's system attributes, by id."""
    from optuna_dashboard._custom_plot_data import get_plotly_graph_objects

    return get_plotly_graph_objects(system_attrs)


def dashboard_note(system_attrs: dict[str, Any], trial_id: int | None) -> dict[str, Any]:
    """optuna-dashboard's note (``version``, ``body``) of a study (``trial_id`` None) or trial."""
    from optuna_dashboard._note import get_note_from_system_attrs

    return get_note_from_system_attrs(system_attrs, trial_id)


def dashboard_save_note_version(
    storage: BaseStorage, study_id: int, trial_id: int, version: int, body: str
) -> None:
    """Write a finished trial's note (the public ``save_note`` needs a live ``optuna.Trial``)."""
    from optuna_dashboard._note import save_note_with_version

    save_note_with_version(storage, study_id, trial_id, version, body)
