"""Search-quality metrics: reference point, IGD+, hypervolume history, dse pareto --quality."""

from __future__ import annotations

import numpy as np
import pytest

from dse.errors import DseError
from dse.results.quality import front_hypervolume, hypervolume_history, igd_plus, reference_point

MAX = [False, True]  # minimise the first objective, maximise the second


def test_reference_point_thresholds_then_nadir_plus_margin() -> None:
    pts = np.array([[1.0, 10.0], [3.0, 30.0]])
    ref = reference_point(thresholds=[None, None], maximize=MAX, reference_set=pts)
    assert ref == pytest.approx([3.2, 8.0])  # nadir (3, 10) pushed out by 10 % of the range
    ref = reference_point(thresholds=[5.0, None], maximize=MAX, reference_set=pts)
    assert ref == pytest.approx([5.0, 8.0])
    assert reference_point(thresholds=[5.0, 1.0], maximize=MAX, reference_set=None) == (
        pytest.approx([5.0, 1.0])
    )
    with pytest.raises(DseError, match="threshold"):
        reference_point(thresholds=[5.0, None], maximize=MAX, reference_set=None)


def test_hypervolume_history_and_igd_plus() -> None:
    ref = np.array([4.0, 0.0])
    pts = np.array([[3.0, 1.0], [2.0, 2.0], [1.0, 1.0], [0.5, 5.0], [2.5, 1.5], [9.0, 9.0]])
    feasible = np.array([True, False, True, True, True, True])
    hist = hypervolume_history(pts, feasible, ref, MAX)
    # (3,1): 1*1; infeasible (2,2) ignored; (1,1) adds 2*1; (0.5,5) box 3.5*5=17.5 dominates
    # both; (2.5,1.5) dominated; (9,9) is worse than the reference cost: no volume.
    assert hist == pytest.approx([1.0, 1.0, 3.0, 17.5, 17.5, 17.5])
    assert hist[-1] == pytest.approx(front_hypervolume(pts[feasible], ref, MAX))

    exact = np.array([[0.0, 10.0], [1.0, 5.0], [2.0, 0.0]])
    assert igd_plus(exact, exact, MAX) == pytest.approx(0.0)
    # Normalised by the front's range (2 and 10): missing (0, 10) from (1, 5) costs
    # sqrt(0.5^2 + 0.5^2); the other two points are matched or dominated: IGD+ = 0.7071 / 3.
    assert igd_plus(exact[1:], exact, MAX) == pytest.approx(np.sqrt(0.5) / 3)
    assert igd_plus(exact[1:] + [0.2, 0.0], exact, MAX) > igd_plus(exact[1:], exact, MAX)
