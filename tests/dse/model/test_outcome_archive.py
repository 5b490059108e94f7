"""One feasibility rule and one incremental front archive, one trial outcome (issue 16,
item 2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dse import api
from dse.model.batched import evaluate_trials
from dse.model.guarded import evaluate_trial
from dse.model.load import load
from dse.model.outcome import Outcome, feasible, feasible_mask
from dse.model.pareto import ParetoArchive, nondominated_mask
from dse.search.stored import stored_outcome
from tests.dse.model.test_spec_selected_evaluators import zdt1_copy


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


def test_batch_outcome_rows_equal_one_design_outcomes() -> None:
    f1 = np.array([0.2, 0.9, 0.5])
    batch = Outcome.batch({"f1": f1, "f2": 1.0}, [f1 - 0.6], ["f2", "f1"], 3)
    assert batch.feasible.tolist() == [True, False, True]
    for i in range(3):
        one = Outcome.of({"f1": f1[i], "f2": 1.0}, [f1[i] - 0.6], ["f2", "f1"])
        assert batch.row(i) == one
        assert one.objectives == [1.0, f1[i]] and one.feasible == (f1[i] <= 0.6)


def test_a_robust_trial_is_feasible_only_if_every_scenario_meets_the_constraints(
    tmp_path: Path,
) -> None:
    # scale ~ U(0.5, 1.5): x1 = 0.8 gives a mean f1 of about 0.8 <= 0.9, but scenarios with
    # scale > 1.125 break the constraint, so the robust trial is infeasible (docs/robust.md).
    spec = zdt1_copy(
        tmp_path,
        study="rob-zdt1",
        fixed={"scale": {"dist": "uniform", "low": 0.5, "high": 1.5}},
        constraints=["zdt1.f1 <= 0.9"],
        robust={"samples": 16, "statistic": "mean"},
        search={"sampler": "random", "trials": 4, "seed": 1},
    )
    model = load(spec)
    design = {"x1": 0.8, "x2": 0.0, "x3": 0.0, "x4": 0.0, "x5": 0.0}
    out = evaluate_trial(model, design)
    assert out.metrics["zdt1.f1"] <= 0.9 < out.metrics["zdt1.f1"] + out.violations[0]
    worst = 0.8 * max(model.samples["scale"].max(), 1.0) - 0.9  # nominal scale is 1.0
    assert out.violations[0] == pytest.approx(worst, rel=1e-12)
    assert not out.feasible
    # The batched path (which falls back to one design at a time here) agrees.
    assert evaluate_trials(model, [design, {**design, "x1": 0.1}])[0] == out


@pytest.mark.slow
def test_a_stored_trial_gives_back_the_outcome_its_run_computed(
    tmp_path: Path, studies_dir: Path
) -> None:
    spec = zdt1_copy(
        tmp_path,
        study="stored-outcome",
        constraints=["zdt1.f1 <= 0.5"],
        search={"sampler": "nsga2", "trials": 30, "seed": 2},
    )
    res = api.run(spec)
    model = load(spec)
    complete = [t for t in res.study.get_trials() if t.state.name == "COMPLETE"]
    assert len(complete) == 30
    outcomes = [stored_outcome(t) for t in complete]
    assert outcomes == [evaluate_trial(model, t.params) for t in complete]
    assert 0 < sum(o.feasible for o in outcomes) < 30  # type: ignore[union-attr]
    assert res.trials["feasible"].tolist() == [o.feasible for o in outcomes]  # type: ignore[union-attr]
