"""Static PNG figures (matplotlib, no display needed) for papers and slides."""

from __future__ import annotations

import itertools
from pathlib import Path
from textwrap import fill

import matplotlib

matplotlib.use("Agg")  # headless: CI and servers have no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dse.inspect.study_view import (  # noqa: E402
    HYPERVOLUME_MEANING,
    StudyView,
    category,
    knee_index,
    param_ticks,
    param_values,
)
from dse.spec.atomic import atomic_path  # noqa: E402

# One look per kind of trial, distinct in colour AND marker (readable in greyscale), drawn in
# this order so the front ends on top: (colour, marker, size, filled, z-order, legend label).
LOOK = {
    "infeasible": ("#9e9e9e", "x", 14, True, 1, "infeasible (violates a constraint)"),
    "dominated": ("#6baed6", "o", 16, False, 2, "feasible, dominated"),
    "duplicate": ("#ff7f0e", "s", 36, False, 3, "duplicate of a front design"),
    "front": ("#d62728", "D", 28, True, 4, "feasible Pareto front"),
}


def _short(metric: str) -> str:
    return metric.split(".", 1)[-1]


def _window(values: np.ndarray) -> tuple[float, float]:
    lo, hi = float(np.nanmin(values)), float(np.nanmax(values))
    pad = (hi - lo) * 0.08 or abs(hi) * 0.02 or 1.0
    return lo - pad, hi + pad


#: The most searched parameters drawn one row each in ``front_by_parameter.png``.
MAX_PARAM_ROWS = 6
#: The most objectives a PNG draws (the spec's first; the HTML report shows them all): 6
#: objectives make 15 pairs, a figure ~80 inches wide; 20 would make 190 (~1,000 inches).
MAX_PNG_OBJECTIVES = 6


def _drawn(view: StudyView) -> tuple[list[int], str]:
    """The objectives a PNG draws, and the note its title carries when some are left out."""
    n = len(view.objectives)
    if n <= MAX_PNG_OBJECTIVES:
        return list(range(n)), ""
    return list(range(MAX_PNG_OBJECTIVES)), f" (the first {MAX_PNG_OBJECTIVES} of {n} objectives)"


def _axis_label(view: StudyView, metric: str, *, sep: str = " ") -> str:
    maximize = view.maximize[view.objectives.index(metric)]
    best = "higher is better" if maximize else "lower is better"
    return f"{_short(metric)} [{view.units.get(metric, '')}]{sep}({best})"


def _param_label(column: str) -> str:
    return f"{column.removeprefix('params.')} (searched)"


def _colour_front(ax, view: StudyView, i: int, j: int, column: str):  # noqa: ANN001, ANN202
    """The front's diamonds again, filled by the value of a searched parameter."""
    ticks = param_ticks(view, column)
    values = param_values(view.front, column, ticks)
    xi, yj = view.objectives[i], view.objectives[j]
    lo, hi = (np.nanmin(values), np.nanmax(values)) if values.size else (0.0, 1.0)
    return ax.scatter(
        view.front[xi], view.front[yj], c=values, cmap="viridis", vmin=lo, vmax=hi or lo + 1,
        marker="D", s=30, zorder=5, edgecolors=LOOK["front"][0], linewidths=0.9,
    )  # fmt: skip


def _panel(ax, view: StudyView, cats: np.ndarray, i: int, j: int, *, zoom: bool) -> None:  # noqa: ANN001
    xi, yj = view.objectives[i], view.objectives[j]
    for cat, (color, marker, size, filled, z, text) in LOOK.items():
        sel = view.trials[cats == cat]
        if sel.empty:
            continue
        # "x" is a line marker: its colour is the face colour; the others are outlined.
        colors = (
            {"c": color}
            if marker == "x"
            else {"facecolors": color if filled else "none", "edgecolors": color}
        )
        ax.scatter(
            sel[xi], sel[yj], marker=marker, s=size, zorder=z, alpha=0.9, linewidths=1.0,
            label=f"{text} ({len(sel)})", **colors,
        )  # fmt: skip
    knee = knee_index(view)
    if knee is not None:
        row = view.front.iloc[knee]
        ax.scatter(row[xi], row[yj], s=220, marker="*", c="k", zorder=6, label="knee")
        ax.annotate(
            f"knee: trial {int(row['number'])}", (row[xi], row[yj]), xytext=(12, 12),
            textcoords="offset points", fontsize=8, zorder=7,
            arrowprops={"arrowstyle": "-", "color": "k", "lw": 0.8},
            bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "0.6", "alpha": 0.9},
        )  # fmt: skip
    if zoom and len(view.front):
        ax.set_xlim(*_window(view.front[xi].to_numpy(dtype=float)))
        ax.set_ylim(*_window(view.front[yj].to_numpy(dtype=float)))
    ax.set_xlabel(_axis_label(view, xi))
    ax.set_ylabel(_axis_label(view, yj))
    ax.grid(alpha=0.3)


def pareto_pairs_png(view: StudyView, path: Path) -> Path:
    """One column per objective pair: all trials on top, the front zoomed in below; front on
    top of everything, knee starred and labelled, counts in the legend and the title. In the
    zoomed row the front is filled by the spec's first searched parameter (its colour bar on
    the right), so the question's axis is read off the trade-off."""
    drawn, note = _drawn(view)
    pairs = list(itertools.combinations(drawn, 2)) or [(0, 0)]
    fig, axes = plt.subplots(2, len(pairs), figsize=(5.2 * len(pairs) + 0.8, 9.0), squeeze=False)
    cats = category(view).to_numpy()
    colour_by = view.searched[0] if view.searched and len(view.front) else None
    shade = None
    for col, (i, j) in enumerate(pairs):
        _panel(axes[0][col], view, cats, i, j, zoom=False)
        _panel(axes[1][col], view, cats, i, j, zoom=True)
        if colour_by is not None:
            shade = _colour_front(axes[1][col], view, i, j, colour_by)
    axes[0][0].set_title("all trials", fontsize=9, loc="right")
    zoomed = "zoomed to the feasible front"
    if colour_by is not None:
        zoomed += f"; front filled by {colour_by.removeprefix('params.')}"
    axes[1][0].set_title(zoomed, fontsize=9, loc="right")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 5), fontsize=8)
    n_front = len(view.front)
    fig.suptitle(
        f"{view.name}: {len(view.trials)} trials; the feasible Pareto front is {n_front} "
        f"design{'s' if n_front != 1 else ''} (red diamonds){note}"
    )
    right = 1.0 - 0.9 / fig.get_figwidth()
    fig.tight_layout(rect=(0, 0.05, right, 1))
    if shade is not None and colour_by is not None:
        _colour_bar(fig, shade, colour_by, view, left=right + 0.1 / fig.get_figwidth())
    _save(fig, path)
    return path


def _colour_bar(fig, shade, column: str, view: StudyView, *, left: float) -> None:  # noqa: ANN001
    """A colour bar beside the zoomed row, labelled with the parameter (and its choices)."""
    cax = fig.add_axes((left, 0.1, 0.012, 0.36))
    bar = fig.colorbar(shade, cax=cax)
    bar.set_label(_param_label(column))
    ticks = param_ticks(view, column)
    if ticks is not None:
        bar.set_ticks(range(len(ticks)), labels=ticks)


def front_by_parameter_png(view: StudyView, path: Path) -> Path | None:
    """Each objective against each searched parameter (spec order, one row each): the feasible
    trials, the front on top and the knee starred, so the value of every searched parameter
    on the front (the question's axis among them) is read directly."""
    rows = view.searched[:MAX_PARAM_ROWS]
    feas = view.feasible
    if not rows or feas.empty:
        return None
    drawn, note = _drawn(view)
    metrics = [view.objectives[i] for i in drawn]
    n_obj = len(metrics)
    fig, axes = plt.subplots(
        len(rows), n_obj, figsize=(4.6 * n_obj, 3.4 * len(rows)), squeeze=False
    )
    knee = knee_index(view)
    for r, column in enumerate(rows):
        ticks = param_ticks(view, column)
        for c, metric in enumerate(metrics):
            ax = axes[r][c]
            for frame, kind in ((feas, "dominated"), (view.front, "front")):
                color, marker, size, filled, z, text = LOOK[kind]
                ax.scatter(
                    param_values(frame, column, ticks), frame[metric], marker=marker, s=size,
                    zorder=z, linewidths=1.0, label=text,
                    facecolors=color if filled else "none", edgecolors=color,
                )  # fmt: skip
            if knee is not None:
                row = view.front.iloc[[knee]]
                ax.scatter(
                    param_values(row, column, ticks), row[metric], s=200, marker="*", c="k",
                    zorder=6, label="knee",
                )  # fmt: skip
            if ticks is not None:
                ax.set_xticks(range(len(ticks)), labels=ticks)
            elif view.log_scale(column):
                ax.set_xscale("log")
            ax.set_xlabel(_param_label(column))
            ax.set_ylabel(_axis_label(view, metric, sep="\n"))
            ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8)
    fig.suptitle(
        f"{view.name}: each objective against each searched parameter "
        f"({len(feas)} feasible trials; front {len(view.front)}, red){note}"
    )
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    _save(fig, path, dpi=120)
    return path


def hypervolume_png(hist: pd.DataFrame, view: StudyView, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(hist["number"], hist["hypervolume"], marker=".", color="#1f77b4")
    ax.set_xlabel("trial number")
    ax.set_ylabel("normalised hypervolume")
    ax.set_title(
        f"{view.name}: hypervolume of the feasible front after each trial\n"
        f"({fill(HYPERVOLUME_MEANING, 72)})",
        fontsize=10,
    )
    ax.grid(alpha=0.3)
    fig.tight_layout()
    _save(fig, path)
    return path


def importances_png(imps: dict[str, dict[str, float] | str], path: Path) -> Path | None:
    ok = {k: v for k, v in imps.items() if isinstance(v, dict)}
    if not ok:
        return None
    params = sorted({p for v in ok.values() for p in v})
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(params), 3.8))
    width = 0.8 / len(ok)
    x = np.arange(len(params))
    for k, (obj, imp) in enumerate(ok.items()):
        ax.bar(x + k * width, [imp.get(p, 0.0) for p in params], width, label=_short(obj))
    ax.set_xticks(x + width * (len(ok) - 1) / 2, params, rotation=20)
    ax.set_ylabel("importance")
    ax.set_title("Parameter importances per objective (share of the objective's variance)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path)
    return path


def _save(fig: plt.Figure, path: Path, *, dpi: int = 150) -> None:
    """A figure written whole, replacing (never writing through) a symlink at ``path``, then
    closed."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, format="png")
    plt.close(fig)


def write_pngs(
    view: StudyView,
    directory: Path,
    *,
    hist: pd.DataFrame,
    imps: dict[str, dict[str, float] | str],
) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = [
        pareto_pairs_png(view, directory / "pareto_pairs.png"),
        front_by_parameter_png(view, directory / "front_by_parameter.png"),
        hypervolume_png(hist, view, directory / "hypervolume.png") if len(hist) else None,
        importances_png(imps, directory / "importances.png"),
    ]
    return [p for p in written if p is not None]
