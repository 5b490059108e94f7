"""Short human number formatting, shared by the terminal tables, notes and reports."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["fmt"]


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
