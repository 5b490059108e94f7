"""A die's edges and whether it fits one scanner field: shared by the cost evaluator (a searched
die, ``cost.reticle_fits``) and the preset check (a shipped die), in a module light enough for
the catalog to import without the evaluators."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["die_edges_mm", "reticle_fits"]


def die_edges_mm(area_mm2: ArrayLike, aspect_ratio: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(long edge, short edge) of a rectangular die; the aspect ratio may be given either way."""
    a = np.asarray(area_mm2, dtype=float)
    r = np.asarray(aspect_ratio, dtype=float)
    r = np.maximum(r, 1.0 / r)
    if r.ndim == 0 and r == 1.0:  # a square die (most): a x 1 and a / 1 are a, one root
        edge = np.sqrt(a)
        return edge, edge
    return np.sqrt(a * r), np.sqrt(a / r)


def reticle_fits(
    area_mm2: ArrayLike,
    aspect_ratio: ArrayLike,
    reticle_width_mm: ArrayLike = 26.0,
    reticle_height_mm: ArrayLike = 33.0,
) -> np.ndarray:
    """1.0 when the die, rotated its best way, fits in one scanner field, else 0.0."""
    long_mm, short_mm = die_edges_mm(area_mm2, aspect_ratio)
    w = np.asarray(reticle_width_mm, dtype=float)
    h = np.asarray(reticle_height_mm, dtype=float)
    field_long, field_short = np.maximum(w, h), np.minimum(w, h)
    # A hair of tolerance so a die of exactly the field size (858 mm2 at 33/26) fits.
    tol = 1e-9
    return ((long_mm <= field_long + tol) & (short_mm <= field_short + tol)).astype(float)
