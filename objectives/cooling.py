"""Cooling as a design choice with its own cost and power, not only a heat-flux limit.

``cooling`` (air | liquid) already bounds each die's clock through its W/mm2 and W/package
limits (``objectives.perf.hardware``). Here are the other two things the choice changes, per
kW so that every die size pays alike:

- what it costs: the cold plates, manifolds and CDU share of a liquid-cooled GPU per kW of its
  peak power (``cooling_<kind>_usd_per_gpu_kw``); an air-cooled server's heat sinks and fans
  are in the host's per-kW cost already;
- what it draws: liquid cooling takes the server fans out of the IT power and lowers the
  facility overhead (``cooling_<kind>_it_power_factor``, ``cooling_<kind>_pue_factor``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from objectives._evaluator import tech
from objectives.choices import checked
from objectives.params import COOLING


def _per_kind(d: Mapping[str, Any], field: str) -> Any:
    """``technology.cooling_<kind>_<field>`` of every design's cooling kind."""
    kind = checked(d.get("cooling", "air"), COOLING, "cooling", "cooling")
    air, liquid = tech(d, f"cooling_air_{field}"), tech(d, f"cooling_liquid_{field}")
    if kind.ndim == 0:
        return liquid if str(kind) == "liquid" else air
    return np.where(kind == "liquid", liquid, air)


def cooling_usd_per_gpu(d: Mapping[str, Any], package_power_w: ArrayLike) -> np.ndarray:
    """Cooling hardware of one GPU at list price: its peak power x the kind's USD per kW."""
    kw = np.asarray(package_power_w, float) / 1000.0
    return kw * np.asarray(_per_kind(d, "usd_per_gpu_kw"), float)


def it_power_factor(d: Mapping[str, Any]) -> Any:
    """IT power of a design relative to the same design air-cooled (server fans)."""
    return _per_kind(d, "it_power_factor")


def pue_factor(d: Mapping[str, Any]) -> Any:
    """Facility overhead (PUE) relative to technology.pue, which is for air cooling."""
    return _per_kind(d, "pue_factor")
