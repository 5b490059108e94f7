"""One feasibility rule and one incremental front archive (issue 16, item 2)."""

from __future__ import annotations

import numpy as np

from dse.model.outcome import feasible, feasible_mask
from dse.model.pareto import ParetoArchive, nondominated_mask


def test_feasible_is_every_violation_at_most_zero_for_one_design_and_a_batch() -> None:
    assert feasible([]) and feasible([0.0, -1.0]) and not feasible([-1.0, 1e-12])
    v1 = np.array([0.0, 0.5, -2.0, -1.0])
    v2 = np.array([-1.0, -1.0, 0.0, 3.0])
    mask = feasible_mask([v1, v2, -1.0], 4)  # a scalar violation broadcasts
    assert mask.tolist() == [True, False, True, False]
    assert mask.tolist() == [feasible([a, b, -1.0]) for a, b in zip(v1, v2, strict=True)]
    assert feasible_mask([], 3).tolist() == [True, True, True]


def test_incremental_archive_equals_the_front_of_everything_added() -> None:
    rng = np.random.default_rng(7)
    pts = rng.random((400, 3))
    pts[17] = pts[3]  # a duplicate of a point: kept like nondominated_mask keeps it
    maximize = [False, True, False]
    archive = ParetoArchive(maximize)
    for start in range(0, 400, 37):  # uneven chunks
        chunk = pts[start : start + 37]
        archive.add(chunk, {"id": np.arange(start, start + len(chunk))})
    expected = np.flatnonzero(nondominated_mask(pts, maximize))
    assert sorted(archive.columns["id"].tolist()) == expected.tolist()
    assert np.array_equal(archive.points[np.argsort(archive.columns["id"])], pts[expected])
    assert len(archive) == len(expected) < 400
