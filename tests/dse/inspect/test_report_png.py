"""The static figures read at a glance: every kind of trial has its own colour and marker, the
front is drawn on top, and the zoomed row frames the front (issue 17)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from dse.inspect import report_png
from dse.inspect.report_png import LOOK, pareto_pairs_png
from dse.inspect.study_view import load_view
from tests.cli.test_report_compare import assert_png_nontrivial, run_small


def test_each_kind_of_trial_has_its_own_colour_and_marker() -> None:
    kinds = ["infeasible", "dominated", "duplicate", "front"]
    assert sorted(LOOK) == sorted(kinds)
    assert len({v[0] for v in LOOK.values()}) == len(kinds)  # colours
    assert len({v[1] for v in LOOK.values()}) == len(kinds)  # markers
    assert max(LOOK.values(), key=lambda v: v[4]) is LOOK["front"]  # z-order: front on top


@pytest.mark.slow
def test_pareto_pairs_zooms_on_the_front_and_counts_in_titles(
    studies_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = load_view(run_small(tmp_path))
    saved: list[plt.Figure] = []
    monkeypatch.setattr(report_png.plt, "close", lambda fig: saved.append(fig))
    png = pareto_pairs_png(view, tmp_path / "pairs.png")
    assert_png_nontrivial(png, min_w=1000, min_h=1000)
    fig = saved[0]
    assert f"{len(view.trials)} trials" in fig._suptitle.get_text()
    assert f"front is {len(view.front)} design" in fig._suptitle.get_text()
    panels = [ax for ax in fig.axes if ax.get_xlabel()]  # the colour bar has no x label
    top, bottom = panels[0], panels[len(panels) // 2]
    x, y = view.objectives[0], view.objectives[1]
    lo, hi = bottom.get_xlim()
    assert lo <= view.front[x].min() and view.front[x].max() <= hi
    assert (hi - lo) <= (top.get_xlim()[1] - top.get_xlim()[0]) + 1e-12
    assert bottom.get_ylim()[0] <= view.front[y].min()
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(t.startswith(f"feasible Pareto front ({len(view.front)})") for t in labels)
    assert "knee" in labels
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any(t.startswith("knee: trial ") for t in texts)
