"""A sweep checks the constraints on the design alone before evaluating (StudyModel.screen):
the evaluators never see a design those constraints reject, and the front, the counts of
feasible designs and every metric on the front are those of evaluating everything."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dse import api
from dse.model.study_model import StudyModel
from dse.search.sweep.chunks import SweepPlan, evaluate_chunk
from dse.search.sweep.sweep import grid_axes
from tests.dse.search.test_sweep import _small_spec


def _spec(tmp_path: Path, constraint: str) -> Path:
    path = _small_spec(tmp_path)
    raw = yaml.safe_load(path.read_text())
    raw["constraints"] = [*raw["constraints"], constraint]
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _grid(model: StudyModel) -> SweepPlan:
    axes = grid_axes(dict(model.spec.space))
    total = int(np.prod([len(a) for a in axes.values()]))
    return SweepPlan("grid", total, total, 0, axes=axes)


def test_screened_designs_are_never_evaluated_and_the_front_is_unchanged(
    tmp_path: Path, studies_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = api.load(_spec(tmp_path, "hbm_stacks_per_die * optics_per_link <= 7"))
    assert [c.source for c in model.design_constraints] == [
        "hbm_stacks_per_die * optics_per_link <= 7"
    ]
    plan = _grid(model)
    seen: list[np.ndarray] = []
    evaluate = type(model).evaluate

    def spy(self, params, *, strict=True):  # noqa: ANN001, ANN202
        seen.append(np.asarray(params["hbm_stacks_per_die"]) * params["optics_per_link"])
        return evaluate(self, params, strict=strict)

    monkeypatch.setattr(type(model), "evaluate", spy)
    screened = evaluate_chunk(model, plan, 0)
    assert len(seen) == 1 and np.all(seen[0] <= 7)
    # 8 areas x 3 stack counts (1, 4, 7) x 2 optics x cluster sizes: stacks 4 and 7 with 4
    # optics per link are rejected, 2 of the 6 (stacks, optics) pairs
    assert len(seen[0]) == plan.total * 4 // 6

    monkeypatch.setattr(type(model), "screen", lambda self, params, n: np.ones(n, bool))
    whole = evaluate_chunk(model, plan, 0)
    assert len(seen) == 2 and len(seen[1]) == plan.total
    assert (screened.designs, screened.feasible) == (whole.designs, whole.feasible)
    assert screened.feasible > 0
    np.testing.assert_array_equal(screened.ids, whole.ids)
    for k in whole.metrics:
        np.testing.assert_array_equal(screened.metrics[k], whole.metrics[k])
    # finite counts only what was evaluated: the rejected designs are not
    assert screened.finite <= whole.finite


def test_a_chunk_the_design_constraints_reject_entirely_has_no_front(
    tmp_path: Path, studies_dir: Path
) -> None:
    model = api.load(_spec(tmp_path, "die_area_mm2 >= 10000"))
    cf = evaluate_chunk(model, _grid(model), 0)
    assert cf.designs > 0 and cf.feasible == 0 and len(cf.ids) == 0


def test_metric_constraints_are_not_design_constraints(tmp_path: Path, studies_dir: Path) -> None:
    model = api.load(_spec(tmp_path, "perf.package_power_w <= 1000"))
    assert model.design_constraints == []
    assert bool(pd.Series(model.screen({"die_area_mm2": np.ones(3)}, 3)).all())
