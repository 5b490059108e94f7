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
from objectives.cooling import cooling_usd_per_gpu
from objectives.cost.cluster import (
    energy_cost,
    installed_gpus,
    network_cost,
    system_share,
    usd_per_mtok,
)
from objectives.cost.gpu import gpu_lines, silicon_lines
from objectives.cost.package import link_masks
from objectives.cost.waterfall import cost_waterfall
from objectives.fabric.topology import is_rack_domain, resolve_fabric
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
    "cooling_cost_usd": (
        _GPU,
        "cooling hardware beyond an air-cooled host's (liquid: cold plates, manifolds, CDU "
        "share) per kW of GPU peak power (objectives/cooling.py)",
    ),
    "system_share_usd": (_GPU, "host + board + facility + cooling"),
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
    "rack_silicon_mm2",
    "rack_domain_usd_per_rack",
    "wdm_wavelengths_per_fibre",
    "ocs_ports_per_fibre",
)


def _system(
    d: Mapping[str, Any], perf: Mapping[str, Any], n: Any, life: Any
) -> tuple[Any, Any, Any]:
    """(host, board, facility) USD per installed GPU. Datacentre capacity is provisioned for
    each installed GPU at its peak power plus its share of host and network power (perf's IT
    power per serving GPU beyond the GPU itself)."""
    gpu_w, peak_w = (
        np.asarray(perf["gpu_power_w"], float),
        np.asarray(perf["package_power_w"], float),
    )
    cluster_w = np.asarray(perf["cluster_power_w"], float)
    overhead_w = np.maximum(cluster_w / np.maximum(n, 1.0) - gpu_w, 0.0)
    return system_share(
        gpu_power_w=peak_w,
        it_power_w_per_gpu=peak_w + overhead_w,
        host_usd_per_gpu_kw=tech(d, "host_usd_per_gpu_kw"),
        board_usd_per_gpu_kw=tech(d, "board_usd_per_gpu_kw"),
        facility_capex_usd_per_kw=tech(d, "facility_capex_usd_per_kw"),
        lifetime_years=life,
        facility_lifetime_years=tech(d, "facility_lifetime_years"),
    )


def _network(d: Mapping[str, Any], installed: Any, is_cpo: Any) -> tuple[Any, Any]:
    """(cluster network USD at the price basis, tiers). The basis (technology/fabric.yaml):
    list prices to cost, then the buyer's margin on network gear."""
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
        rack_domain=is_rack_domain(d),
        t={
            **{k: tech(d, k) for k in _NETWORK_KEYS},
            "scaleout_gbps_per_gpu": scaleout_gbps_per_gpu(d),
        },
    )
    return net_list / tech(d, "network_list_markup") * tech(d, "network_price_markup"), tiers


_SILICON_METRICS = (
    "dies_per_wafer",
    "die_yield",
    "die_cost_usd",
    "cost_per_good_mm2_usd",
    "reticle_fits",
)


def cost_breakdown(design: Mapping[str, Any], perf: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """All cost metrics of ``design`` given its perf metrics (unprefixed names).

    Uses perf's tokens_per_s, tflops_per_gpu, gpu_power_w, package_power_w, cluster_power_w and
    facility_power_w.
    """
    d = design
    si = silicon_lines(d)
    g = gpu_lines(d, si, perf["tflops_per_gpu"])
    is_cpo = g.pop("_is_cpo")

    n = value(d, "cluster_size")
    installed = installed_gpus(n, value(d, "spare_fraction"))
    life = tech(d, "lifetime_years")
    host, board, facility = _system(d, perf, n, life)
    cooling = cooling_usd_per_gpu(d, perf["package_power_w"])
    system = host + board + facility + cooling
    net, tiers = _network(d, installed, is_cpo)
    capex = installed * (g["gpu_cost_usd"] + g["gpu_margin_usd"] + system) + net
    energy = energy_cost(perf["facility_power_w"], life, tech(d, "electricity_usd_per_kwh"))
    maintenance = capex * tech(d, "maintenance_fraction_per_year") * life
    tco = capex + energy + maintenance
    pflops = n * np.asarray(perf["tflops_per_gpu"], float) / 1000.0

    out = {k: si[k] for k in _SILICON_METRICS}
    out.update(g)
    out.update(
        host_cost_usd=host,
        board_cost_usd=board,
        facility_cost_usd=facility,
        cooling_cost_usd=cooling,
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
