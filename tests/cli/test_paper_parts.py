"""A split regeneration composes: --only runs keep each job's fronts in a parts folder and
--finish reads them back as the class study would have returned them."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import ROOT

PAPER = ROOT / "studies" / "paper"
sys.path.insert(0, str(PAPER))
import classes  # noqa: E402
import reproduce  # noqa: E402


def test_parts_round_trip_and_missing_jobs_named(tmp_path: Path) -> None:
    job = classes.Job("llama3-8b-decode", "dual", "cost")
    front = pd.DataFrame({"params.die_area_mm2": [700.0, 726.0], "params.link_type": ["cpo",
                          "electrical"], classes.COST: [0.01, 0.02]})  # fmt: skip
    result = {"job": job, "exact": front, "search": front.iloc[:1], "grid": 1814400,
              "grid_feasible": 10, "found_by": "search", "trials": 2000,
              "trials_feasible": 1500, "hv_exact": 2.0, "hv_search": 1.99,
              "cpu_s": 3.5}  # fmt: skip
    reproduce.save_parts([result], tmp_path)
    (back,) = reproduce.load_parts(tmp_path, [job])
    assert back["job"] == job
    pd.testing.assert_frame_equal(back["exact"], front)
    pd.testing.assert_frame_equal(back["search"], front.iloc[:1])
    assert {k: back[k] for k in reproduce._PART_FIELDS} == {
        k: result[k] for k in reproduce._PART_FIELDS
    }
    with pytest.raises(SystemExit, match=r"no results for 107 of 108 jobs \(first: "):
        reproduce.load_parts(tmp_path)
