"""Every use of Optuna's private API in the engine, in one place (issue 16, item 5).

The engine needs a few things Optuna's public API does not offer: the storage and ids behind a
study and a trial (to store many attributes in one journal append, to take over a dead
worker's trial), suggesting from fixed distributions on a trial that was claimed rather than
asked, the heartbeat thread and stale-trial query of RDB storages, and NSGA-II's generation
size. Each is one small function here, named for what it does, so an Optuna upgrade is checked
against this file (``optuna>=5,<6`` pins the minor API it was written for) and
``tests/dse/search/test_optuna_private.py`` fails if a private Optuna name appears anywhere else
(nowhere else: the storage module and the dashboard import what they need from here, and
Optuna's RDB storage is used through its public API only).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, cast

import optuna
from optuna.distributions import BaseDistribution
from optuna.exceptions import UpdateFinishedTrialError
from optuna.samplers._ga import BaseGASampler
from optuna.storages import BaseStorage, JournalStorage
from optuna.storages._cached_storage import _CachedStorage
from optuna.storages._heartbeat import (
    BaseHeartbeat,
    get_heartbeat_thread,
    is_heartbeat_enabled,
)
from optuna.storages.journal._file import BaseJournalFileLock
from optuna.storages.journal._storage import JournalOperation
from optuna.study._frozen import FrozenStudy

__all__ = [
    "BaseHeartbeat",
    "BaseJournalFileLock",
    "FrozenStudy",
    "dashboard_figures",
    "dashboard_note",
    "dashboard_save_note_version",
    "forget_cached_trials",
    "genetic_sampler",
    "heartbeat",
    "heartbeat_enabled",
    "journal_set_user_attrs",
    "pop_waiting_trial_id",
    "stale_trial_ids",
    "storage_of",
    "study_id",
    "suggest",
    "trial_id",
    "uncached",
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


def suggest(trial: optuna.Trial, name: str, dist: BaseDistribution) -> Any:
    """Suggest ``name`` from ``dist`` on a claimed trial (no ``suggest_*`` call knows the
    distribution object itself)."""
    return trial._suggest(name, dist)


def heartbeat(trial_id: int, storage: BaseStorage) -> AbstractContextManager[Any]:
    """The heartbeat thread of an RDB storage while a trial runs (a no-op elsewhere)."""
    # Its __exit__ is typed for Exception, not BaseException; it is a context manager.
    return cast(AbstractContextManager[Any], get_heartbeat_thread(trial_id, storage))


def heartbeat_enabled(storage: BaseStorage) -> bool:
    return is_heartbeat_enabled(storage)


def stale_trial_ids(study: optuna.Study) -> list[int]:
    """Running trials whose heartbeat stopped (their worker died), per the storage; none
    where the storage keeps no heartbeats."""
    storage = storage_of(study)
    if not is_heartbeat_enabled(storage):
        return []
    return list(storage._get_stale_trial_ids(study._study_id))  # type: ignore[attr-defined]


def forget_cached_trials(study: optuna.Study) -> None:
    """Drop the study's per-thread trial cache, so the next read sees other workers' trials."""
    study._thread_local.cached_all_trials = None


def pop_waiting_trial_id(study: optuna.Study) -> int | None:
    """Claim the oldest enqueued (WAITING) trial, as ``study.ask`` does; None if there is none."""
    return study._pop_waiting_trial_id()


def genetic_sampler(sampler: optuna.samplers.BaseSampler) -> Any:
    """The sampler when it is a genetic one with a population (NSGA-II/III), else None."""
    if isinstance(sampler, BaseGASampler) and sampler.population_size:
        return sampler
    return None


def generation_key(sampler: Any) -> str:
    """The system attribute in which a genetic sampler records each trial's generation."""
    return str(type(sampler)._get_generation_key())


# --- storages: many user attributes in one write (the journal/RDB adapter of dse.search.storage)


def uncached(storage: BaseStorage) -> BaseStorage:
    """The storage behind Optuna's trial cache (which fronts RDB storages), else ``storage``."""
    return storage._backend if isinstance(storage, _CachedStorage) else storage


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


def journal_op_codes() -> frozenset[int]:
    """Optuna's journal op codes (a private enum; the values Optuna 5 writes when it moved)."""
    try:
        from optuna.storages.journal._storage import JournalOperation
    except ImportError:  # pragma: no cover - another Optuna layout
        return frozenset(range(11))
    return frozenset(int(op) for op in JournalOperation)


def journal_replay_result(name: str) -> Any:
    """Optuna's private journal replayer, or None where Optuna has moved it."""
    try:
        from optuna.storages.journal._storage import JournalStorageReplayResult
    except ImportError:  # pragma: no cover - another Optuna layout
        return None
    return JournalStorageReplayResult(name)
