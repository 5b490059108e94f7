"""The CLI's operations as functions, for notebooks and scripts.

from dse import api
model = api.load("spaces/litegpu.yaml")
api.evaluate(model, {"die_area_mm2": 200, ...})
result = api.run("spaces/litegpu.yaml", trials=100)
trials, front = api.load_study("litegpu")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
import pandas as pd
import yaml

from dse.errors import DseError, StudyNotFoundError
from dse.records import LOCK_FILE, front_frame, trials_frame, write_lock, write_records
from dse.runner import Progress, run_study
from dse.spec import load_spec
from dse.storage import existing_study_dir, open_storage, storage_url, study_dir
from dse.study_model import StudyModel, check_params, compile_spec, split_sets


def load(spec_path: str | Path, *, sets: list[str] | None = None) -> StudyModel:
    """Load, validate and compile a spec; ``sets`` are dotted fixed overrides (``a.b=v``)."""
    loaded = load_spec(spec_path)
    _, fixed = _split(loaded, sets or [])
    return compile_spec(loaded, fixed_overrides=fixed)


def _split(loaded: Any, sets: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    from dse.registry import builtin_evaluators

    known = set().union(*(e.params for e in builtin_evaluators().values()))
    # The spec's own fixed keys (gpu, technology, workload presets) can be replaced whole.
    return split_sets(loaded.spec.space, sets, known | set(loaded.spec.fixed))


def load_for_evaluate(spec_path: str | Path, sets: list[str]) -> tuple[StudyModel, dict[str, Any]]:
    """A compiled spec and the full parameter set of its fixed design (``dse evaluate``)."""
    loaded = load_spec(spec_path)
    params, fixed = _split(loaded, sets)
    model = compile_spec(loaded, fixed_overrides=fixed)
    check_params(model.spec.space, params)
    return model, params


def evaluate(model: StudyModel, params: Mapping[str, Any]) -> dict[str, float]:
    """Every metric of one design, as plain floats."""
    return {k: float(v) for k, v in model.evaluate(params).items()}


def lock_dict(model: StudyModel, url: str) -> dict[str, Any]:
    """The fully resolved spec: every preset value spelled out."""
    spec = model.spec.model_dump(mode="json")
    spec["fixed"] = model.context
    spec["storage"] = url
    spec["fixed_overrides"] = model.fixed_overrides
    if model.uncertain:  # distributions from fixed (dse.robust); fixed holds their nominals
        spec["uncertain"] = {u.name: u.as_dict() for u in model.uncertain}
    spec.update(getattr(model, "lock_extras", dict)())
    return spec


@dataclass
class RunResult:
    study: optuna.Study
    directory: Path
    trials: pd.DataFrame
    front: pd.DataFrame


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
    df, front = write_records(
        directory, study, objectives=model.objective_names, maximize=model.maximize
    )
    return RunResult(study=study, directory=directory, trials=df, front=front)


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
    optuna.logging.set_verbosity(optuna.logging.WARNING)
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


def load_study(name: str, *, storage: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A recorded study's trials and feasible Pareto front, read live from its storage."""
    rec = open_study(name, storage=storage)
    df = trials_frame(rec.study, objectives=rec.objectives, maximize=rec.maximize)
    return df, front_frame(df, objectives=rec.objectives, maximize=rec.maximize)


__all__ = [
    "DseError",
    "RunResult",
    "evaluate",
    "load",
    "load_for_evaluate",
    "load_study",
    "run",
]
