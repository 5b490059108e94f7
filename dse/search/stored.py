"""What dse keeps in a study and beside it: trial attribute names, the resolved spec
(``spec.lock.yaml`` and the copy stored in the study), and opening a recorded study by name."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import yaml

from dse import __version__
from dse.model.outcome import Outcome, feasible
from dse.search import lock_check
from dse.search.storage import (
    existing_study_dir,
    hide_password,
    open_storage,
    reach_problem,
    storage_problem,
)
from dse.search.storage import journal as journal_lines
from dse.search.storage import journal as journal_read
from dse.spec.atomic import write_text_atomic
from dse.spec.errors import (
    Problem,
    SpecError,
    StorageError,
    StudyDamagedError,
    StudyNotFoundError,
    short_repr,
)
from dse.spec.yamlio import LineMap, load_yaml

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
    """A study's ``spec.lock.yaml``, read with the guarded reader and checked for the fields
    the reading commands use; a damaged or edited lock is one line naming its file and line."""
    path = existing_study_dir(name) / LOCK_FILE
    if not os.path.lexists(path):
        raise StudyNotFoundError(f"study {name!r} has no {LOCK_FILE}; run it with 'dse run' first")
    try:
        lock, lines = load_yaml(path)
    except SpecError as exc:
        raise StudyDamagedError(exc.problems) from None
    problems = list(lines.problems) + _lock_problems(lock, lines, str(path))
    if not problems:  # the fields reading commands use are there: now the whole lock
        problems = lock_check.spec_problems(lock, lines, str(path))
    if problems:
        raise StudyDamagedError(problems)
    return lock


def _lock_problems(lock: Any, lines: LineMap, file: str) -> list[Problem]:
    """What the reading commands need from a lock: study, storage, objectives (metric and
    direction), search and the journal flag of the right types."""

    def at(loc: tuple[str | int, ...], message: str) -> Problem:
        return Problem(
            file,
            lines.line(loc) or 1,
            ".".join(map(str, loc)),
            f"{message} (the lock was edited or damaged; 'dse run' on the spec rewrites it)",
        )

    if not isinstance(lock, dict):
        got = "an empty file" if lock is None else type(lock).__name__
        return [Problem(file, 1, "", f"expected a mapping (a study's lock), got {got}")]
    out: list[Problem] = []
    for key in ("study", "storage"):
        if not isinstance(lock.get(key), str) or not lock[key]:
            out.append(at((key,), f"expected a string, got {short_repr(lock.get(key))}"))
    objectives = lock.get("objectives")
    if not isinstance(objectives, list) or not objectives:
        out.append(at(("objectives",), "expected a list of {metric, direction}"))
        objectives = []
    for i, obj in enumerate(objectives):
        if not isinstance(obj, dict):
            out.append(at(("objectives", i), f"expected a mapping, got {short_repr(obj)}"))
            continue
        if not isinstance(obj.get("metric"), str):
            out.append(at(("objectives", i, "metric"), "expected a metric name"))
        if obj.get("direction") not in ("minimize", "maximize"):
            out.append(at(("objectives", i, "direction"), "expected minimize or maximize"))
    if "search" in lock and not isinstance(lock["search"], dict):
        out.append(at(("search",), f"expected a mapping, got {short_repr(lock['search'])}"))
    if not isinstance(lock.get("journal_outside_studies", False), bool):
        out.append(at(("journal_outside_studies",), "expected true or false"))
    return out


def open_for_reading(url: str, *, allow_outside: bool) -> optuna.storages.BaseStorage:
    """A recorded study's storage opened without creating or changing anything: a journal or
    SQLite file must exist (and a journal pass :mod:`dse.search.journal_read`); a journal
    Optuna cannot replay is answered with its first bad line."""
    if url.startswith("journal:"):
        path = Path(url.removeprefix("journal:"))
        journal_read.check_readable(path, allow_outside=allow_outside)
        try:
            return open_storage(url)
        except (OSError, MemoryError):
            raise
        except Exception as exc:  # noqa: BLE001 - Optuna's replay of a damaged journal
            raise journal_lines.damaged_error(path, exc) from None
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
    problems = lock_check.study_problems(
        lock,
        lines,
        str(path),
        directions=len(study.directions),
        metrics=set(trial_metrics(done[0])) if done else set(),
    )
    if problems:
        raise StudyDamagedError(problems)
