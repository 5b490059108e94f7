"""ZDT1, a plain two-objective test problem as a custom evaluator (no GPU anything).

Zitzler, Deb and Thiele, "Comparison of Multiobjective Evolutionary Algorithms: Empirical
Results", Evolutionary Computation 8(2):173-195, 2000. With n variables x_i in [0, 1]:
f1 = x1, g = 1 + 9 * sum(x2..xn) / (n - 1), f2 = g * (1 - sqrt(f1 / g)); the Pareto front is
x2..xn = 0, f2 = 1 - sqrt(f1). ``scale`` (a ``fixed`` value, default 1) multiplies both
objectives, to show a spec's own fixed fields reaching its own evaluator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

N_VARIABLES = 5
VARIABLES = tuple(f"x{i}" for i in range(1, N_VARIABLES + 1))


def zdt1(design: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Both ZDT1 objectives, vectorized over any batch shape of the variables."""
    x = [np.asarray(design[name], dtype=float) for name in VARIABLES]
    scale = np.asarray(design.get("scale", 1.0), dtype=float)
    f1 = x[0]
    g = 1.0 + 9.0 * sum(x[1:]) / (N_VARIABLES - 1)
    f2 = g * (1.0 - np.sqrt(f1 / g))
    return {"f1": scale * f1, "f2": scale * f2}


zdt1.metrics = {  # type: ignore[attr-defined]
    "f1": ("1", "first ZDT1 objective: x1, times scale"),
    "f2": ("1", "second ZDT1 objective: g (1 - sqrt(f1 / g)), times scale"),
}
zdt1.vectorized = True  # type: ignore[attr-defined]
zdt1.params = (*VARIABLES, "scale")  # type: ignore[attr-defined]
