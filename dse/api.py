"""The CLI's operations as functions, for notebooks and scripts.

from dse import api
model = api.load("spaces/zdt1/spec.yaml")
api.evaluate(model, {"x1": 0.2, ...})
result = api.run("spaces/zdt1/spec.yaml", trials=100)
trials, front = api.load_study("zdt1")

The top-level facade: it may import every layer of ``dse`` (and only ``dse.cli`` imports it).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
import pandas as pd

from dse.model.load import check, evaluate, load, load_for_evaluate, lock_dict
from dse.model.study_model import StudyModel
from dse.results.records import load_study, write_records
from dse.search import workers
from dse.search.preflight import preflight
from dse.search.recovery import finished_count
from dse.search.runner import Progress
from dse.search.storage import open_storage, study_dir
from dse.search.stored import RecordedStudy, open_study, read_lock
from dse.spec.errors import DseError, Problem, SpecError


class NothingToRun(UserWarning):
    """``trials`` is a study's total, and the study already holds that many finished trials."""


@dataclass
class RunResult:
    study: optuna.Study
    directory: Path
    trials: pd.DataFrame
    front: pd.DataFrame
    #: The study-wide total asked for, and the finished trials before and after this run.
    requested: int = 0
    before: int = 0
    after: int = 0

    @property
    def added(self) -> int:
        """Trials this run finished (0 when the study already held ``requested``)."""
        return max(self.after - self.before, 0)

    @property
    def note(self) -> str | None:
        """A sentence when the run did less than a reader of ``trials=`` might expect."""
        if self.before >= self.requested:
            return nothing_to_run(self.study.study_name, self.before, self.requested)
        return None


def nothing_to_run(name: str, before: int, requested: int) -> str:
    return (
        f"study {name!r} already has {before} finished trials, at or above the requested "
        f"total of {requested}; no new trial was run (trials is the study's total: ask for "
        f"{before + requested} to add {requested} more)"
    )


def _records(
    model: StudyModel, study: optuna.Study, *, requested: int = 0, before: int = 0
) -> RunResult:
    directory = study_dir(model.spec.study, create=True)
    df, front = write_records(
        directory, study, objectives=model.objective_names, maximize=model.maximize
    )
    result = RunResult(
        study=study,
        directory=directory,
        trials=df,
        front=front,
        requested=requested,
        before=before,
        after=finished_count(study),
    )
    if result.note:
        warnings.warn(result.note, NothingToRun, stacklevel=3)
    return result


def validate(spec: str | Path) -> tuple[StudyModel | None, list[Problem]]:
    """Every problem of a spec in one pass, sorted by line (``dse validate``): schema, presets,
    evaluators, metric names, constraints and sampler options. Nothing is created."""
    model, problems = check(spec)
    if model is not None:
        try:  # sampler options and storage: what 'dse run' checks before creating anything
            preflight(model)
        except SpecError as exc:
            problems = [*problems, *exc.problems]
    return model, SpecError(problems).problems


def run(
    spec_or_model: str | Path | StudyModel,
    *,
    trials: int | None = None,
    storage: str | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_begin: Callable[[int, int], None] | None = None,
    **worker: Any,
) -> RunResult:
    """Create or resume the spec's study until it holds ``trials`` finished trials in total.

    ``trials`` is the study's total, not a number to add: a study that already holds that many
    runs nothing, and the result's ``note`` says so (also as a :class:`NothingToRun` warning).
    ``on_begin(finished_before, total)`` runs once the study is open and its spec accepted
    (the CLI starts its progress bar there, so a refused run never shows one). ``worker``
    options go to :func:`dse.search.workers.run_worker`, the one run path of ``dse run``,
    ``--jobs`` and ``dse worker`` (seed_offset, heartbeat_s, should_stop, ...).
    """
    model = spec_or_model if isinstance(spec_or_model, StudyModel) else load(spec_or_model)
    preflight(model, storage=storage)  # before anything is created
    done = workers.run_worker(
        model,
        storage=storage,
        trials=trials,
        on_progress=on_progress,
        on_begin=on_begin,
        **worker,
    )
    return _records(model, done.study, requested=done.target, before=done.before)


def run_jobs(
    spec: Path,
    *,
    jobs: int,
    trials: int | None = None,
    storage: str | None = None,
    on_progress: Callable[[Any], None] | None = None,
    on_begin: Callable[[int, int], None] | None = None,
    robust: tuple[int, str] | None = None,
) -> RunResult:
    """``dse run --jobs N``: N ``dse worker`` processes on this machine, one study, then the
    records. ``trials`` and ``on_begin`` as in :func:`run`; ``robust=(samples, statistic)``
    as in :func:`dse.model.load.load` (the spec's ``robust:`` otherwise)."""
    model = load(spec, robust=robust)
    preflight(model, storage=storage)
    target = trials if trials is not None else model.spec.search.trials
    before = _finished_before(model, storage)
    if on_begin is not None:
        on_begin(before, target)
    study = workers.run_jobs(
        spec,
        model,
        jobs=jobs,
        trials=target,
        storage=storage,
        on_progress=on_progress,
        robust=robust,
    )
    return _records(model, study, requested=target, before=before)


def _finished_before(model: StudyModel, storage: str | None) -> int:
    """Finished trials of the model's study now; 0 when it does not exist yet."""
    name = model.spec.study
    url = workers.study_url(model, storage)
    try:
        return finished_count(optuna.load_study(study_name=name, storage=open_storage(url)))
    except KeyError:
        return 0


def run_worker(
    spec: str | Path,
    *,
    records: bool = False,
    robust: tuple[int, str] | None = None,
    **options: Any,
) -> tuple[optuna.Study, int]:
    """``dse worker``: join the spec's study and run until its study-wide total; ``options``
    go to ``dse.search.workers.run_worker``. Returns the study and that total."""
    model = load(spec, robust=robust)
    preflight(model, storage=options.get("storage"))
    done = workers.run_worker(model, **options)
    if records:
        _records(model, done.study, requested=done.target, before=done.before)
    return done.study, done.target


__all__ = [
    "DseError",
    "NothingToRun",
    "RecordedStudy",
    "RunResult",
    "check",
    "evaluate",
    "load",
    "load_for_evaluate",
    "load_study",
    "lock_dict",
    "open_study",
    "read_lock",
    "run",
    "run_jobs",
    "run_worker",
    "validate",
]
