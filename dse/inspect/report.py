"""``dse report STUDY``: one self-contained HTML file (plotly.js inline, works offline) and
static PNGs (matplotlib) for papers and slides, under ``studies/<study>/``.

Every figure is built from ``dse.inspect.study_view`` so the report's front is the one
``dse pareto`` prints; definitions of the reference point, hypervolume and knee live there.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import yaml
from plotly.offline import get_plotlyjs

from dse.errors import DseError
from dse.inspect.formatting import fmt, html_table
from dse.inspect.global_sensitivity import global_html
from dse.inspect.param_figures import (
    STYLE,
    colour_menu,
    colour_scale,
    label,
    parameter_figure,
    short_label,
)
from dse.inspect.report_png import write_pngs
from dse.inspect.report_robust import robust_sections
from dse.inspect.study_view import (
    HYPERVOLUME_MEANING,
    StudyView,
    category,
    front_table,
    knee_index,
    load_view,
    normalised_hypervolume_history,
    param_importances,
    view_reference_point,
)
from dse.search.storage import existing_study_dir
from dse.spec.atomic import write_text_atomic

REPORT_FILE = "report.html"
MAX_TITLE_NUMBERS = 20  # front trial numbers listed in the figure title up to this many
FIGURES_DIR = "figures"


def front_figure(view: StudyView, *, height: int = 650) -> go.Figure:
    """Scatter matrix of all objective pairs: infeasible, dominated and front trials apart;
    the front filled by the spec's first searched parameter (a drop-down picks another)."""
    if len(view.objectives) == 1:
        return _front_1d(view)
    df = view.trials
    cats = category(view)
    fig = go.Figure()
    dims_of = view.objectives
    colour_by = view.searched[0] if view.searched and len(view.front) else None
    front_trace = None
    for cat, st in STYLE.items():
        sel = df[(cats == cat).to_numpy()]
        if sel.empty:
            continue
        pts = sel[dims_of].to_numpy(dtype=float)
        marker: dict[str, Any] = {
            "color": st["color"],
            "symbol": st["symbol"],
            "size": st["size"],
        }
        if cat == "front" and colour_by is not None:
            marker.update(colour_scale(view, colour_by))
            front_trace = len(fig.data)
        fig.add_trace(
            go.Splom(
                name=f"{cat} ({len(sel)})",
                dimensions=[
                    {"label": short_label(view, m), "values": pts[:, i]}
                    for i, m in enumerate(dims_of)
                ],
                text=[f"trial {n}" for n in sel["number"]],
                customdata=sel["number"].to_numpy(),
                marker=marker,
                diagonal_visible=False,
                showupperhalf=False,
            )
        )
    if front_trace is not None:
        fig.update_layout(updatemenus=colour_menu(view, front_trace))
    knee = knee_index(view)
    if knee is not None and len(dims_of) == 2:
        row = view.front.iloc[knee]
        fig.add_annotation(x=row[dims_of[0]], y=row[dims_of[1]], text="knee")
    numbers = [str(int(n)) for n in view.front["number"]]
    # Trial numbers in lines of 10 so the title fits the dashboard's half-width card.
    lines = [", ".join(numbers[i : i + 10]) for i in range(0, len(numbers), 10)]
    if len(numbers) > MAX_TITLE_NUMBERS:
        lines = []
    listed = ":<br>" + ",<br>".join(lines) if lines else ""
    fig.update_layout(
        title={"text": f"Feasible Pareto front of {view.name}, {len(numbers)} trials{listed}"},
        height=height,
        margin={"l": 70, "r": 20, "t": 95 + 18 * len(lines), "b": 110},
        legend={"orientation": "h", "y": -0.3, "yanchor": "top"},
        dragmode="select",
    )
    return fig


def _front_1d(view: StudyView) -> go.Figure:
    df = view.trials
    cats = category(view)
    fig = go.Figure()
    for cat, st in STYLE.items():
        sel = df[(cats == cat).to_numpy()]
        fig.add_trace(
            go.Scatter(
                x=sel["number"],
                y=sel[view.objectives[0]],
                mode="markers",
                name=cat,
                marker={"color": st["color"], "symbol": st["symbol"]},
            )
        )
    fig.update_layout(title=f"Best feasible trials of {view.name}", xaxis_title="trial")
    return fig


def parallel_figure(view: StudyView) -> go.Figure:
    """Parallel coordinates of the front: parameters then objectives, coloured by the first."""
    front = view.front
    dims = []
    for c in [*view.params, *view.objectives]:
        vals = front[c]
        if not pd.api.types.is_numeric_dtype(vals):
            codes, uniques = pd.factorize(vals.astype(str))
            dims.append(
                {
                    "label": c.removeprefix("params."),
                    "values": codes,
                    "tickvals": list(range(len(uniques))),
                    "ticktext": list(uniques),
                }
            )
        else:
            dims.append({"label": c.removeprefix("params."), "values": vals.to_numpy(float)})
    color: Any = front[view.objectives[0]].to_numpy(float) if len(front) else []
    fig = go.Figure(
        go.Parcoords(
            dimensions=dims,
            line={"color": color, "colorscale": "Viridis", "showscale": True},
        )
    )
    fig.update_layout(title=f"Pareto front of {view.name}: parameters and objectives", height=450)
    return fig


def hypervolume_figure(hist: pd.DataFrame, view: StudyView) -> go.Figure:
    fig = go.Figure(
        go.Scatter(x=hist["number"], y=hist["hypervolume"], mode="lines+markers", name="HV")
    )
    fig.update_layout(
        title=f"Hypervolume of the feasible front after each trial<br>({HYPERVOLUME_MEANING})",
        xaxis_title="trial number",
        yaxis_title="normalised hypervolume",
        height=400,
    )
    return fig


def importance_figure(imps: dict[str, dict[str, float] | str]) -> go.Figure | None:
    ok = {k: v for k, v in imps.items() if isinstance(v, dict)}
    if not ok:
        return None
    fig = go.Figure()
    for obj, imp in ok.items():
        fig.add_trace(go.Bar(name=obj, x=list(imp.keys()), y=list(imp.values())))
    fig.update_layout(
        title="Parameter importances per objective (PED-ANOVA, feasible complete trials)",
        barmode="group",
        yaxis_title="importance",
        height=400,
    )
    return fig


@dataclass
class ReportResult:
    html: Path
    figures: list[Path]


CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px;color:#222}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;
text-align:right}th{background:#f3f3f3}tr.knee{background:#ffe9a8;font-weight:bold}
pre{background:#f7f7f7;padding:1em;overflow:auto;max-height:40em;font-size:12px}
.figure{margin:1em 0}
"""


def _check_outputs(directory: Path) -> None:
    """The report's figures folder must be a folder (or absent) before the report is made:
    otherwise it would fail after ``report.html`` was written, leaving half a report."""
    figures = directory / FIGURES_DIR
    if figures.is_symlink() or (figures.exists() and not figures.is_dir()):
        kind = "a link" if figures.is_symlink() else "not a folder"
        raise DseError(
            f"{figures} is {kind}; dse report writes its PNG figures there: move it away, then "
            "run the same command again"
        )


def write_report(
    name: str, *, storage: str | None = None, on_stage: Callable[[str], None] | None = None
) -> ReportResult:
    """Write ``report.html`` and ``figures/*.png`` for a recorded study; ``on_stage`` is told
    each stage as it starts (a long report's progress)."""
    stage = on_stage or (lambda _text: None)
    directory = existing_study_dir(name)
    _check_outputs(directory)  # before anything is read or written
    stage("reading the study")
    view = load_view(name, storage=storage)
    stage(f"{len(view.trials)} trials read; importances and the HTML figures")
    hist = normalised_hypervolume_history(view)
    imps = param_importances(view)
    ref, ref_src = view_reference_point(view)
    table = front_table(view)
    figs: list[tuple[str, go.Figure | None]] = [
        ("Pareto scatter matrix", front_figure(view)),
        ("Objectives against the searched parameters", parameter_figure(view)),
        ("Parallel coordinates of the front", parallel_figure(view) if len(view.front) else None),
        ("Hypervolume history", hypervolume_figure(hist, view) if len(hist) else None),
        ("Parameter importances", importance_figure(imps)),
    ]
    counts = category(view).value_counts().to_dict()
    parts = [
        f"<h1>Study {html.escape(name)}</h1>",
        f"<p>{html.escape(str(view.lock.get('description', '')))}</p>",
        "<p>"
        + ", ".join(f"{html.escape(str(k))}: {v}" for k, v in sorted(counts.items()))
        + f"; {len(view.trials)} trials in total. Storage: <code>{html.escape(view.url)}"
        "</code></p>",
        "<h2>Objectives</h2><ul>"
        + "".join(
            f"<li>{html.escape(label(view, o))}; hypervolume reference {fmt(r)} ({s})</li>"
            for o, r, s in zip(view.objectives, ref, ref_src, strict=True)
        )
        + "</ul>",
    ]
    if len(hist):
        parts.append(
            f"<p>Final normalised hypervolume: <b>{hist['hypervolume'].iloc[-1]:.4f}</b> "
            f"({HYPERVOLUME_MEANING})</p>"
        )
    for i, (title, fig) in enumerate(figs):
        parts.append(f"<h2>{html.escape(title)}</h2>")
        if fig is None:
            parts.append("<p>Not enough data for this figure.</p>")
            continue
        div = fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"fig{i}")
        parts.append(f"<div class='figure'>{div}</div>")
    why = {k: v for k, v in imps.items() if isinstance(v, str)}
    for k, v in why.items():
        parts.append(f"<p>{html.escape(k)}: {html.escape(v)}</p>")
    parts.append(
        f"<h2 id='front'>Feasible Pareto front ({len(table)} trials)</h2>"
        "<p>The highlighted row is the knee: the front point closest to the ideal point after "
        "min-max normalising each objective over the front.</p>"
        + html_table(table, knee_col="knee")
    )
    parts.extend(robust_sections(name, view))
    parts.extend(global_html(name))
    assumptions = yaml.safe_dump(view.lock, sort_keys=False)
    parts.append(
        f"<h2>Resolved assumptions (spec.lock.yaml)</h2><pre>{html.escape(assumptions)}</pre>"
    )
    doc = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>dse report: {html.escape(name)}</title><style>{CSS}</style>"
        f"<script type='text/javascript'>{get_plotlyjs()}</script></head><body>"
        + "\n".join(parts)
        + "</body></html>"
    )
    out = directory / REPORT_FILE
    write_text_atomic(out, doc)  # replaces a symlink there, never writes through it
    stage(f"{REPORT_FILE} written; the PNG figures")
    pngs = write_pngs(view, directory / FIGURES_DIR, hist=hist, imps=imps)
    return ReportResult(html=out, figures=pngs)
