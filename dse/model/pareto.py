"""Pareto front and hypervolume with moocore (never hand-written dominance loops)."""

from __future__ import annotations

from collections.abc import Sequence

import moocore
import numpy as np


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
