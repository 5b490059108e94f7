"""The one feasibility rule, for a trial, a stored trial and a vectorized batch alike.

A design is feasible when every constraint's violation is ``<= 0`` (Optuna's convention, see
:mod:`dse.spec.expr`). Trials (``TrialEvaluation.feasible``), stored trials
(``dse.search.stored.is_feasible``), batched trials and sweeps all ask these two functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np


def feasible(violations: Iterable[float]) -> bool:
    """One design: every constraint violation ``<= 0`` (no constraints: feasible)."""
    return all(float(v) <= 0.0 for v in violations)


def feasible_mask(violations: Sequence[Any], n: int) -> np.ndarray:
    """A batch of ``n`` designs: each constraint's violations (scalars or arrays that broadcast
    to ``(n,)``), the same rule per design."""
    ok = np.ones(n, dtype=bool)
    for v in violations:
        ok &= np.broadcast_to(np.asarray(v, dtype=float) <= 0.0, (n,))
    return ok
