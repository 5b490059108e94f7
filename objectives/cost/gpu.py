"""Per-GPU manufacturing cost lines: known-good dies, HBM, optics and the package around them.

``silicon_lines`` prices the compute die from wafer geometry and (harvested) defect yield;
``gpu_lines`` builds the GPU the design describes (its ``objectives.package.Package``): compute
dies, optional base dies with their 3D bonds, HBM of its generation, optical engines, and the
interposer of its packaging technology, bonded and tested.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._die import reticle_fits
from objectives._evaluator import tech, value
from objectives.cost.module import cost_of_test_time
from objectives.cost.package import (
    gpu_optics_cost,
    hbm_stack_cost,
    interposer_area_mm2,
    interposer_cost,
    link_masks,
    package_cost,
)
from objectives.cost.silicon import (
    die_yield,
    gross_dies_per_wafer,
    harvested_die_yield,
    known_good_die_cost,
)
from objectives.errors import ContextError
from objectives.package import COWOS_L, ORGANIC, Package

_PACKAGE_KEYS = (
    "substrate_area_ratio",
    "substrate_usd_per_cm2",
    "assembly_usd_per_bond",
    "bond_yield",
)


def choice(d: Mapping[str, Any], key: str) -> Any:
    """A string-valued technology field (a name or an array of names), unconverted."""
    try:
        return d["technology"][key]
    except KeyError:
        raise ContextError(f"technology.{key}", "missing from the technology preset") from None


def silicon_lines(d: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Gross dies per wafer, (harvested) die yield and known-good die cost of the compute die."""
    area, aspect = value(d, "die_area_mm2"), value(d, "die_aspect_ratio")
    geometry = {k: tech(d, k) for k in ("wafer_diameter_mm", "edge_exclusion_mm", "scribe_mm")}
    dpw = gross_dies_per_wafer(area, aspect, **geometry)
    y = harvested_die_yield(
        area,
        tech(d, "defect_density_per_cm2"),
        choice(d, "yield_model"),
        tech(d, "clustering_alpha"),
        core_area_fraction=tech(d, "die_core_area_fraction"),
        cores_per_mm2=tech(d, "die_cores_per_mm2"),
        core_spare_fraction=tech(d, "die_core_spare_fraction"),
        critical_area_fraction=tech(d, "die_critical_area_fraction"),
    )
    kgd = known_good_die_cost(tech(d, "wafer_cost_usd"), tech(d, "wafer_sort_cost_usd"), dpw, y)
    fits = reticle_fits(area, aspect, tech(d, "reticle_width_mm"), tech(d, "reticle_height_mm"))
    return {
        "dies_per_wafer": dpw,
        "die_yield": y,
        "die_cost_usd": kgd,
        "cost_per_good_mm2_usd": kgd / area,
        "reticle_fits": fits,
        **geometry,
    }


def _optics(d: Mapping[str, Any]) -> tuple[Any, Any, Any, np.ndarray]:
    """(on-package engines USD, outside USD, engines, is_cpo) of the GPU's scale-up optics.
    Spare lanes (technology.spare_lanes_per_link) are built and paid for, never counted as
    bandwidth."""
    _, is_plug, is_cpo = link_masks(d.get("link_type", "electrical"))
    lanes = value(d, "links_per_gpu") * (
        value(d, "optics_per_link") + tech(d, "spare_lanes_per_link")
    )
    to_cost = 1.0 / tech(d, "network_list_markup")  # optics prices are quoted at list
    engines_usd, outside_usd, engines = gpu_optics_cost(
        lanes * value(d, "lane_gbps"),
        lanes,
        is_plug,
        is_cpo,
        pluggable_usd_per_gbps=tech(d, "pluggable_usd_per_gbps") * to_cost,
        cpo_usd_per_gbps=tech(d, "cpo_usd_per_gbps") * to_cost,
        **{k: tech(d, k) for k in ("cpo_engine_gbps", "cpo_lanes_per_laser", "cpo_laser_usd")},
    )
    return engines_usd, outside_usd, engines, is_cpo


def _interposer(
    d: Mapping[str, Any],
    si: Mapping[str, np.ndarray],
    on_ip: tuple[Any, Any],
    pkg: Package,
    engines: Any,
) -> tuple[Any, Any, Any, Any]:
    """(area mm2, USD, yield, technology) of one known-good interposer under ``on_ip`` = (area,
    count) of the parts bonded to it, the HBM stacks and the co-packaged optical engines."""
    ip, stacks, hbm_footprint_mm2 = pkg.interposer, pkg.stacks, pkg.hbm["footprint_mm2"]
    ip_area = interposer_area_mm2(
        on_ip[0], on_ip[1], stacks, hbm_footprint_mm2, tech(d, "interposer_area_factor")
    ) + engines * tech(d, "cpo_engine_mm2") * tech(d, "interposer_area_factor")
    ip_usd, ip_yield = interposer_cost(
        ip_area,
        aspect_ratio=tech(d, "interposer_aspect_ratio"),
        wafer_cost_usd=ip.wafer_cost_usd,
        defect_density_per_cm2=ip.defect_density_per_cm2,
        alpha=tech(d, "interposer_clustering_alpha"),
        wafer_diameter_mm=si["wafer_diameter_mm"],
        edge_exclusion_mm=si["edge_exclusion_mm"],
        scribe_mm=si["scribe_mm"],
    )
    if ip.any_bridges:
        # CoWoS-L: the bridges are embedded in the RDL interposer before anything is bonded,
        # so a known-good interposer carries its bridges and their embedding yield.
        n_bridges = pkg.bridges
        yb = ip.bridge_bond_yield**n_bridges
        with_bridges = (ip_usd * ip_yield + n_bridges * ip.bridge_usd) / (ip_yield * yb)
        is_l = ip.code == COWOS_L
        ip_usd = np.where(is_l, with_bridges, ip_usd)
        ip_yield = np.where(is_l, ip_yield * yb, ip_yield)
    return ip_area, ip_usd, ip_yield, ip


def insertions_of(d: Mapping[str, Any]) -> np.ndarray:
    """The design's test insertions (a GPU preset's count for its generation), or
    technology.test_insertions, today's leading-edge count, where it says 0 or nothing."""
    own = np.asarray(d.get("test_insertions", 0.0), float)
    return np.where(own > 0, own, tech(d, "test_insertions"))


def physical_stack_gb(gb_per_stack: Any, die_gb: Any) -> np.ndarray:
    """The capacity an HBM stack is built and bought with: whole DRAM core dies of its
    generation (a product may expose less, as the B200's 180 GB of 8 x 24 GB stacks)."""
    dies = np.ceil(np.asarray(gb_per_stack, float) / np.asarray(die_gb, float) - 1e-9)
    return dies * die_gb


def gpu_lines(
    d: Mapping[str, Any],
    si: Mapping[str, np.ndarray],
    pack: Package | None = None,
) -> dict[str, Any]:
    """Per-GPU manufacturing cost lines of the package the design describes (``pack``, read
    from the design when not given)."""
    pack = Package.of(d) if pack is None else pack
    area, dies, stacks, hbm_gen = pack.die_area_mm2, pack.dies, pack.stacks, pack.hbm
    per_stack = hbm_stack_cost(
        physical_stack_gb(value(d, "hbm_gb_per_stack"), hbm_gen["die_gb"]),
        usd_per_gb=hbm_gen["usd_per_gb"],
        usd_per_stack=hbm_gen["usd_per_stack"],
    )
    hbm = stacks * per_stack
    silicon = dies * si["die_cost_usd"]
    stacked = _stacked(d, si, pack, silicon)
    if stacked is not None:
        silicon = stacked["silicon_usd"]  # compute dies and their base dies
    engines_usd, outside_usd, engines, is_cpo = _optics(d)

    # Co-packaged optical engines sit on the interposer beside the dies and HBM; stacked compute
    # dies sit on their base dies, which take the interposer area.
    on_ip = (area, dies) if stacked is None else stacked["footprint"]
    ip_area, ip_usd, ip_yield, ip = _interposer(d, si, on_ip, pack, engines)
    parts = silicon + hbm + engines_usd
    logic_area = dies * area
    if stacked is not None:
        parts = parts + stacked["assembly_usd"] + stacked["scrap_usd"]
        logic_area = logic_area + stacked["base_area_mm2"]
    test_minutes, test_usd = cost_of_test_time(
        logic_area,
        insertions=insertions_of(d),
        minutes_per_insertion_cm2=tech(d, "test_minutes_per_insertion_cm2"),
        usd_per_hour=tech(d, "tester_usd_per_hour"),
    )
    pkg = package_cost(
        parts_usd=parts,
        components=on_ip[1] + stacks + engines,
        interposer_usd=ip_usd,
        interposer_area_mm2=ip_area,
        final_test_usd=test_usd,
        **{k: tech(d, k) for k in _PACKAGE_KEYS},
    )
    assembly, scrap, package = pkg.assembly_usd, pkg.scrap_usd, pkg.total_usd
    if stacked is not None:
        assembly = assembly + stacked["assembly_usd"]
        scrap = scrap + stacked["scrap_usd"]
        package = package + stacked["assembly_usd"] + stacked["scrap_usd"]
    fits = ip_area <= ip.max_mm2
    if np.any(ip.code == ORGANIC):  # HBM needs interposer-class wiring
        fits = fits & ~((ip.code == ORGANIC) & (stacks > 0))
    optics = engines_usd + outside_usd
    gpu = silicon + hbm + optics + package
    return {
        "silicon_cost_usd": silicon,
        "hbm_cost_usd": hbm,
        "optics_cost_usd": optics,
        "interposer_cost_usd": pkg.interposer_usd,
        "substrate_cost_usd": pkg.substrate_usd,
        "assembly_cost_usd": assembly,
        "final_test_cost_usd": pkg.final_test_usd,
        "assembly_scrap_usd": scrap,
        "package_cost_usd": package,
        "gpu_cost_usd": gpu,
        "interposer_area_mm2": ip_area,
        "interposer_yield": ip_yield,
        "interposer_fits": fits.astype(float),
        "hbm_fits_generation": pack.hbm_fits,
        "package_yield": pkg.package_yield,
        "test_minutes": test_minutes,
        "_is_cpo": is_cpo,
        "_substrate_mm2": ip_area * tech(d, "substrate_area_ratio"),
    }


def _stacked(
    d: Mapping[str, Any], si: Mapping[str, np.ndarray], pkg: Package, silicon: np.ndarray
) -> dict[str, Any] | None:
    """Compute dies 3D-stacked on base (IO) dies (SoIC, as MI300's XCDs on IODs): the known-good
    base dies, the hybrid bonds and the stacks they scrap; None when no design has base dies.

    Each base die with its compute dies is one part on the interposer; a failed hybrid bond
    scraps the stack (its dies and bonds), found at the stack's test before 2.5D assembly.
    """
    if not pkg.stacked:
        return None
    dies, base, base_area = pkg.dies, pkg.base_dies, pkg.base_die_area_mm2
    has = base > 0
    dpw = gross_dies_per_wafer(
        np.where(has, base_area, 1.0),
        1.0,
        wafer_diameter_mm=si["wafer_diameter_mm"],
        edge_exclusion_mm=si["edge_exclusion_mm"],
        scribe_mm=si["scribe_mm"],
    )
    y = die_yield(
        base_area,
        tech(d, "base_die_defect_density_per_cm2"),
        choice(d, "yield_model"),
        tech(d, "clustering_alpha"),
        tech(d, "die_critical_area_fraction"),
    )
    kgd = known_good_die_cost(
        tech(d, "base_die_wafer_cost_usd"), tech(d, "wafer_sort_cost_usd"), dpw, y
    )
    silicon_usd = silicon + np.where(has, base * kgd, 0.0)
    bonds = np.where(has, dies, 0.0)
    assembly = bonds * tech(d, "soic_usd_per_bond")
    soic_yield = tech(d, "soic_bond_yield") ** bonds
    scrap = (silicon_usd + assembly) * (1.0 / soic_yield - 1.0)
    return {
        "footprint": (
            np.where(has, base_area, pkg.die_area_mm2),
            np.where(has, base, dies),
        ),
        "silicon_usd": silicon_usd,
        "assembly_usd": assembly,
        "scrap_usd": scrap,
        "base_area_mm2": base * base_area,
    }
