"""Every use of Optuna's private API in the engine, in one place (issue 16, item 5).

The engine needs a few things Optuna's public API does not offer: the storage and ids behind a
study and a trial (to store many attributes in one journal append, to take over a dead
worker's trial), suggesting from fixed distributions on a trial that was claimed rather than
asked, the heartbeat thread and stale-trial query of RDB storages, and NSGA-II's generation
size. Each is one small function here, named for what it does, so an Optuna upgrade is checked
against this file (``optuna>=5,<6`` pins the minor API it was written for) and
``tests/dse/test_optuna_private.py`` fails if a private Optuna name appears anywhere else
(``dse/search/storage.py``, which subclasses Optuna's journal storage, is the one exception).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers._ga import BaseGASampler
from optuna.storages import BaseStorage
from optuna.storages._heartbeat import get_heartbeat_thread, is_heartbeat_enabled

__all__ = [
    "forget_cached_trials",
    "genetic_sampler",
    "heartbeat",
    "heartbeat_enabled",
    "pop_waiting_trial_id",
    "stale_trial_ids",
    "storage_of",
    "study_id",
    "suggest",
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


def suggest(trial: optuna.Trial, name: str, dist: BaseDistribution) -> Any:
    """Suggest ``name`` from ``dist`` on a claimed trial (no ``suggest_*`` call knows the
    distribution object itself)."""
    return trial._suggest(name, dist)


def heartbeat(trial_id: int, storage: BaseStorage) -> AbstractContextManager[Any]:
    """The heartbeat thread of an RDB storage while a trial runs (a no-op elsewhere)."""
    return get_heartbeat_thread(trial_id, storage)


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
