"""Robust fronts beside the nominal one in ``dse report``.

``dse run SPEC --robust K --statistic S`` records its study as ``<study>-robust-<S>-k<K>``
(``dse.model.robust.robust_study_name``). The nominal study's report finds those siblings and
draws, for every pair of objectives, the nominal front at its nominal values next to the robust
front at its robust statistic, and the robust designs at their nominal values: the distance
between the last two is what hedging against the uncertain assumptions costs.
"""

from __future__ import annotations

import html
import itertools

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dse.inspect.formatting import html_table
from dse.inspect.study_view import StudyView, load_view
from dse.search.spec_lock import LOCK_FILE
from dse.search.storage import studies_root

NOMINAL_PREFIX = "nominal."


def robust_siblings(name: str) -> list[str]:
    """Recorded robust studies of the nominal study ``name``."""
    root = studies_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.glob(f"{name}-robust-*") if (p / LOCK_FILE).is_file())


def robust_figure(nominal: StudyView, robust: StudyView) -> go.Figure:
    objs = nominal.objectives
    pairs = list(itertools.combinations(range(len(objs)), 2)) or [(0, 0)]
    fig = make_subplots(rows=1, cols=len(pairs), horizontal_spacing=0.08)
    front = robust.front
    nominal_cols = [NOMINAL_PREFIX + o for o in objs]
    has_nominal = all(c in front.columns for c in nominal_cols)
    for col, (i, j) in enumerate(pairs, start=1):
        x, y = objs[i], objs[j]
        traces = [
            ("nominal front", nominal.front[x], nominal.front[y], "#d62728", "diamond"),
            ("robust front (robust statistic)", front[x], front[y], "#1f77b4", "square"),
        ]
        if has_nominal:
            traces.append(
                (
                    "robust front (nominal values)",
                    front[NOMINAL_PREFIX + x],
                    front[NOMINAL_PREFIX + y],
                    "#1f77b4",
                    "square-open",
                )
            )
        for label, xs, ys, color, symbol in traces:
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="markers",
                    name=label,
                    legendgroup=label,
                    showlegend=col == 1,
                    marker={"color": color, "symbol": symbol, "size": 8},
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text=x, row=1, col=col)
        fig.update_yaxes(title_text=y, row=1, col=col)
    fig.update_layout(
        title=f"Nominal front of {nominal.name} and robust front of {robust.name}",
        height=450,
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


def robust_section(nominal: StudyView, robust: StudyView, *, div_id: str) -> str:
    """HTML: the figure and the robust front table (robust and nominal objective values)."""
    stat = robust.lock.get("robust", {}) if isinstance(robust.lock.get("robust"), dict) else {}
    objs = nominal.objectives
    cols = ["number", *objs, *(NOMINAL_PREFIX + o for o in objs), *robust.params]
    table = robust.front[[c for c in cols if c in robust.front.columns]]
    div = robust_figure(nominal, robust).to_html(
        full_html=False, include_plotlyjs=False, div_id=div_id
    )
    return (
        f"<h2>Robust front: {html.escape(robust.name)}</h2>"
        f"<p>{len(robust.front)} robust front designs of {len(robust.trials)} trials"
        + (
            f"; {stat.get('k')} sampled scenarios, statistic "
            f"{html.escape(str(stat.get('statistic')))}, seed {stat.get('seed')}"
            if stat
            else ""
        )
        + ". Objectives of the robust study are the robust statistic over the sampled "
        "assumptions; <code>nominal.*</code> columns are the same designs under the nominal "
        "assumptions.</p>"
        f"<div class='figure'>{div}</div>" + html_table(table)
    )


def robust_sections(name: str, nominal: StudyView) -> list[str]:
    """A section per robust sibling, each read from the storage recorded in its own lock."""
    return [
        robust_section(nominal, load_view(sibling), div_id=f"robust{k}")
        for k, sibling in enumerate(robust_siblings(name))
    ]


__all__ = ["robust_figure", "robust_section", "robust_sections", "robust_siblings"]
