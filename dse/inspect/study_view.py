"""One recorded study, analysed for people: front, knee, hypervolume history, importances.

Shared by ``dse report`` and ``dse dashboard`` so both show exactly the front ``dse pareto``
prints: the trials and front come from ``records.trials_frame``/``front_frame``, nothing else.

The hypervolume (:mod:`dse.results.quality`'s one definition, as ``dse pareto --quality``) and
the knee are defined in docs/dashboard.md.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import optuna
import pandas as pd

from dse.errors import DseError
from dse.results.quality import HypervolumeBasis, hypervolume_history, study_basis
from dse.results.records import front_frame, trials_frame
from dse.search.storage import existing_study_dir
from dse.search.stored import open_study

__all__ = [
    "HYPERVOLUME_MEANING",
    "MIN_IMPORTANCE_TRIALS",
    "StudyView",
    "category",
    "front_table",
    "ideal_point",
    "knee_index",
    "load_view",
    "metric_units",
    "normalised_hypervolume_history",
    "param_importances",
    "param_ticks",
    "param_values",
    "view_basis",
    "view_reference_point",
]

MIN_IMPORTANCE_TRIALS = 8


@dataclass
class StudyView:
    """A study as stored, with its records computed the same way as ``dse pareto``."""

    name: str
    lock: dict[str, Any]
    url: str
    study: optuna.Study
    trials: pd.DataFrame
    front: pd.DataFrame
    objectives: list[str]
    maximize: list[bool]
    units: dict[str, str] = field(default_factory=dict)

    @property
    def params(self) -> list[str]:
        return [c for c in self.trials.columns if c.startswith("params.")]

    @property
    def searched(self) -> list[str]:
        """The searched parameters' columns, in the spec's ``space`` order: a spec lists its
        question first, and the figures colour the front by the first (every one selectable in
        the HTML report)."""
        space = self.lock.get("space") or {}
        cols = [f"params.{n}" for n in space if f"params.{n}" in self.trials.columns]
        return cols or self.params

    def log_scale(self, column: str) -> bool:
        """Whether the spec searches a parameter on a log scale (``log: true``)."""
        entry = (self.lock.get("space") or {}).get(column.removeprefix("params."))
        return isinstance(entry, dict) and bool(entry.get("log"))

    @property
    def feasible(self) -> pd.DataFrame:
        df = self.trials
        if df.empty:
            return df
        ok = df[(df["state"] == "COMPLETE") & df["feasible"].astype(bool)]
        pts = ok[self.objectives].to_numpy(dtype=float) if len(ok) else np.zeros((0, 0))
        return ok[np.all(np.isfinite(pts), axis=1)] if len(ok) else ok

    @property
    def constraint_columns(self) -> list[str]:
        return [c for c in self.trials.columns if c.startswith("constraint.")]


def metric_units() -> dict[str, str]:
    """Units of the installed evaluators' metrics (custom metrics without a unit stay blank)."""
    from dse.model.registry import builtin_evaluators

    units: dict[str, str] = {}
    for name, ev in builtin_evaluators().items():
        for k, m in (ev.metrics or {}).items():
            units[f"{name}.{k}"] = m.unit
    return units


def load_view(name: str, *, storage: str | None = None) -> StudyView:
    """Read a study's lock and storage; the front is ``records.front_frame`` of live trials."""
    existing_study_dir(name)
    rec = open_study(name, storage=storage)
    df = trials_frame(rec.study, objectives=rec.objectives, maximize=rec.maximize)
    front = front_frame(df, objectives=rec.objectives, maximize=rec.maximize)
    return StudyView(
        name=name,
        lock=rec.lock,
        url=rec.url,
        study=rec.study,
        trials=df,
        front=front,
        objectives=rec.objectives,
        maximize=rec.maximize,
        units=metric_units(),
    )


def view_basis(view: StudyView) -> HypervolumeBasis:
    """The study's hypervolume basis (:func:`dse.results.quality.study_basis`)."""
    thresholds = [spec.get("threshold") for spec in view.lock["objectives"]]
    return study_basis(
        view.name,
        objectives=view.objectives,
        maximize=view.maximize,
        thresholds=thresholds,
        front=view.front,
    )


def view_reference_point(view: StudyView) -> tuple[list[float], list[str]]:
    """The study's hypervolume reference point and, per objective, where it came from; an
    objective with neither a threshold nor a front gets NaN."""
    try:
        basis = view_basis(view)
    except DseError:  # no threshold and nothing feasible yet
        thresholds = [spec.get("threshold") for spec in view.lock["objectives"]]
        ref = [float(t) if t is not None else math.nan for t in thresholds]
        return ref, ["threshold" if t is not None else "no feasible trials" for t in thresholds]
    return [float(v) for v in basis.reference], basis.sources


def ideal_point(view: StudyView) -> list[float]:
    feas = view.feasible
    out = []
    for obj, mx in zip(view.objectives, view.maximize, strict=True):
        vals = feas[obj].to_numpy(dtype=float) if len(feas) else np.zeros(0)
        out.append(math.nan if vals.size == 0 else float(vals.max() if mx else vals.min()))
    return out


#: The one wording of the normalised hypervolume, in the HTML report and its PNG figures.
HYPERVOLUME_MEANING = (
    "normalised: 0 = the reference point, 1 = the ideal point; "
    "the share of the box between them that the feasible front dominates"
)


def normalised_hypervolume_history(view: StudyView) -> pd.DataFrame:
    """The normalised hypervolume of the feasible front after each trial number
    (:func:`dse.results.quality.hypervolume_history` divided by the basis' box)."""
    df = view.trials
    empty = pd.DataFrame({"number": [], "hypervolume": [], "feasible_trials": []})
    if df.empty or view.feasible.empty:
        return empty
    try:
        basis = view_basis(view)
    except DseError:
        return empty
    df = df.sort_values("number")
    feas = df["number"].isin(set(view.feasible["number"])).to_numpy()
    pts = df[view.objectives].to_numpy(dtype=float)
    hv = basis.normalised(hypervolume_history(pts, feas, basis.reference, view.maximize))
    return pd.DataFrame(
        {"number": df["number"].astype(int), "hypervolume": hv, "feasible_trials": feas.cumsum()}
    )


def knee_index(view: StudyView) -> int | None:
    """Row of ``view.front`` closest to the ideal point after min-max normalisation."""
    front = view.front
    if front.empty:
        return None
    pts = front[view.objectives].to_numpy(dtype=float)
    pts = np.where(np.asarray(view.maximize)[None, :], -pts, pts)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    span = np.where(hi - lo == 0, 1.0, hi - lo)
    dist = np.linalg.norm((pts - lo) / span, axis=1)
    return int(np.argmin(dist))


def param_importances(view: StudyView) -> dict[str, dict[str, float] | str]:
    """Per objective: parameter -> importance on complete feasible trials, or why none."""
    feas_numbers = set(view.feasible["number"])
    trials = [t for t in view.study.get_trials(deepcopy=False) if t.number in feas_numbers]
    out: dict[str, dict[str, float] | str] = {}
    if len(trials) < MIN_IMPORTANCE_TRIALS:
        why = f"too few feasible trials ({len(trials)} < {MIN_IMPORTANCE_TRIALS})"
        return dict.fromkeys(view.objectives, why)
    # Importances need a study of only the trials that count: the feasible complete ones.
    sub = optuna.create_study(directions=view.study.directions)
    sub.add_trials(trials)
    for i, obj in enumerate(view.objectives):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                target = lambda t, i=i: float(t.values[i])  # noqa: E731 - the i-th objective
                imp = optuna.importance.get_param_importances(sub, target=target)
            out[obj] = {k: float(v) for k, v in imp.items()}
        except (ValueError, RuntimeError, ZeroDivisionError) as exc:
            out[obj] = f"importances unavailable: {exc}"
    return out


def param_ticks(view: StudyView, column: str) -> list[str] | None:
    """The choices of a non-numeric parameter column, in sorted order (plotted at 0, 1, ...),
    or None for a numeric one."""
    values = view.trials[column]
    if pd.api.types.is_numeric_dtype(values):
        return None
    return sorted({str(v) for v in values})


def param_values(frame: pd.DataFrame, column: str, ticks: list[str] | None) -> np.ndarray:
    """A parameter column of ``frame`` as plottable numbers (a choice's position in
    ``ticks`` when the parameter is not numeric)."""
    if ticks is None:
        return frame[column].to_numpy(dtype=float)
    where = {t: float(i) for i, t in enumerate(ticks)}
    return np.array([where.get(str(v), np.nan) for v in frame[column]], dtype=float)


def front_table(view: StudyView) -> pd.DataFrame:
    """Number, objectives and parameters of the front, with a ``knee`` flag."""
    cols = ["number", *view.objectives, *view.params]
    table = view.front[[c for c in cols if c in view.front.columns]].copy()
    knee = knee_index(view)
    table.insert(1, "knee", [i == knee for i in range(len(table))])
    return table


def category(view: StudyView) -> pd.Series:
    """Per trial: 'front', 'duplicate' (a later trial of a front design), 'dominated'
    (feasible), 'infeasible', or the state of an unfinished or failed trial."""
    df = view.trials
    if df.empty:
        return pd.Series([], dtype=str)
    front_numbers = set(view.front["number"])
    feas_numbers = set(view.feasible["number"])
    params = view.params
    front_designs = {tuple(r) for r in view.front[params].itertuples(index=False)}
    designs = list(df[params].itertuples(index=False)) if params else [()] * len(df)

    def cat(n: int, state: str, design: tuple[Any, ...]) -> str:
        if n in front_numbers:
            return "front"
        if n in feas_numbers:
            return "duplicate" if params and tuple(design) in front_designs else "dominated"
        return "infeasible" if state == "COMPLETE" else state.lower()

    return pd.Series(
        [cat(n, s, d) for n, s, d in zip(df["number"], df["state"], designs, strict=True)]
    )
