"""HBM, 2.5D package and GPU-side optics cost, as functions of numpy arrays.

The package is assembled chip-last from known-good parts (dies, HBM stacks, co-packaged optical
engines) on a known-good interposer. Every bond can fail and a failed package scraps everything
on it, so a package with more stacks or a bigger die pays for its own yield losses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from objectives._groups import on_whole_numbers
from objectives.cost.silicon import MM2_PER_CM2, gross_dies_per_wafer, yield_negative_binomial
from objectives.errors import check_names
from objectives.params import LINK_TYPES


def hbm_stack_cost(
    gb_per_stack: ArrayLike, *, usd_per_gb: ArrayLike, usd_per_stack: ArrayLike
) -> np.ndarray:
    """Price of one known-good stack of its generation: a fixed part (base die, stacking,
    test) plus $/GB (objectives.package.hbm_spec gives both)."""
    return np.asarray(usd_per_stack, float) + np.asarray(usd_per_gb, float) * np.asarray(
        gb_per_stack, float
    )


def link_masks(link_type: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(electrical, pluggable, cpo) boolean masks of a link_type string or string array."""
    lt = np.asarray(link_type)
    check_names(lt.ravel().tolist(), LINK_TYPES, "link_type", what="link type")
    return lt == "electrical", lt == "pluggable", lt == "cpo"


def interposer_area_mm2(
    die_area_mm2: ArrayLike,
    dies: ArrayLike,
    stacks: ArrayLike,
    hbm_footprint_mm2: ArrayLike,
    area_factor: ArrayLike,
) -> np.ndarray:
    """Interposer under all dies and HBM stacks, with spacing/routing overhead (for an organic
    package, the substrate area the parts take)."""
    silicon = np.asarray(dies, float) * np.asarray(die_area_mm2, float)
    memory = np.asarray(stacks, float) * np.asarray(hbm_footprint_mm2, float)
    return (silicon + memory) * np.asarray(area_factor, float)


def interposer_cost(
    area_mm2: ArrayLike,
    *,
    aspect_ratio: ArrayLike,
    wafer_cost_usd: ArrayLike,
    defect_density_per_cm2: ArrayLike,
    alpha: ArrayLike,
    wafer_diameter_mm: ArrayLike,
    edge_exclusion_mm: ArrayLike,
    scribe_mm: ArrayLike,
) -> tuple[np.ndarray, np.ndarray]:
    """(cost of one good interposer, interposer yield): negative binomial, lower alpha."""
    dpw = gross_dies_per_wafer(
        area_mm2,
        aspect_ratio,
        wafer_diameter_mm=wafer_diameter_mm,
        edge_exclusion_mm=edge_exclusion_mm,
        scribe_mm=scribe_mm,
    )
    ad = np.asarray(area_mm2, float) / MM2_PER_CM2 * np.asarray(defect_density_per_cm2, float)
    y = yield_negative_binomial(ad, alpha)
    return np.asarray(wafer_cost_usd, float) / np.maximum(dpw * y, 1e-12), y


@dataclass(frozen=True)
class PackageCost:
    """Per-GPU package cost lines (USD) and the compounded assembly yield."""

    interposer_usd: np.ndarray
    substrate_usd: np.ndarray
    assembly_usd: np.ndarray
    final_test_usd: np.ndarray
    scrap_usd: np.ndarray
    package_yield: np.ndarray
    bonds: np.ndarray

    @property
    def total_usd(self) -> np.ndarray:
        return (
            self.interposer_usd
            + self.substrate_usd
            + self.assembly_usd
            + self.final_test_usd
            + self.scrap_usd
        )


def package_cost(
    *,
    parts_usd: ArrayLike,
    components: ArrayLike,
    interposer_usd: ArrayLike,
    interposer_area_mm2: ArrayLike,
    substrate_area_ratio: ArrayLike,
    substrate_usd_per_cm2: ArrayLike,
    assembly_usd_per_bond: ArrayLike,
    bond_yield: ArrayLike,
    final_test_usd: ArrayLike,
) -> PackageCost:
    """Cost of turning known-good parts into one good tested package.

    ``parts_usd``: known-good parts bonded into the package (dies, HBM, optical engines);
    ``components``: how many of them. One more bond attaches the interposer to the substrate.
    ``final_test_usd``: final and system-level test of one package (objectives.cost.module
    .cost_of_test_time).
    Package yield = bond_yield ** bonds; final test runs on every assembled package and is what
    finds the failures, so good-package cost = (parts + interposer + substrate + assembly +
    test) / yield, and ``scrap_usd`` is the part of that above the unscrapped sum.
    """
    bonds = np.asarray(components, float) + 1.0
    substrate = (
        np.asarray(interposer_area_mm2, float)
        / MM2_PER_CM2
        * np.asarray(substrate_area_ratio, float)
        * np.asarray(substrate_usd_per_cm2, float)
    )
    assembly = np.asarray(assembly_usd_per_bond, float) * bonds
    test = np.asarray(final_test_usd, float)
    per_bond = np.asarray(bond_yield, float)
    if per_bond.size == 1:  # one bond yield: each count of bonds raised once
        y = on_whole_numbers(lambda b: per_bond**b, bonds)
    else:
        y = per_bond**bonds
    interposer = np.asarray(interposer_usd, float)
    before = np.asarray(parts_usd, float) + interposer + substrate + assembly + test
    scrap = before * (1.0 / y - 1.0)
    return PackageCost(interposer, substrate, assembly, test, scrap, y, bonds)


def gpu_optics_cost(
    gbps_per_gpu: ArrayLike,
    lanes_per_gpu: ArrayLike,
    is_pluggable: ArrayLike,
    is_cpo: ArrayLike,
    *,
    pluggable_usd_per_gbps: ArrayLike,
    cpo_usd_per_gbps: ArrayLike,
    cpo_engine_gbps: ArrayLike,
    cpo_lanes_per_laser: ArrayLike,
    cpo_laser_usd: ArrayLike,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(CPO engines USD, external lasers or pluggable modules USD, engine count) per GPU.

    Electrical links cost nothing here: their SerDes are in the die and their copper is in the
    switch baseboard (network cost). CPO engines are bonded into the package (their cost enters
    its yield); lasers and pluggable modules are outside it.
    """
    gbps = np.asarray(gbps_per_gpu, float)
    cpo = np.asarray(is_cpo, bool)
    plug = np.asarray(is_pluggable, bool)
    engines = np.where(cpo, np.ceil(gbps / np.asarray(cpo_engine_gbps, float)), 0.0)
    engine_usd = np.where(cpo, gbps * cpo_usd_per_gbps, 0.0)
    lasers = np.ceil(np.asarray(lanes_per_gpu, float) / np.asarray(cpo_lanes_per_laser, float))
    outside = np.where(
        cpo, lasers * cpo_laser_usd, np.where(plug, gbps * pluggable_usd_per_gbps, 0.0)
    )
    return engine_usd, outside, engines
