"""A GPU package as data: what its description says about HBM, packaging, base dies and links.

A package is described by design parameters (objectives/params.py): compute dies
(``dies_per_gpu`` x ``die_area_mm2``), optional base/IO dies the compute dies are 3D-stacked on
(``base_dies_per_gpu`` x ``base_die_area_mm2``, SoIC), HBM stacks of a declared generation
(``hbm_generation``), die-to-die links (``d2d_tbps``), the 2.5D packaging technology
(``packaging``) and the scale-up links (co-packaged optical engines follow from them). The
constants of each named technology live in objectives/presets/technology/package.yaml. Cost
(objectives/cost), power, compute and shoreline (objectives/perf/hardware.py) all read the
package through this module, so today's single-die GPU on CoWoS-S and a two-die Blackwell on
CoWoS-L, or eight XCDs on four IODs, are the same code.

:class:`Package` is the package of every design of a batch, read from the design once
(``Package.of(design)``): the models take their parts from it instead of re-reading the flat
mapping. The free functions below it are its parts, each for one question. Everything
broadcasts over designs; a generation or packaging that is the same for the whole batch is
looked up once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from objectives._evaluator import one_value, tech, value
from objectives.choices import checked
from objectives.errors import ContextError
from objectives.params import (
    HBM_AUTO_ORDER,
    HBM_GENERATIONS,
    HBM_KEY_PREFIX,
    PACKAGINGS,
    PARAMS,
)

#: Key prefix of each HBM generation's constants in the technology table.
HBM_PREFIX = HBM_KEY_PREFIX
GENERATIONS = tuple(HBM_PREFIX)  # index = generation code
#: What ``auto`` picks from, in order (objectives.params.HBM_AUTO_ORDER).
AUTO_ORDER = HBM_AUTO_ORDER
HBM_FIELDS = (
    "usd_per_gb",
    "usd_per_stack",
    "max_tbps_per_stack",
    "max_gb_per_stack",
    "interface_bits",
    "footprint_mm2",
    "beachfront_mm",
)
COWOS_S, COWOS_L, ORGANIC = range(3)


def _codes(raw: Any, choices: tuple[str, ...], path: str, what: str) -> np.ndarray:
    """Index of each name in ``choices`` (0-d when one name serves the batch)."""
    arr = checked(raw, choices, path, what)
    if arr.ndim == 0:
        return np.asarray(choices.index(str(arr)))
    return np.select([arr == c for c in choices], range(len(choices)), -1)


def hbm_generation_code(d: Mapping[str, Any]) -> np.ndarray:
    """Generation code (index in GENERATIONS) of every design's stacks.

    ``hbm_generation: auto`` defers to ``technology.hbm_generation``; ``auto`` there too picks
    the first of AUTO_ORDER whose maximum stack bandwidth and capacity cover
    ``hbm_tbps_per_stack`` and ``hbm_gb_per_stack``.
    """
    declared = _codes(
        d.get("hbm_generation", "auto"), HBM_GENERATIONS, "hbm_generation", "HBM generation"
    )
    node = _codes(
        d["technology"].get("hbm_generation", "auto"),
        HBM_GENERATIONS,
        "technology.hbm_generation",
        "HBM generation",
    )
    # HBM_GENERATIONS = ("auto", *GENERATIONS): code 0 is auto, the rest are shifted by one
    code = np.where(declared == 0, node, declared)
    if np.any(code == 0):
        bw, gb = value(d, "hbm_tbps_per_stack"), value(d, "hbm_gb_per_stack")
        pick = np.full(np.broadcast(bw, gb).shape, 1 + GENERATIONS.index(AUTO_ORDER[-1]))
        for name in reversed(AUTO_ORDER[:-1]):
            prefix = HBM_PREFIX[name]
            fits = (bw <= tech(d, f"{prefix}_max_tbps_per_stack")) & (
                gb <= tech(d, f"{prefix}_max_gb_per_stack")
            )
            pick = np.where(fits, 1 + GENERATIONS.index(name), pick)
        code = np.where(code == 0, pick, code)
    return code - 1


def _by_code(code: np.ndarray, values: list[Any]) -> Any:
    if code.ndim == 0:
        return values[int(code)]
    return np.choose(code, [np.asarray(v, float) for v in values])


def hbm_spec(d: Mapping[str, Any], fields: tuple[str, ...] = HBM_FIELDS) -> dict[str, Any]:
    """The ``fields`` constants of each design's HBM generation (scalars when one generation)."""
    code = hbm_generation_code(d)
    used = [GENERATIONS[int(code)]] if code.ndim == 0 else list(GENERATIONS)
    out = {}
    for f in fields:
        vals = {g: tech(d, f"{HBM_PREFIX[g]}_{f}") for g in used}
        out[f] = vals[used[0]] if code.ndim == 0 else _by_code(code, [vals[g] for g in used])
    return out


def hbm_stack_fits(d: Mapping[str, Any], spec: Mapping[str, Any]) -> np.ndarray:
    """1 where the stacks run within their generation's bandwidth and capacity."""
    ok = (value(d, "hbm_tbps_per_stack") <= spec["max_tbps_per_stack"] * (1 + 1e-9)) & (
        value(d, "hbm_gb_per_stack") <= spec["max_gb_per_stack"] * (1 + 1e-9)
    )
    return np.asarray(ok, float)


def packaging_code(d: Mapping[str, Any]) -> np.ndarray:
    """Packaging code (COWOS_S, COWOS_L, ORGANIC) of every design."""
    return _codes(
        d.get("packaging", PARAMS["packaging"].default), PACKAGINGS, "packaging", "packaging"
    )


@dataclass(frozen=True)
class Interposer:
    """Limits and costs of each design's 2.5D packaging technology."""

    code: np.ndarray
    max_mm2: Any
    wafer_cost_usd: Any
    defect_density_per_cm2: Any
    bridge_usd: Any
    bridge_bond_yield: Any

    @property
    def any_bridges(self) -> bool:
        return bool(np.any(self.code == COWOS_L))


def interposer_tech(d: Mapping[str, Any]) -> Interposer:
    code = packaging_code(d)
    rows = {
        COWOS_S: (
            tech(d, "interposer_max_mm2"),
            tech(d, "interposer_wafer_cost_usd"),
            tech(d, "interposer_defect_density_per_cm2"),
            0.0,
            1.0,
        ),
        COWOS_L: (
            tech(d, "cowos_l_max_mm2"),
            tech(d, "cowos_l_wafer_cost_usd"),
            tech(d, "cowos_l_defect_density_per_cm2"),
            tech(d, "cowos_l_bridge_usd"),
            tech(d, "cowos_l_bridge_bond_yield"),
        ),
        ORGANIC: (tech(d, "organic_max_mm2"), 0.0, 0.0, 0.0, 1.0),
    }
    if code.ndim == 0:
        cols = rows[int(code)]
    else:
        cols = tuple(_by_code(code, [rows[c][i] for c in range(3)]) for i in range(5))
    return Interposer(code, *cols)


def bridges(d: Mapping[str, Any], stacks: Any) -> np.ndarray:
    """Silicon bridges of a CoWoS-L package: one under every HBM stack and one between each
    pair of neighbouring dies on the interposer (base dies when stacked, else compute dies)."""
    base = value(d, "base_dies_per_gpu") if "base_dies_per_gpu" in d else np.asarray(0.0)
    dies = np.where(base > 0, base, value(d, "dies_per_gpu"))
    return np.asarray(stacks, float) + np.maximum(dies - 1.0, 0.0)


def optional(d: Mapping[str, Any], name: str) -> np.ndarray:
    """A numeric design parameter with a default (designs built by hand may omit it)."""
    return value(d, name) if name in d else np.asarray(float(PARAMS[name].default))  # type: ignore[arg-type]


def d2d_w(d: Mapping[str, Any]) -> np.ndarray:
    """Die-to-die link power at full rate (links are always up, like the scale-up links)."""
    return optional(d, "d2d_tbps") * 8e12 * tech(d, "d2d_pj_per_bit") * 1e-12


def d2d_edge_mm(d: Mapping[str, Any]) -> np.ndarray:
    """Die edge one compute die gives its die-to-die PHYs: both ends of every bit need one."""
    dies = value(d, "dies_per_gpu")
    gbps = optional(d, "d2d_tbps") * 8000.0
    return np.where(dies > 1, 2.0 * gbps / dies / tech(d, "d2d_gbps_per_mm_edge"), 0.0)


def check_base_dies(d: Mapping[str, Any]) -> np.ndarray:
    """``base_dies_per_gpu`` (a ContextError when base dies have no area or cannot be counted)."""
    base = optional(d, "base_dies_per_gpu")
    one = one_value(base)  # (checked once where one value is broadcast)
    if np.any(one < 0) or np.any(one != np.floor(one)):
        raise ContextError("base_dies_per_gpu", "expected a whole number of dies >= 0")
    if np.any((one > 0) & ~(one_value(optional(d, "base_die_area_mm2")) > 0)):
        msg = "must be > 0 where base_dies_per_gpu > 0 (the compute dies sit on base dies)"
        raise ContextError("base_die_area_mm2", msg)
    return base


def base_die_w(d: Mapping[str, Any]) -> np.ndarray:
    """Base (IO) die power, always on."""
    area = optional(d, "base_dies_per_gpu") * optional(d, "base_die_area_mm2")
    return area * tech(d, "base_die_w_per_mm2")


#: The HBM constants a package carries: the stack's interface, footprint and shoreline, its
#: price and limits, and its DRAM core die's capacity.
PACKAGE_HBM_FIELDS = (*HBM_FIELDS, "die_gb")


@dataclass(frozen=True)
class Package:
    """The GPU package each design of a batch describes, read from the design once.

    Compute dies (``dies`` x ``die_area_mm2``), the base (IO) dies they sit on (0: none), the
    HBM stacks with their generation's constants, the 2.5D packaging with its limits and costs,
    and the die-to-die links. Arrays broadcast over the batch (0-d where one value serves it).
    """

    die_area_mm2: np.ndarray
    dies: np.ndarray  # compute dies per GPU
    base_dies: np.ndarray  # base (IO) dies per GPU, a whole number >= 0
    base_die_area_mm2: np.ndarray
    stacks: np.ndarray  # HBM stacks per GPU
    hbm: dict[str, Any]  # the stacks' generation constants (PACKAGE_HBM_FIELDS)
    hbm_fits: np.ndarray  # 1 where the stacks run within their generation's maximum
    interposer: Interposer
    d2d_tbps: np.ndarray
    d2d_pj_per_bit: Any
    d2d_gbps_per_mm_edge: Any
    base_die_w_per_mm2: Any

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> Package:
        dies = value(d, "dies_per_gpu")
        hbm = hbm_spec(d, PACKAGE_HBM_FIELDS)
        return cls(
            die_area_mm2=value(d, "die_area_mm2"),
            dies=dies,
            base_dies=check_base_dies(d),
            base_die_area_mm2=optional(d, "base_die_area_mm2"),
            stacks=dies * value(d, "hbm_stacks_per_die"),
            hbm=hbm,
            hbm_fits=hbm_stack_fits(d, hbm),
            interposer=interposer_tech(d),
            d2d_tbps=optional(d, "d2d_tbps"),
            d2d_pj_per_bit=tech(d, "d2d_pj_per_bit"),
            d2d_gbps_per_mm_edge=tech(d, "d2d_gbps_per_mm_edge"),
            base_die_w_per_mm2=tech(d, "base_die_w_per_mm2"),
        )

    @property
    def stacked(self) -> bool:
        """Some design of the batch stacks its compute dies on base dies."""
        return bool(np.any(self.base_dies > 0))

    @property
    def bridges(self) -> np.ndarray:
        """Silicon bridges of a CoWoS-L package (:func:`bridges`)."""
        dies = np.where(self.base_dies > 0, self.base_dies, self.dies)
        return np.asarray(self.stacks, float) + np.maximum(dies - 1.0, 0.0)

    @property
    def d2d_w(self) -> np.ndarray:
        """Die-to-die link power at full rate (:func:`d2d_w`)."""
        return self.d2d_tbps * 8e12 * self.d2d_pj_per_bit * 1e-12

    @property
    def d2d_edge_mm(self) -> np.ndarray:
        """Die edge one compute die gives its die-to-die PHYs (:func:`d2d_edge_mm`)."""
        gbps = self.d2d_tbps * 8000.0
        edge = 2.0 * gbps / self.dies / self.d2d_gbps_per_mm_edge
        return np.where(self.dies > 1, edge, 0.0)

    @property
    def base_die_w(self) -> np.ndarray:
        """Base (IO) die power, always on (:func:`base_die_w`)."""
        return self.base_dies * self.base_die_area_mm2 * self.base_die_w_per_mm2
