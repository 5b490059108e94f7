"""The tests of tests/dse/inspect/test_report_png.py that run the ``dse`` command."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
import yaml

from dse.inspect import report_png
from dse.inspect.param_figures import parameter_figure
from dse.inspect.report import front_figure
from dse.inspect.report_png import front_by_parameter_png, pareto_pairs_png
from dse.inspect.study_view import load_view
from tests.cli.test_report_compare import assert_png_nontrivial, small_spec
from tests.conftest import SPACES, run_dse


@pytest.mark.slow
def test_figures_show_the_searched_parameters_in_the_specs_order(
    studies_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """litegpu.yaml searches die_area_mm2 first: the figures show it (the front filled by it,
    the objectives against it) though the engine names no parameter."""
    spec = small_spec(tmp_path, name="in_order")
    data = yaml.safe_load(spec.read_text())
    data["space"] = yaml.safe_load((SPACES / "litegpu.yaml").read_text())["space"]
    spec.write_text(yaml.safe_dump(data, sort_keys=False))  # the spec's own order
    assert run_dse("run", str(spec), "--no-progress").returncode == 0
    view = load_view("in_order")
    assert view.searched == [
        "params.die_area_mm2",
        "params.hbm_stacks_per_die",
        "params.optics_per_link",
        "params.cluster_size",
    ]
    saved: list[plt.Figure] = []
    monkeypatch.setattr(report_png.plt, "close", lambda fig: saved.append(fig))
    pareto_pairs_png(view, tmp_path / "pairs.png")
    bars = [ax for ax in saved[0].axes if ax.get_ylabel() == "die_area_mm2 (searched)"]
    assert len(bars) == 1  # the colour bar of the front's fill
    shade = [c for ax in saved[0].axes for c in ax.collections if c.get_array() is not None]
    filled = np.asarray(shade[0].get_array(), dtype=float)
    assert np.allclose(np.sort(filled), np.sort(view.front["params.die_area_mm2"]), rtol=1e-12)

    png = front_by_parameter_png(view, tmp_path / "by_param.png")
    assert png is not None
    assert_png_nontrivial(png, min_w=1000, min_h=1000)
    fig = saved[1]
    n_obj = len(view.objectives)
    assert len(fig.axes) == 4 * n_obj
    rows = [fig.axes[r * n_obj].get_xlabel() for r in range(4)]
    assert rows == [f"{p.removeprefix('params.')} (searched)" for p in view.searched]
    assert fig.axes[3 * n_obj].get_xscale() == "log"  # cluster_size is searched with log: true
    assert all(ax.get_ylabel() for ax in fig.axes)

    front = front_figure(view)
    (trace,) = [t for t in front.data if t.name.startswith("front")]
    assert trace.marker.colorbar.title.text == "die_area_mm2"
    assert np.allclose(trace.marker.color, view.front["params.die_area_mm2"], rtol=1e-12)
    menu = front.layout.updatemenus[0]
    assert [b.label for b in menu.buttons] == [
        f"front filled by {p.removeprefix('params.')}" for p in view.searched
    ]
    assert [d.label.split("<br>")[0] for d in trace.dimensions] == [
        m.split(".", 1)[1] for m in view.objectives
    ]

    by_param = parameter_figure(view)
    assert by_param is not None
    assert by_param.layout.xaxis.title.text == "die_area_mm2"
    titles = [
        by_param.layout[f"yaxis{i if i > 1 else ''}"].title.text for i in range(1, n_obj + 1)
    ]
    assert [t.split("<br>")[0] for t in titles] == [m.split(".", 1)[1] for m in view.objectives]
