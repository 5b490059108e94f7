"""The CLI's operations as functions, for notebooks and scripts.

from dse import api
model = api.load("spaces/litegpu.yaml")
api.evaluate(model, {"die_area_mm2": 200, ...})
result = api.run("spaces/litegpu.yaml", trials=100)
trials, front = api.load_study("litegpu")

The top-level facade: it may import every layer of ``dse`` (and only ``dse.cli`` imports it).
"""

from __future__ import annotations

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
from dse.search.runner import Progress, run_study
from dse.search.storage import storage_url, study_dir
from dse.search.stored import LOCK_FILE, RecordedStudy, open_study, read_lock, write_lock
from dse.spec.errors import DseError, Problem, SpecError


@dataclass
class RunResult:
    study: optuna.Study
    directory: Path
    trials: pd.DataFrame
    front: pd.DataFrame


def _records(model: StudyModel, study: optuna.Study) -> RunResult:
    directory = study_dir(model.spec.study, create=True)
    df, front = write_records(
        directory, study, objectives=model.objective_names, maximize=model.maximize
    )
    return RunResult(study=study, directory=directory, trials=df, front=front)


def validate(spec: str | Path) -> tuple[StudyModel | None, list[Problem]]:
    """Every problem of a spec in one pass, sorted by line (``dse validate``): schema, presets,
    evaluators, metric names, constraints and sampler options. Nothing is created."""
    from dse.search.samplers import make_sampler

    model, problems = check(spec)
    if model is not None:
        try:
            make_sampler(model)
        except SpecError as exc:
            problems = [*problems, *exc.problems]
    return model, SpecError(problems).problems


def run(
    spec_or_model: str | Path | StudyModel,
    *,
    trials: int | None = None,
    storage: str | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    **worker: Any,
) -> RunResult:
    """Create or resume the spec's study until it holds ``trials`` finished trials.

    ``worker`` options go to ``runner.run_study`` (seed_offset, heartbeat_s, ...).
    """
    model = spec_or_model if isinstance(spec_or_model, StudyModel) else load(spec_or_model)
    name = model.spec.study
    directory = study_dir(name, create=True)
    url = storage_url(name, storage or model.spec.storage)
    lock = lock_dict(model, url)
    study = run_study(
        model,
        storage_url=url,
        trials=trials if trials is not None else model.spec.search.trials,
        on_progress=on_progress,
        spec_lock=lock,
        on_start=lambda _: write_lock(directory / LOCK_FILE, lock),
        **worker,
    )
    return _records(model, study)


def run_jobs(
    spec: Path,
    *,
    jobs: int,
    trials: int | None = None,
    storage: str | None = None,
    on_progress: Callable[[Any], None] | None = None,
) -> RunResult:
    """``dse run --jobs N``: N ``dse worker`` processes on this machine, one study, then the
    records."""
    model = load(spec)
    study = workers.run_jobs(
        spec, model, jobs=jobs, trials=trials, storage=storage, on_progress=on_progress
    )
    return _records(model, study)


def run_worker(
    spec: str | Path,
    *,
    records: bool = False,
    **options: Any,
) -> tuple[optuna.Study, int]:
    """``dse worker``: join the spec's study and run until its study-wide total; ``options``
    go to ``dse.search.workers.run_worker``. Returns the study and that total."""
    model = load(spec)
    study, target = workers.run_worker(model, **options)
    if records:
        _records(model, study)
    return study, target


__all__ = [
    "DseError",
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
