"""Short human number formatting, shared by the terminal tables, notes and reports."""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["fmt", "html_table"]


def fmt(v: Any) -> str:
    """Four significant digits, thousands separators, scientific only when very big or small."""
    if isinstance(v, bool | np.bool_):
        return "yes" if v else ""
    if isinstance(v, float | np.floating):
        v = float(v)
        if v == 0 or not math.isfinite(v):
            return str(v)
        a = abs(v)
        if a >= 1e6 or a < 1e-3:
            return f"{v:.4g}"
        return f"{v:,.4g}" if a >= 1000 else f"{v:.4g}"
    if isinstance(v, np.integer):
        return str(int(v))
    return str(v)


def html_table(table: pd.DataFrame, *, knee_col: str | None = None) -> str:
    """``table`` as HTML (``params.`` dropped from the headings); with ``knee_col``, the row
    whose flag is set is marked ``class='knee'``."""
    head = "".join(f"<th>{html.escape(str(c).removeprefix('params.'))}</th>" for c in table)
    rows = []
    for _, r in table.iterrows():
        cells = "".join(f"<td>{html.escape(fmt(v))}</td>" for v in r)
        knee = " class='knee'" if knee_col and r[knee_col] else ""
        rows.append(f"<tr{knee}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
