"""Plotly pieces that show the searched parameters (``dse report`` and ``dse dashboard``): the
front filled by a searched parameter with a drop-down for any other, and each objective drawn
against a searched parameter. A spec lists its question first, so the first searched
parameter is the default (the question's axis in the shipped example specs); the engine names
none.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dse.inspect.study_view import StudyView, param_ticks, param_values

# One look per trial category, shared by plotly and matplotlib.
STYLE = {
    # as the PNGs (dse.inspect.report_png.LOOK): one colour and marker per kind of trial
    "infeasible": {"color": "#9e9e9e", "symbol": "x", "mpl": "x", "size": 5},
    "dominated": {"color": "#6baed6", "symbol": "circle-open", "mpl": "o", "size": 5},
    "duplicate": {"color": "#ff7f0e", "symbol": "square-open", "mpl": "s", "size": 6},
    "front": {"color": "#d62728", "symbol": "diamond", "mpl": "D", "size": 8},
}


def label(view: StudyView, metric: str) -> str:
    unit = view.units.get(metric, "")
    dirn = "max" if view.maximize[view.objectives.index(metric)] else "min"
    return f"{metric} [{unit}] ({dirn})" if unit else f"{metric} ({dirn})"


def short_label(view: StudyView, metric: str) -> str:
    """``f1`` over ``[unit]`` for ``zdt1.f1``: an axis title that fits a scatter-matrix cell
    (the dashboard's card is 450 px high)."""
    unit = view.units.get(metric, "")
    short = metric.split(".", 1)[-1]
    return f"{short}<br>[{unit}]" if unit else short


def colour_scale(view: StudyView, column: str) -> dict[str, Any]:
    """Marker settings that fill the front by a searched parameter, with its colour bar."""
    ticks = param_ticks(view, column)
    bar: dict[str, Any] = {"title": {"text": column.removeprefix("params.")}, "len": 0.6}
    if ticks is not None:
        bar.update(tickvals=list(range(len(ticks))), ticktext=ticks)
    return {
        "color": param_values(view.front, column, ticks),
        "colorscale": "Viridis",
        "showscale": True,
        "colorbar": bar,
        "line": {"color": STYLE["front"]["color"], "width": 1},
    }


def colour_menu(view: StudyView, trace: int) -> list[dict[str, Any]]:
    """A drop-down that fills the front (trace ``trace``) by any searched parameter."""
    buttons = []
    for column in view.searched:
        scale = colour_scale(view, column)
        buttons.append(
            {
                "label": f"front filled by {column.removeprefix('params.')}",
                "method": "restyle",
                "args": [
                    {"marker.color": [scale["color"]], "marker.colorbar": [scale["colorbar"]]},
                    [trace],
                ],
            }
        )
    return _menu(buttons, y=1.02)


def _menu(buttons: list[dict[str, Any]], *, y: float) -> list[dict[str, Any]]:
    """One drop-down at the figure's top right."""
    return [{"buttons": buttons, "x": 1.0, "xanchor": "right", "y": y, "yanchor": "bottom"}]


def parameter_figure(view: StudyView, *, height: int = 420) -> go.Figure | None:
    """Each objective (one panel each) against a searched parameter, the spec's first
    (a drop-down picks another): feasible trials, the front on top."""
    feas = view.feasible
    if not view.searched or feas.empty:
        return None
    n_obj = len(view.objectives)
    # Room for each panel's axis title, within plotly's limit of 1 / (cols - 1) (20 objectives).
    fig = make_subplots(rows=1, cols=n_obj, horizontal_spacing=min(0.13, 0.5 / max(n_obj - 1, 1)))
    parts = [(feas, "dominated", "feasible"), (view.front, "front", "front")]
    for c, metric in enumerate(view.objectives, start=1):
        for frame, kind, name in parts:
            st = STYLE[kind]
            fig.add_trace(
                go.Scatter(
                    x=param_values(frame, view.searched[0], param_ticks(view, view.searched[0])),
                    y=frame[metric].to_numpy(dtype=float),
                    mode="markers",
                    name=f"{name} ({len(frame)})",
                    legendgroup=kind,
                    showlegend=c == 1,
                    text=[f"trial {n}" for n in frame["number"]],
                    marker={"color": st["color"], "symbol": st["symbol"], "size": st["size"]},
                ),
                row=1,
                col=c,
            )
        fig.update_yaxes(title_text=short_label(view, metric), row=1, col=c)
    buttons = []
    for column in view.searched:
        ticks = param_ticks(view, column)
        xs = [param_values(frame, column, ticks) for _ in view.objectives for frame, _, _ in parts]
        axes: dict[str, Any] = {}
        for c in range(1, n_obj + 1):
            key = "xaxis" if c == 1 else f"xaxis{c}"
            axes[f"{key}.title.text"] = column.removeprefix("params.")
            axes[f"{key}.type"] = "log" if view.log_scale(column) and not ticks else "linear"
            axes[f"{key}.tickvals"] = list(range(len(ticks))) if ticks else None
            axes[f"{key}.ticktext"] = ticks
        buttons.append(
            {
                "label": f"x axis: {column.removeprefix('params.')}",
                "method": "update",
                "args": [{"x": xs}, axes],
            }
        )
    fig.update_layout(buttons[0]["args"][1])
    fig.update_layout(
        title=f"Objectives of {view.name} against a searched parameter",
        height=height,
        margin={"t": 110},
        font={"size": 11},
        legend={"orientation": "h", "y": -0.2, "yanchor": "top"},
        updatemenus=_menu(buttons, y=1.04),
    )
    return fig
