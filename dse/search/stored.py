"""What dse keeps in a study: trial attribute names, a stored trial's outcome, and opening a
recorded study by name (its resolved spec is read and checked in :mod:`dse.search.spec_lock`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna

from dse.errors import Problem, StorageError, StudyDamagedError, StudyNotFoundError
from dse.model.outcome import Outcome, feasible
from dse.search import spec_lock
from dse.search.spec_lock import LOCK_FILE, read_lock
from dse.search.storage import (
    existing_study_dir,
    hide_password,
    journal,
    open_storage,
    reach_problem,
    storage_problem,
)
from dse.spec.yamlio import load_yaml

__all__ = [
    "FAIL_ATTR",
    "FEASIBLE_ATTR",
    "METRICS_ATTR",
    "STALE_ATTR",
    "TIMED_OUT_ATTR",
    "WORKER_ATTR",
    "RecordedStudy",
    "open_for_reading",
    "open_study",
    "stored_outcome",
    "trial_metrics",
]
STALE_ATTR = "dse.stale"
FAIL_ATTR = "dse.fail_reason"
#: A trial failed by ``search.trial_timeout_s``: final, its design is not tried again.
TIMED_OUT_ATTR = "dse.timed_out"
FEASIBLE_ATTR = "dse.feasible"
WORKER_ATTR = "dse.worker"
#: Every metric of a complete trial, as one JSON object (one attribute per metric before
#: issue 28: :func:`trial_metrics` reads both).
METRICS_ATTR = "dse.metrics"


def stored_outcome(trial: optuna.trial.FrozenTrial) -> Outcome | None:
    """A complete stored trial's :class:`~dse.model.outcome.Outcome` as its run recorded it
    (metrics from the user attributes, violations from ``set_constraint``, objectives from its
    values; feasibility by the one rule); None for a trial that did not complete."""
    if trial.state != optuna.trial.TrialState.COMPLETE or trial.values is None:
        return None
    metrics = trial_metrics(trial)
    violations = [float(v) for v in trial.constraints.values()]
    return Outcome(metrics, violations, feasible(violations), list(trial.values))


def trial_metrics(trial: optuna.trial.FrozenTrial) -> dict[str, Any]:
    """A trial's metrics by name: the one JSON attribute runs store, or (studies recorded
    before it) every user attribute outside ``dse.``."""
    packed = trial.user_attrs.get(METRICS_ATTR)
    if isinstance(packed, dict):
        return dict(packed)
    return {k: v for k, v in trial.user_attrs.items() if not k.startswith("dse.")}


def open_for_reading(url: str, *, allow_outside: bool) -> optuna.storages.BaseStorage:
    """A recorded study's storage opened without creating or changing anything: a journal or
    SQLite file must exist (and a journal pass :mod:`dse.search.storage.journal`); a journal
    Optuna cannot replay is answered with its first bad line."""
    if url.startswith("journal:"):  # a journal Optuna cannot replay: open_storage says where
        journal.check_readable(Path(url.removeprefix("journal:")), allow_outside=allow_outside)
        return open_storage(url)
    if url.startswith("sqlite:///"):
        db = Path(url.removeprefix("sqlite:///"))
        if not db.is_file():  # SQLAlchemy would create an empty database there
            raise StudyDamagedError(
                [Problem(str(db), None, "", "the study's SQLite database is missing")]
            )

    why = storage_problem(url, journal_outside_studies=True) or reach_problem(url)
    if why:  # not an SQLite file, a server that is down: one line, no password
        raise StorageError(f"storage {hide_password(url)!r} (from the study's lock): {why}")
    return open_storage(url)


@dataclass
class RecordedStudy:
    """A study found by name: its lock, the storage URL used, and the live Optuna study."""

    lock: dict[str, Any]
    url: str
    study: optuna.Study
    objectives: list[str]
    maximize: list[bool]


def open_study(name: str, *, storage: str | None = None) -> RecordedStudy:
    """Open a recorded study from the storage in its lock (or ``storage``)."""
    lock = read_lock(name)
    url = storage or lock["storage"]
    opened = open_for_reading(url, allow_outside=lock.get("journal_outside_studies", False))
    try:
        study = optuna.load_study(study_name=lock["study"], storage=opened)
    except KeyError:
        raise StudyNotFoundError(f"storage {url!r} holds no study {lock['study']!r}") from None
    _check_lock_against(name, lock, study)
    return RecordedStudy(
        lock=lock,
        url=url,
        study=study,
        objectives=[o["metric"] for o in lock["objectives"]],
        maximize=[o["direction"] == "maximize" for o in lock["objectives"]],
    )


def _check_lock_against(name: str, lock: dict[str, Any], study: optuna.Study) -> None:
    """The lock's objectives are the study's: as many as its directions, each a metric its
    trials recorded (an edited lock would otherwise fail deep in a report)."""
    done = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    path = existing_study_dir(name) / LOCK_FILE
    _, lines = load_yaml(path)
    problems = spec_lock.study_problems(
        lock,
        lines,
        str(path),
        directions=len(study.directions),
        metrics=set(trial_metrics(done[0])) if done else set(),
    )
    if problems:
        raise StudyDamagedError(problems)
