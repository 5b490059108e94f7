"""Cost of a GPU cluster from wafer to dollars per token.

``evaluate_cost(design)`` prices a (batch of) design(s): known-good dies from wafer geometry and
defect yield, HBM, the 2.5D package with its compounded assembly yield, GPU-side optics, a
per-GPU share of host, board and datacentre, the scale-up/scale-out network, and energy and
maintenance over the lifetime. Throughput and power come from the performance model, called
directly. ``cost_breakdown(design, perf)`` is the same arithmetic on given perf figures.

Money lines add up exactly (tests check it):

- per GPU: gpu_cost = silicon_cost + hbm_cost + optics_cost + package_cost
- per cluster: cluster_capex = installed_gpus x (gpu_cost + gpu_margin + system_share)
  + network_cost, and tco = cluster_capex + energy_cost + maintenance_cost
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import broadcast, builtin_evaluator, tech, value
from objectives.cost.cluster import (
    energy_cost,
    installed_gpus,
    network_cost,
    system_share,
    usd_per_mtok,
)
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
    reticle_fits,
)
from objectives.cost.waterfall import cost_waterfall
from objectives.errors import ContextError
from objectives.fabric.topology import resolve_fabric
from objectives.package import (
    COWOS_L,
    ORGANIC,
    bridges,
    check_base_dies,
    hbm_spec,
    hbm_stack_fits,
    interposer_tech,
    optional,
)
from objectives.perf.hardware import scaleout_gbps_per_gpu

__all__ = ["METRICS", "cost_breakdown", "evaluate_cost"]

_GPU = "USD per GPU"
_CLUSTER = "USD per cluster"

METRICS: dict[str, tuple[str, str]] = {
    "dies_per_wafer": ("dies", "expected gross dies per wafer (rectangular die, scribe, edge)"),
    "die_yield": ("1", "defect-limited yield of one compute die (technology.yield_model)"),
    "die_cost_usd": ("USD per die", "known-good compute die incl. wafer sort"),
    "cost_per_good_mm2_usd": ("USD/mm2", "known-good die cost per mm2 of die"),
    "reticle_fits": ("0/1", "1 if the die fits one 26 x 33 mm scanner field at its aspect ratio"),
    "silicon_cost_usd": (_GPU, "known-good compute dies (and base/IO dies) of one GPU"),
    "hbm_cost_usd": (_GPU, "known-good HBM stacks of one GPU"),
    "optics_cost_usd": (_GPU, "GPU-side scale-up optics: CPO engines + lasers, or pluggables"),
    "interposer_cost_usd": (
        _GPU,
        "one good interposer of the packaging (CoWoS-L: with its bridges; organic: none)",
    ),
    "substrate_cost_usd": (_GPU, "organic package substrate"),
    "assembly_cost_usd": (
        _GPU,
        "bonding of dies, HBM, optical engines and substrate attach (and 3D hybrid bonds)",
    ),
    "final_test_cost_usd": (_GPU, "package final/system-level test"),
    "assembly_scrap_usd": (_GPU, "parts and work lost in packages that fail assembly"),
    "package_cost_usd": (_GPU, "interposer + substrate + assembly + final test + scrap"),
    "gpu_cost_usd": (_GPU, "manufacturing cost: silicon + HBM + optics + package"),
    "gpu_margin_usd": (_GPU, "margin paid on top of gpu_cost (hardware_price_markup - 1)"),
    "interposer_area_mm2": ("mm2", "interposer under the dies and HBM stacks"),
    "interposer_yield": ("1", "defect-limited yield of the interposer"),
    "interposer_fits": (
        "0/1",
        "1 if the interposer is within its packaging's area limit (CoWoS-S "
        "technology.interposer_max_mm2, CoWoS-L cowos_l_max_mm2, organic organic_max_mm2; "
        "organic: no HBM)",
    ),
    "hbm_fits_generation": (
        "0/1",
        "1 if the stacks' bandwidth and capacity are within their HBM generation's maximum",
    ),
    "package_yield": ("1", "compounded bonding yield of the package"),
    "gpu_usd_per_pflops": ("USD/PFLOPS", "gpu_cost per dense PFLOPS of one GPU"),
    "host_cost_usd": (_GPU, "host CPUs, DRAM, NICs, chassis, PSUs sized by GPU peak power"),
    "board_cost_usd": (_GPU, "GPU module board, VRMs and connectors, sized by GPU peak power"),
    "facility_cost_usd": (_GPU, "datacentre power and cooling capex, lifetime share"),
    "system_share_usd": (_GPU, "host + board + facility"),
    "installed_gpus": ("GPUs", "serving GPUs + ceil(spare_fraction x serving) spares"),
    "network_cost_usd": (
        _CLUSTER,
        "switches, OCS ports, switch-side optics, cables (and scale-out NICs), at the price basis",
    ),
    "network_tiers": ("tiers", "switch tiers of the fabric (scale-out tiers for electrical)"),
    "cluster_capex_usd": (_CLUSTER, "installed GPUs x (gpu + margin + system share) + network"),
    "energy_cost_usd": (_CLUSTER, "electricity over the lifetime at perf.facility_power_w"),
    "maintenance_cost_usd": (_CLUSTER, "annual maintenance fraction x capex x lifetime"),
    "tco_usd": (_CLUSTER, "capex + energy + maintenance over the lifetime"),
    "usd_per_pflops": ("USD/PFLOPS", "TCO per dense PFLOPS of the serving GPUs"),
    "usd_per_mtok": (
        "USD/Mtok",
        "TCO per million output tokens at full load over the "
        "lifetime; finite when nothing is served (tokens floored at 1)",
    ),
    "usd_per_mtok_delivered": (
        "USD/Mtok",
        "usd_per_mtok / availability.delivered_fraction: per token actually delivered, after "
        "training goodput (restarts, lost work, checkpoints) or the serving capacity that is up",
    ),
}

_NETWORK_KEYS = (
    "packet_switch_gbps",
    "packet_switch_max_ports",
    "packet_switch_usd_per_gbps",
    "fibre_usd_per_link",
    "electrical_switch_usd_per_gbps",
    "electrical_switch_gbps",
    "switched_domain_silicon_mm2",
    "pluggable_usd_per_gbps",
    "cpo_usd_per_gbps",
    "ocs_usd_per_port",
    "ocs_block_gpus",
    "wdm_wavelengths_per_fibre",
    "ocs_ports_per_fibre",
)


def _choice(d: Mapping[str, Any], key: str) -> Any:
    """A string-valued technology field (a name or an array of names), unconverted."""
    try:
        return d["technology"][key]
    except KeyError:
        raise ContextError(f"technology.{key}", "missing from the technology preset") from None


def _silicon(d: Mapping[str, Any]) -> dict[str, np.ndarray]:
    area, aspect = value(d, "die_area_mm2"), value(d, "die_aspect_ratio")
    geometry = {k: tech(d, k) for k in ("wafer_diameter_mm", "edge_exclusion_mm", "scribe_mm")}
    dpw = gross_dies_per_wafer(area, aspect, **geometry)
    y = harvested_die_yield(
        area,
        tech(d, "defect_density_per_cm2"),
        _choice(d, "yield_model"),
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


def _gpu(d: Mapping[str, Any], si: Mapping[str, np.ndarray], tflops: Any) -> dict[str, Any]:
    """Per-GPU manufacturing cost lines of the package the design describes
    (objectives.package): compute dies, optional base dies with their 3D bonds, HBM of its
    generation, optical engines, and the interposer of its packaging technology."""
    area, dies = value(d, "die_area_mm2"), value(d, "dies_per_gpu")
    stacks = dies * value(d, "hbm_stacks_per_die")
    hbm_gen = hbm_spec(d)
    per_stack = hbm_stack_cost(
        value(d, "hbm_gb_per_stack"),
        usd_per_gb=hbm_gen["usd_per_gb"],
        usd_per_stack=hbm_gen["usd_per_stack"],
    )
    hbm = stacks * per_stack
    silicon = dies * si["die_cost_usd"]
    stacked = _stacked(d, si, dies, silicon)
    if stacked is not None:
        silicon = stacked["silicon_usd"]  # compute dies and their base dies

    _, is_plug, is_cpo = link_masks(d.get("link_type", "electrical"))
    # Spare lanes (technology.spare_lanes_per_link) are built and paid for, never counted as
    # bandwidth.
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

    # Co-packaged optical engines sit on the interposer beside the dies and HBM; stacked compute
    # dies sit on their base dies, which take the interposer area.
    ip = interposer_tech(d)
    on_ip_area, on_ip_dies = (area, dies) if stacked is None else stacked["footprint"]
    ip_area = interposer_area_mm2(
        on_ip_area,
        on_ip_dies,
        stacks,
        hbm_gen["footprint_mm2"],
        tech(d, "interposer_area_factor"),
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
        n_bridges = bridges(d, stacks)
        yb = ip.bridge_bond_yield**n_bridges
        with_bridges = (ip_usd * ip_yield + n_bridges * ip.bridge_usd) / (ip_yield * yb)
        is_l = ip.code == COWOS_L
        ip_usd = np.where(is_l, with_bridges, ip_usd)
        ip_yield = np.where(is_l, ip_yield * yb, ip_yield)
    parts = silicon + hbm + engines_usd
    logic_area = dies * area
    if stacked is not None:
        parts = parts + stacked["assembly_usd"] + stacked["scrap_usd"]
        logic_area = logic_area + stacked["base_area_mm2"]
    pkg = package_cost(
        parts_usd=parts,
        components=on_ip_dies + stacks + engines,
        interposer_usd=ip_usd,
        interposer_area_mm2=ip_area,
        logic_area_mm2=logic_area,
        **{
            k: tech(d, k)
            for k in (
                "substrate_area_ratio",
                "substrate_usd_per_cm2",
                "assembly_usd_per_bond",
                "bond_yield",
                "final_test_usd_per_package",
                "final_test_usd_per_cm2",
            )
        },
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
    pflops = np.asarray(tflops, float) / 1000.0
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
        "gpu_margin_usd": gpu * (tech(d, "hardware_price_markup") - 1.0),
        "interposer_area_mm2": ip_area,
        "interposer_yield": ip_yield,
        "interposer_fits": fits.astype(float),
        "hbm_fits_generation": hbm_stack_fits(d, hbm_gen),
        "package_yield": pkg.package_yield,
        "gpu_usd_per_pflops": gpu / np.maximum(pflops, 1e-12),
        "_is_cpo": is_cpo,
    }


def _stacked(
    d: Mapping[str, Any], si: Mapping[str, np.ndarray], dies: np.ndarray, silicon: np.ndarray
) -> dict[str, Any] | None:
    """Compute dies 3D-stacked on base (IO) dies (SoIC, as MI300's XCDs on IODs): the known-good
    base dies, the hybrid bonds and the stacks they scrap; None when no design has base dies.

    Each base die with its compute dies is one part on the interposer; a failed hybrid bond
    scraps the stack (its dies and bonds), found at the stack's test before 2.5D assembly.
    """
    base = check_base_dies(d)
    if not np.any(base > 0):
        return None
    base_area = optional(d, "base_die_area_mm2")
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
        _choice(d, "yield_model"),
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
            np.where(has, base_area, value(d, "die_area_mm2")),
            np.where(has, base, dies),
        ),
        "silicon_usd": silicon_usd,
        "assembly_usd": assembly,
        "scrap_usd": scrap,
        "base_area_mm2": base * base_area,
    }


def cost_breakdown(design: Mapping[str, Any], perf: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """All cost metrics of ``design`` given its perf metrics (unprefixed names).

    Uses perf's tokens_per_s, tflops_per_gpu, gpu_power_w, package_power_w, cluster_power_w and
    facility_power_w.
    """
    d = design
    si = _silicon(d)
    g = _gpu(d, si, perf["tflops_per_gpu"])
    is_cpo = g.pop("_is_cpo")

    n = value(d, "cluster_size")
    installed = installed_gpus(n, value(d, "spare_fraction"))
    life = tech(d, "lifetime_years")
    gpu_w, peak_w = (
        np.asarray(perf["gpu_power_w"], float),
        np.asarray(perf["package_power_w"], float),
    )
    cluster_w = np.asarray(perf["cluster_power_w"], float)
    # Datacentre capacity is provisioned for each installed GPU at its peak power plus its share
    # of host and network power (perf's IT power per serving GPU beyond the GPU itself).
    overhead_w = np.maximum(cluster_w / np.maximum(n, 1.0) - gpu_w, 0.0)
    host, board, facility = system_share(
        gpu_power_w=peak_w,
        it_power_w_per_gpu=peak_w + overhead_w,
        host_usd_per_gpu_kw=tech(d, "host_usd_per_gpu_kw"),
        board_usd_per_gpu_kw=tech(d, "board_usd_per_gpu_kw"),
        facility_capex_usd_per_kw=tech(d, "facility_capex_usd_per_kw"),
        lifetime_years=life,
        facility_lifetime_years=tech(d, "facility_lifetime_years"),
    )
    system = host + board + facility

    is_elec, _, _ = link_masks(d.get("link_type", "electrical"))
    net_list, tiers = network_cost(
        installed=installed,
        links_per_gpu=value(d, "links_per_gpu"),
        lanes_per_link=value(d, "optics_per_link"),
        lane_gbps=value(d, "lane_gbps"),
        silicon_mm2=value(d, "die_area_mm2") * value(d, "dies_per_gpu"),
        is_electrical=is_elec,
        is_cpo=is_cpo,
        fabric=resolve_fabric(d),
        t={
            **{k: tech(d, k) for k in _NETWORK_KEYS},
            "scaleout_gbps_per_gpu": scaleout_gbps_per_gpu(d),
        },
    )
    # The price basis (technology/fabric.yaml): list prices to cost, then the buyer's margin on
    # network gear.
    net = net_list / tech(d, "network_list_markup") * tech(d, "network_price_markup")
    capex = installed * (g["gpu_cost_usd"] + g["gpu_margin_usd"] + system) + net
    energy = energy_cost(perf["facility_power_w"], life, tech(d, "electricity_usd_per_kwh"))
    maintenance = capex * tech(d, "maintenance_fraction_per_year") * life
    tco = capex + energy + maintenance
    pflops = n * np.asarray(perf["tflops_per_gpu"], float) / 1000.0

    out = {
        k: si[k]
        for k in (
            "dies_per_wafer",
            "die_yield",
            "die_cost_usd",
            "cost_per_good_mm2_usd",
            "reticle_fits",
        )
    }
    out.update(g)
    out.update(
        host_cost_usd=host,
        board_cost_usd=board,
        facility_cost_usd=facility,
        system_share_usd=system,
        installed_gpus=installed,
        network_cost_usd=net,
        network_tiers=tiers,
        cluster_capex_usd=capex,
        energy_cost_usd=energy,
        maintenance_cost_usd=maintenance,
        tco_usd=tco,
        usd_per_pflops=tco / np.maximum(pflops, 1e-12),
        usd_per_mtok=usd_per_mtok(tco, perf["tokens_per_s"], life),
    )
    return broadcast(out)


@builtin_evaluator(metrics=METRICS)
def evaluate_cost(design: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Cost metrics of a (batch of) design(s); throughput and power from the perf model."""
    from objectives.availability import delivered_fraction, evaluate_availability
    from objectives.perf import evaluate_perf  # the perf model prices nothing; no cycle

    out = cost_breakdown(design, evaluate_perf(design))
    lost = delivered_fraction(design, evaluate_availability(design))
    out["usd_per_mtok_delivered"] = out["usd_per_mtok"] / np.maximum(lost, 1e-12)
    return broadcast(out)


evaluate_cost.waterfall = cost_waterfall  # type: ignore[attr-defined]
cost_waterfall.unit = "USD"  # type: ignore[attr-defined]  # the breakdown table's column
