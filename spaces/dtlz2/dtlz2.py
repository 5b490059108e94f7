"""DTLZ2 with 3 objectives and 7 variables, a plain test problem as a custom evaluator.

Deb, Thiele, Laumanns and Zitzler, "Scalable Test Problems for Evolutionary Multiobjective
Optimization", in Evolutionary Multiobjective Optimization, Springer, 2005 (TIK report 112,
2001). With x_i in [0, 1], M = 3 objectives and k = n - M + 1 = 5 distance variables:
g = sum((x_i - 0.5)^2 for i >= M), f1 = (1 + g) cos(x1 pi/2) cos(x2 pi/2),
f2 = (1 + g) cos(x1 pi/2) sin(x2 pi/2), f3 = (1 + g) sin(x1 pi/2). The Pareto front is the
positive octant of the unit sphere (g = 0); with the reference point (1.1, 1.1, 1.1) its
hypervolume is 1.1^3 - pi/6 = 0.807401.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

N_VARIABLES = 7
N_OBJECTIVES = 3
VARIABLES = tuple(f"x{i}" for i in range(1, N_VARIABLES + 1))
TRUE_HYPERVOLUME = 1.1**3 - np.pi / 6


def dtlz2(design: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The three DTLZ2 objectives, vectorized over any batch shape of the variables."""
    x = [np.asarray(design[name], dtype=float) for name in VARIABLES]
    g = sum((xi - 0.5) ** 2 for xi in x[N_OBJECTIVES - 1 :])
    a, b = x[0] * np.pi / 2, x[1] * np.pi / 2
    return {
        "f1": (1 + g) * np.cos(a) * np.cos(b),
        "f2": (1 + g) * np.cos(a) * np.sin(b),
        "f3": (1 + g) * np.sin(a),
    }


dtlz2.metrics = {  # type: ignore[attr-defined]
    "f1": ("1", "first DTLZ2 objective: (1 + g) cos(x1 pi/2) cos(x2 pi/2)"),
    "f2": ("1", "second DTLZ2 objective: (1 + g) cos(x1 pi/2) sin(x2 pi/2)"),
    "f3": ("1", "third DTLZ2 objective: (1 + g) sin(x1 pi/2)"),
}
dtlz2.vectorized = True  # type: ignore[attr-defined]
dtlz2.params = VARIABLES  # type: ignore[attr-defined]
