"""The one incremental front archive (issue 16 item 2): batched merges give the front of
everything added, in any grouping and order, and its row order does not depend on either."""

from __future__ import annotations

import numpy as np
import pytest

from dse.model.pareto import ParetoArchive, nondominated_mask


def _grid_points(rng: np.random.Generator, n: int) -> np.ndarray:
    # Coarse values: many ties in every objective and exact duplicates of front vectors.
    return rng.integers(0, 12, size=(n, 3)).astype(float)


@pytest.mark.parametrize("batch_rows", [1, 7, 4096])
def test_any_grouping_and_order_gives_the_front_of_the_union(batch_rows: int) -> None:
    rng = np.random.default_rng(3)
    pts = _grid_points(rng, 3000)
    maximize = [False, True, False]
    expected = np.flatnonzero(nondominated_mask(pts, maximize))
    for trial in range(3):
        perm = rng.permutation(len(pts))
        cuts = np.sort(rng.choice(np.arange(1, len(pts)), size=25, replace=False))
        archive = ParetoArchive(maximize, batch_rows=batch_rows)
        for part in np.split(perm, cuts):
            archive.add(pts[part], {"id": part})
            if trial == 1:  # reading in between (a progress line) changes nothing
                assert archive.size(exact=False) <= len(archive)
        assert sorted(archive.columns["id"].tolist()) == expected.tolist()
        assert np.array_equal(archive.points, pts[archive.columns["id"]])


def test_lazy_merges_are_batched_and_size_without_merge_lags() -> None:
    archive = ParetoArchive([False, False], batch_rows=10)
    archive.add([[float(i), float(-i)] for i in range(9)])  # 9 mutually non-dominated rows
    assert archive.size(exact=False) == 0  # still waiting for a batch of 10
    assert archive.size() == len(archive) == 9
    archive.add([[100.0, 100.0]])  # dominated: dropped at the next merge
    assert len(archive) == 9


def test_order_is_best_first_objective_then_the_tie_column() -> None:
    pts = np.array([[2.0, 5.0], [1.0, 7.0], [2.0, 4.0], [3.0, 1.0], [2.0, 4.0]])
    maximize = [True, True]  # front: (3,1), (2,5), (1,7); (2,4) dominated by (2,5)
    a, b = ParetoArchive(maximize), ParetoArchive(maximize)
    a.add(pts, {"id": np.array([10, 11, 12, 13, 14])})
    for i in (4, 2, 0, 3, 1):  # another order, one row at a time
        b.add(pts[i : i + 1], {"id": np.array([10 + i])})
    for archive in (a, b):
        ids = archive.columns["id"][archive.order(tie="id")]
        assert ids.tolist() == [13, 10, 11]


def test_ties_in_the_first_objective_are_ordered_by_the_tie_column() -> None:
    pts = np.array([[1.0, 3.0], [1.0, 3.0], [0.5, 9.0]])  # a duplicate front vector
    archive = ParetoArchive([False, False])
    archive.add(pts, {"n": np.array([7, 2, 5])})
    assert archive.columns["n"][archive.order(tie="n")].tolist() == [5, 2, 7]


@pytest.mark.parametrize("maximize", [[False, True, False], [True], [False, False, True, True]])
def test_large_masks_with_the_anchor_prefilter_equal_moocore_on_every_row(
    maximize: list[bool],
) -> None:
    import moocore

    from dse.model.pareto import PREFILTER_ROWS

    rng = np.random.default_rng(11)
    for coarse in (True, False):  # many ties and duplicates, then none
        pts = rng.random((3 * PREFILTER_ROWS, len(maximize)))
        if coarse:
            pts = np.floor(pts * 9)
        expected = moocore.is_nondominated(pts, maximise=maximize, keep_weakly=True)
        assert np.array_equal(nondominated_mask(pts, maximize), expected)
    pts[5, 0] = np.nan  # not finite: moocore alone, no prefilter
    assert len(nondominated_mask(pts, maximize)) == len(pts)


def test_records_front_is_the_archive_front_first_trial_per_design_ties_by_number() -> None:
    import pandas as pd

    from dse.results.records import front_frame

    df = pd.DataFrame(
        {
            "number": [0, 1, 2, 3, 4, 5],
            "state": ["COMPLETE"] * 5 + ["FAIL"],
            "feasible": [True, True, True, True, True, True],
            "a": [1.0, 1.0, 2.0, 0.5, 1.0, 0.1],
            "b": [1.0, 1.0, 0.5, 3.0, 1.0, 0.1],
            "params.x": [1, 1, 2, 3, 4, 5],
        }
    )
    front = front_frame(df, objectives=["a", "b"], maximize=[False, False])
    # Trial 1 repeats design x=1 (trial 0 listed); trial 4 ties trial 0 on a; 5 failed.
    assert front["number"].tolist() == [3, 0, 4, 2]
    df[["a", "b"]] = np.nan
    assert front_frame(df, objectives=["a", "b"], maximize=[False, False]).empty
