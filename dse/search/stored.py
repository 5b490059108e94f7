"""What dse keeps in a study and beside it: trial attribute names, the resolved spec
(``spec.lock.yaml`` and the copy stored in the study), and opening a recorded study by name."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import yaml

from dse import __version__
from dse.model.outcome import Outcome, feasible
from dse.search.storage import existing_study_dir, open_storage
from dse.spec.atomic import write_text_atomic
from dse.spec.errors import StudyNotFoundError

LOCK_FILE = "spec.lock.yaml"
STALE_ATTR = "dse.stale"
FAIL_ATTR = "dse.fail_reason"
#: A trial failed by ``search.trial_timeout_s``: final, its design is not tried again.
TIMED_OUT_ATTR = "dse.timed_out"
FEASIBLE_ATTR = "dse.feasible"
WORKER_ATTR = "dse.worker"
#: Every metric of a complete trial, as one JSON object (one attribute per metric before
#: issue 28: :func:`trial_metrics` reads both).
METRICS_ATTR = "dse.metrics"
META_KEY = "dse.spec"


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


def plain(obj: Any) -> Any:
    """numpy scalars and tuples -> plain YAML-safe values."""
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def write_lock(path: Path, lock: dict[str, Any]) -> None:
    """Write a lock file whole or not at all (several workers write it; a kill mid-write
    must not leave half of one)."""
    lock = {"dse_version": __version__, **lock}
    write_text_atomic(path, yaml.safe_dump(plain(lock), sort_keys=False))


def write_lock_atomic(directory: Path, lock: dict[str, Any]) -> None:
    """``directory/spec.lock.yaml``, creating the folder."""
    directory.mkdir(parents=True, exist_ok=True)
    write_lock(directory / LOCK_FILE, lock)


def read_lock(name: str) -> dict[str, Any]:
    path = existing_study_dir(name) / LOCK_FILE
    if not path.is_file():
        raise StudyNotFoundError(f"study {name!r} has no {LOCK_FILE}; run it with 'dse run' first")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


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
    try:
        study = optuna.load_study(study_name=lock["study"], storage=open_storage(url))
    except KeyError:
        raise StudyNotFoundError(f"storage {url!r} holds no study {lock['study']!r}") from None
    return RecordedStudy(
        lock=lock,
        url=url,
        study=study,
        objectives=[o["metric"] for o in lock["objectives"]],
        maximize=[o["direction"] == "maximize" for o in lock["objectives"]],
    )
