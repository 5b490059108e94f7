"""Static PNG figures (matplotlib, no display needed) for papers and slides."""

from __future__ import annotations

import itertools
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: CI and servers have no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dse.inspect.study_view import StudyView, category, knee_index  # noqa: E402

# Colours and markers match the plotly figures of the HTML report.
LOOK = {
    "infeasible": ("#b0b0b0", "x", 14),
    "dominated": ("#6baed6", "o", 14),
    "duplicate": ("#6baed6", "o", 14),
    "front": ("#d62728", "D", 30),
}


def _short(metric: str) -> str:
    return metric.split(".", 1)[-1]


def pareto_pairs_png(view: StudyView, path: Path) -> Path:
    """One panel per objective pair; the knee is circled."""
    pairs = list(itertools.combinations(range(len(view.objectives)), 2)) or [(0, 0)]
    fig, axes = plt.subplots(1, len(pairs), figsize=(4.6 * len(pairs), 4.2), squeeze=False)
    cats = category(view).to_numpy()
    knee = knee_index(view)
    for ax, (i, j) in zip(axes[0], pairs, strict=True):
        xi, yj = view.objectives[i], view.objectives[j]
        for cat, (color, marker, size) in LOOK.items():
            sel = view.trials[cats == cat]
            if sel.empty:
                continue
            ax.scatter(sel[xi], sel[yj], c=color, marker=marker, s=size, label=cat, alpha=0.85)
        if knee is not None:
            row = view.front.iloc[knee]
            ax.scatter(row[xi], row[yj], s=160, facecolors="none", edgecolors="k", label="knee")
        ax.set_xlabel(f"{_short(xi)} [{view.units.get(xi, '')}]")
        ax.set_ylabel(f"{_short(yj)} [{view.units.get(yj, '')}]")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"{view.name}: feasible Pareto front ({len(view.front)} trials)")
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path


def hypervolume_png(hist: pd.DataFrame, view: StudyView, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(hist["number"], hist["hypervolume"], marker=".", color="#1f77b4")
    ax.set_xlabel("trial number")
    ax.set_ylabel("normalised hypervolume")
    ax.set_title(f"{view.name}: hypervolume of the feasible front")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
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
    ax.set_title("Parameter importances per objective")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path


def write_pngs(
    view: StudyView,
    directory: Path,
    *,
    hist: pd.DataFrame,
    imps: dict[str, dict[str, float] | str],
) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    out = [pareto_pairs_png(view, directory / "pareto_pairs.png")]
    if len(hist):
        out.append(hypervolume_png(hist, view, directory / "hypervolume.png"))
    p = importances_png(imps, directory / "importances.png")
    if p is not None:
        out.append(p)
    return out
