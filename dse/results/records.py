"""Study records: trials and front as DataFrames, and the files under ``studies/<study>/``."""

from __future__ import annotations

import math
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pandas as pd

from dse.model.pareto import ParetoArchive
from dse.search.stored import FAIL_ATTR, STALE_ATTR, open_study, stored_outcome, trial_metrics
from dse.spec.atomic import atomic_path, remove_stale_temps

TRIALS_PARQUET = "trials.parquet"
TRIALS_CSV = "trials.csv"
PARETO_CSV = "pareto.csv"


def trials_frame(
    study: optuna.Study, *, objectives: list[str], maximize: list[bool]
) -> pd.DataFrame:
    """One row per trial: number, state, feasibility, duration, params, every metric."""
    rows = []
    for t in study.get_trials(deepcopy=False):
        outcome = stored_outcome(t)
        row: dict[str, Any] = {
            "number": t.number,
            "state": t.state.name,
            "feasible": outcome is not None and outcome.feasible,
            "duration_s": t.duration.total_seconds() if t.duration is not None else math.nan,
            "fail_reason": t.user_attrs.get(FAIL_ATTR, ""),
            "stale": bool(t.user_attrs.get(STALE_ATTR, False)),
        }
        for k, v in t.params.items():
            row[f"params.{k}"] = v
        row.update(trial_metrics(t))
        for k, v in t.constraints.items():
            row[f"constraint.{k}"] = v
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        df = pd.DataFrame(columns=["number", "state", "feasible", "duration_s", "fail_reason"])
    df.attrs["objectives"] = objectives
    df.attrs["maximize"] = maximize
    return df


def front_frame(df: pd.DataFrame, *, objectives: list[str], maximize: list[bool]) -> pd.DataFrame:
    """Feasible, complete, non-dominated trials, sorted by the first objective."""
    ok = df[(df["state"] == "COMPLETE") & df["feasible"].astype(bool)]
    if ok.empty or any(o not in ok for o in objectives):
        return ok.iloc[0:0]
    pts = ok[objectives].to_numpy(dtype=float)
    finite = np.all(np.isfinite(pts), axis=1)
    ok, pts = ok[finite], pts[finite]
    if ok.empty:
        return ok
    archive = ParetoArchive(maximize)
    archive.add(pts, {"row": np.arange(len(ok)), "number": ok["number"].to_numpy()})
    # Best first objective first, ties by trial number; a sampler may propose the same
    # design twice: list each design once (its first trial).
    front = ok.iloc[archive.columns["row"][archive.order(tie="number")]]
    params = [c for c in front.columns if c.startswith("params.")]
    if params:
        first = front.sort_values("number", kind="stable").drop_duplicates(subset=params)
        front = front[front.index.isin(first.index)]
    return front.reset_index(drop=True)


def _parquet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """Parquet columns hold one type: a categorical with mixed choices (``[1, "2", 4.0]``) is
    stored as text there (trials.csv and the storage keep the values as sampled)."""
    mixed = [
        c
        for c in df.columns
        if df[c].dtype == object and len({type(v) for v in df[c] if not _missing(v)}) > 1
    ]
    if not mixed:
        return df
    out = df.copy()
    for c in mixed:
        out[c] = [None if _missing(v) else str(v) for v in out[c]]
    return out


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def write_records(
    directory: Path, study: optuna.Study, *, objectives: list[str], maximize: list[bool]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write trials.parquet (when pyarrow is installed), trials.csv and pareto.csv, each whole
    or not at all (a kill while writing leaves the previous file, never a truncated one)."""
    directory.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(directory)
    df = trials_frame(study, objectives=objectives, maximize=maximize)
    front = front_frame(df, objectives=objectives, maximize=maximize)
    if find_spec("pyarrow"):  # the 'parquet' extra (170 MB); trials.csv holds the same rows
        with atomic_path(directory / TRIALS_PARQUET) as tmp:
            _parquet_safe(df).to_parquet(tmp, index=False)
    with atomic_path(directory / TRIALS_CSV) as tmp:
        df.to_csv(tmp, index=False)
    with atomic_path(directory / PARETO_CSV) as tmp:
        front.to_csv(tmp, index=False)
    return df, front


def load_study(name: str, *, storage: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A recorded study's trials and feasible Pareto front, read live from its storage."""
    rec = open_study(name, storage=storage)
    df = trials_frame(rec.study, objectives=rec.objectives, maximize=rec.maximize)
    return df, front_frame(df, objectives=rec.objectives, maximize=rec.maximize)
