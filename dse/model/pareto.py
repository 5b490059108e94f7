"""Pareto front and hypervolume with moocore (never hand-written dominance loops)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import moocore
import numpy as np

from dse.spec.errors import DseError

#: The reference point's margin past the nadir, as a fraction of the front's range.
REF_MARGIN = 0.1


def nondominated_mask(points: np.ndarray, maximize: Sequence[bool]) -> np.ndarray:
    """Boolean mask of the non-dominated rows; duplicates of a front point are kept."""
    points = np.asarray(points, dtype=float)
    if points.shape[0] == 0:
        return np.zeros(0, dtype=bool)
    return np.asarray(moocore.is_nondominated(points, maximise=list(maximize), keep_weakly=True))


def hypervolume(points: np.ndarray, ref: Sequence[float], maximize: Sequence[bool]) -> float:
    points = np.asarray(points, dtype=float)
    if points.shape[0] == 0:
        return 0.0
    return float(moocore.hypervolume(points, ref=np.asarray(ref, float), maximise=list(maximize)))


def as_min(points: np.ndarray, maximize: Sequence[bool]) -> np.ndarray:
    """Objective vectors as minimisation (maximised columns negated)."""
    sign = np.where(np.asarray(maximize, dtype=bool), -1.0, 1.0)
    return np.asarray(points, dtype=float).reshape(-1, len(sign)) * sign


def reference_point(
    *,
    thresholds: Sequence[float | None],
    maximize: Sequence[bool],
    reference_set: np.ndarray | None,
) -> np.ndarray:
    """The hypervolume reference point: thresholds, else the set's nadir plus 10 % of its range."""
    ref = np.full(len(maximize), np.nan)
    if reference_set is not None and len(reference_set):
        pts = as_min(reference_set, maximize)
        nadir, ideal = pts.max(axis=0), pts.min(axis=0)
        span = nadir - ideal
        span = np.where(span > 0, span, np.maximum(np.abs(nadir), 1.0))
        sign = np.where(np.asarray(maximize, dtype=bool), -1.0, 1.0)
        ref = (nadir + REF_MARGIN * span) * sign
    for i, t in enumerate(thresholds):
        if t is not None:
            ref[i] = float(t)
    if np.any(~np.isfinite(ref)):
        missing = [i for i in range(len(ref)) if not math.isfinite(ref[i])]
        raise DseError(
            f"no hypervolume reference point for objectives {missing}: set their 'threshold' "
            "in the spec, or record feasible trials or a sweep first"
        )
    return ref


class ParetoArchive:
    """An incremental Pareto archive: the non-dominated objective vectors of everything added
    so far, with any named columns kept beside them (ids, parameters, metrics).

    Memory stays the size of the front, whatever was added; each ``add`` merges the new rows
    with the archive in one moocore call. Runs (live front size), workers and sweeps share it.
    """

    def __init__(self, maximize: Sequence[bool]) -> None:
        self.maximize = list(maximize)
        self.points = np.zeros((0, len(self.maximize)))
        self.columns: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.points)

    def add(self, points: Any, columns: dict[str, Any] | None = None) -> None:
        """Merge ``points`` (rows of objective values) and their ``columns`` into the front."""
        pts = np.asarray(points, dtype=float).reshape(-1, len(self.maximize))
        if not len(pts):
            return
        cols = {k: np.asarray(v) for k, v in (columns or {}).items()}
        if len(self.points):
            pts = np.vstack([self.points, pts])
            cols = {k: np.concatenate([self.columns[k], v]) for k, v in cols.items()}
        keep = nondominated_mask(pts, self.maximize)
        self.points = pts[keep]
        self.columns = {k: v[keep] for k, v in cols.items()}
