from __future__ import annotations

import numpy as np

from dse.model.pareto import hypervolume, nondominated_mask


def _brute_force(points: np.ndarray, maximize: list[bool]) -> np.ndarray:
    signs = np.where(maximize, -1.0, 1.0)
    p = points * signs
    out = []
    for i in range(len(p)):
        dominated = any(
            np.all(p[j] <= p[i]) and np.any(p[j] < p[i]) for j in range(len(p)) if j != i
        )
        out.append(not dominated)
    return np.array(out)


def test_front_matches_brute_force_mixed_directions() -> None:
    rng = np.random.default_rng(1)
    pts = rng.random((200, 3))
    maximize = [False, True, True]
    assert np.array_equal(nondominated_mask(pts, maximize), _brute_force(pts, maximize))


def test_hypervolume_of_two_points_by_hand() -> None:
    # minimise both; ref (4, 4): [1,4]x[3,4] (3) + [2,4]x[1,4] (6) - overlap [2,4]x[3,4] (2)
    hv = hypervolume(np.array([[1.0, 3.0], [2.0, 1.0]]), [4.0, 4.0], [False, False])
    assert hv == 3 + 6 - 2


def test_duplicates_on_the_front_are_kept() -> None:
    pts = np.array([[1.0, 1.0], [1.0, 1.0], [2.0, 2.0]])
    assert list(nondominated_mask(pts, [False, False])) == [True, True, False]
