"""Search quality: hypervolume, IGD+ against the exact sweep front, hypervolume history.

One hypervolume, the same in ``dse pareto --quality``, ``quality.json``, the report and the
dashboard note (:class:`HypervolumeBasis`; all computed with moocore). Its reference set and
point, its normalisation and IGD+'s are set out in docs/search.md, "Quality metrics".
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import moocore
import numpy as np
import pandas as pd

from dse.errors import DseError
from dse.model.pareto import as_min, hypervolume, reference_point
from dse.results.records import load_study
from dse.search.spec_lock import read_lock
from dse.search.storage import existing_study_dir
from dse.search.sweep.sweep import read_sweep

QUALITY_JSON = "quality.json"
HV_HISTORY_CSV = "hv_history.csv"

__all__ = [
    "HypervolumeBasis",
    "QualityReport",
    "front_hypervolume",
    "hypervolume_basis",
    "hypervolume_history",
    "igd_plus",
    "reference_point",
    "study_quality",
]


def front_hypervolume(points: np.ndarray, ref: np.ndarray, maximize: Sequence[bool]) -> float:
    pts = np.asarray(points, dtype=float).reshape(-1, len(maximize))
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    pts = pts[np.all(as_min(pts, maximize) < as_min(ref, maximize), axis=1)]  # those with volume
    return hypervolume(pts, [float(v) for v in ref], maximize) if len(pts) else 0.0


STUDY_NADIR = "study front nadir + 10% range"
SWEEP_NADIR = "sweep nadir + 10% range"


@dataclass
class HypervolumeBasis:
    """The reference and ideal points a hypervolume is normalised by, and their sources."""

    reference: np.ndarray
    ideal: np.ndarray
    sources: list[str]  # per objective: "threshold", SWEEP_NADIR or STUDY_NADIR
    maximize: list[bool]

    @property
    def box(self) -> float:
        """Volume between ideal and reference (a zero-width or unknown side counts as 1)."""
        span = np.abs(np.asarray(self.reference, float) - np.asarray(self.ideal, float))
        return float(np.prod(np.where(np.isfinite(span) & (span > 0), span, 1.0)))

    @property
    def source(self) -> str:
        """One phrase for all objectives (``quality.json``'s ``reference_from``)."""
        kinds = list(dict.fromkeys(self.sources))
        return kinds[0] if len(kinds) == 1 else " / ".join(self.sources)

    def normalised(self, raw: Any) -> Any:
        return raw / self.box

    def hypervolume(self, points: np.ndarray) -> float:
        """Normalised hypervolume of ``points`` (feasible objective vectors)."""
        return float(self.normalised(front_hypervolume(points, self.reference, self.maximize)))


def hypervolume_basis(
    *,
    thresholds: Sequence[float | None],
    maximize: Sequence[bool],
    front: np.ndarray,
    sweep_front: np.ndarray | None = None,
) -> HypervolumeBasis:
    """The one basis: reference set = the sweep front when recorded, else the study's front."""
    swept = sweep_front is not None and len(sweep_front) > 0
    ref_set = sweep_front if swept else (front if len(front) else None)
    ref = reference_point(thresholds=thresholds, maximize=maximize, reference_set=ref_set)
    if ref_set is not None:
        sign = np.where(np.asarray(maximize, dtype=bool), -1.0, 1.0)
        ideal = as_min(ref_set, maximize).min(axis=0) * sign
    else:
        ideal = np.full(len(maximize), np.nan)
    nadir = SWEEP_NADIR if swept else STUDY_NADIR
    sources = ["threshold" if t is not None else nadir for t in thresholds]
    return HypervolumeBasis(ref, ideal, sources, list(maximize))


def study_basis(
    name: str,
    *,
    objectives: Sequence[str],
    maximize: Sequence[bool],
    thresholds: Sequence[float | None],
    front: pd.DataFrame,
) -> HypervolumeBasis:
    """:func:`hypervolume_basis` of a recorded study (its sweep front read when recorded)."""
    names = list(objectives)
    pts = front[names].to_numpy(dtype=float) if len(front) else np.empty((0, len(names)))
    return hypervolume_basis(
        thresholds=thresholds, maximize=maximize, front=pts, sweep_front=_sweep_front(name, names)
    )


def _sweep_front(name: str, names: list[str]) -> np.ndarray | None:
    """The objectives ``names`` of the study's recorded sweep front; None without one."""
    sweep = read_sweep(name)
    if sweep is not None and all(n in sweep[1] for n in names) and len(sweep[1]):
        return sweep[1][names].to_numpy(dtype=float)
    return None


def igd_plus(points: np.ndarray, front: np.ndarray, maximize: Sequence[bool]) -> float:
    """IGD+ of ``points`` against the exact ``front``, normalised by the front's ideal/nadir."""
    exact = as_min(front, maximize)
    if len(exact) == 0:
        raise DseError("the exact front is empty; run 'dse sweep' on a feasible space first")
    pts = as_min(points, maximize)
    if len(pts) == 0:
        return math.inf
    ideal, nadir = exact.min(axis=0), exact.max(axis=0)
    span = np.where(nadir > ideal, nadir - ideal, 1.0)
    return float(moocore.igd_plus((pts - ideal) / span, ref=(exact - ideal) / span))


def hypervolume_history(
    points: np.ndarray, feasible: np.ndarray, ref: np.ndarray, maximize: Sequence[bool]
) -> np.ndarray:
    """Hypervolume of the feasible front after each row (rows in trial order)."""
    pts = as_min(points, maximize)
    r = as_min(ref, maximize)[0]
    ok = np.asarray(feasible, dtype=bool) & np.all(np.isfinite(pts), axis=1) & np.all(pts < r, 1)
    out = np.zeros(len(pts))
    front = np.empty((0, pts.shape[1]))
    hv = 0.0
    for i in range(len(pts)):
        if ok[i]:
            p = pts[i]
            if not np.any(np.all(front <= p, axis=1)):
                front = np.vstack([front[~np.all(p <= front, axis=1)], p])
                hv = float(moocore.hypervolume(front, ref=r))
        out[i] = hv
    return out


@dataclass
class QualityReport:
    """A study's search quality, for ``dse pareto --quality`` and the report.

    ``hypervolume`` and ``sweep_hypervolume`` are normalised (module docstring): divided by
    the volume of the box between ``ideal_point`` and ``reference_point``."""

    study: str
    trials: int
    feasible: int
    front_size: int
    reference_point: list[float]
    reference_from: str
    hypervolume: float
    sweep_hypervolume: float | None
    hypervolume_fraction: float | None
    igd_plus: float | None
    sweep_front_size: int | None
    ideal_point: list[float] = field(default_factory=list)
    reference_sources: list[str] = field(default_factory=list)
    hypervolume_raw: float = 0.0


def _objective_specs(lock: dict[str, Any]) -> tuple[list[str], list[bool], list[float | None]]:
    objs = lock["objectives"]
    return (
        [o["metric"] for o in objs],
        [o["direction"] == "maximize" for o in objs],
        [o.get("threshold") for o in objs],
    )


def study_quality(
    name: str, *, storage: str | None = None, write: bool = True
) -> tuple[QualityReport, pd.DataFrame]:
    """Hypervolume (and IGD+ when a sweep exists) of a recorded study, and its HV history.

    With ``write`` the report goes to ``studies/<study>/quality.json`` and the per-trial history
    to ``hv_history.csv``.
    """
    lock = read_lock(name)
    names, maximize, thresholds = _objective_specs(lock)
    df, front = load_study(name, storage=storage)
    if len(df):  # finished trials only: not queued, running or retired (stale) ones
        done = df["state"].isin(["COMPLETE", "FAIL", "PRUNED"])
        if "stale" in df:
            done &= ~df["stale"].astype(bool)
        df = df[done].sort_values("number").reset_index(drop=True)
    exact = _sweep_front(name, names)
    study_pts = front[names].to_numpy(dtype=float) if len(front) else np.empty((0, len(names)))
    basis = hypervolume_basis(
        thresholds=thresholds, maximize=maximize, front=study_pts, sweep_front=exact
    )
    ref = basis.reference
    raw = front_hypervolume(study_pts, ref, maximize)
    hv = float(basis.normalised(raw))
    sweep_hv = basis.hypervolume(exact) if exact is not None else None
    report = QualityReport(
        study=name,
        trials=len(df),
        feasible=int(df["feasible"].sum()) if len(df) else 0,
        front_size=len(front),
        reference_point=[float(v) for v in ref],
        reference_from=basis.source,
        hypervolume=hv,
        sweep_hypervolume=sweep_hv,
        hypervolume_fraction=hv / sweep_hv if sweep_hv else None,
        igd_plus=igd_plus(study_pts, exact, maximize) if exact is not None else None,
        sweep_front_size=len(exact) if exact is not None else None,
        ideal_point=[float(v) for v in basis.ideal],
        reference_sources=basis.sources,
        hypervolume_raw=raw,
    )
    if len(df) and all(n in df for n in names):
        pts = df[names].to_numpy(dtype=float)
        feas = (df["state"] == "COMPLETE").to_numpy() & df["feasible"].astype(bool).to_numpy()
        history = basis.normalised(hypervolume_history(pts, feas, ref, maximize))
    else:
        history = np.zeros(len(df))
    hist = pd.DataFrame(
        {"number": df["number"] if len(df) else [], "hypervolume": history},
    )
    if sweep_hv:
        hist["hypervolume_fraction"] = hist["hypervolume"] / sweep_hv
    if write:
        directory: Path = existing_study_dir(name)
        (directory / QUALITY_JSON).write_text(
            json.dumps(asdict(report), indent=2) + "\n", encoding="utf-8"
        )
        hist.to_csv(directory / HV_HISTORY_CSV, index=False)
    return report, hist


def print_quality(name: str, *, storage: str | None = None, console: Any = None) -> QualityReport:
    """``dse pareto STUDY --quality``: hypervolume, its fraction of the sweep's, and IGD+."""
    from rich.console import Console

    con = console or Console()
    r, _ = study_quality(name, storage=storage)
    ref = ", ".join(f"{v:.6g}" for v in r.reference_point)
    ideal = ", ".join(f"{v:.6g}" for v in r.ideal_point)
    con.print(
        f"hypervolume {r.hypervolume:.6g}, normalised: ideal [{ideal}] -> 0, reference point "
        f"[{ref}] -> 1 (reference from {r.reference_from}; raw {r.hypervolume_raw:.6g})",
        highlight=False,
    )
    if r.sweep_hypervolume is not None:
        pct = 100 * (r.hypervolume_fraction or 0.0)
        sweep = read_sweep(name)
        summary = sweep[0] if sweep is not None else {}
        # Only a grid sweep is exact; 'dse sweep --samples N' is a sampled front.
        kind = (
            "exact sweep front"
            if summary.get("mode", "grid") == "grid"
            else f"sampled sweep front ({summary.get('designs_evaluated')} designs, not exact)"
        )
        con.print(
            f"{kind}: {r.sweep_front_size} designs, hypervolume "
            f"{r.sweep_hypervolume:.6g}; this study reaches {pct:.2f} %"
        )
        con.print(f"IGD+ {r.igd_plus:.6g} (normalised by the sweep front's ideal and nadir)")
    else:
        con.print("IGD+: no exact front recorded (run 'dse sweep SPEC' to get one)")
    return r
