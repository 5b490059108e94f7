"""Cost of a GPU cluster from wafer to dollars per token.

``evaluate_cost(design)`` prices a (batch of) design(s): known-good dies from wafer geometry and
defect yield, HBM, the 2.5D package with its compounded assembly yield, GPU-side optics, the
GPU module around it (power delivery, board, cold plate), a per-GPU share of host and
datacentre, the scale-up/scale-out network, and energy and maintenance over the lifetime.
Throughput and power come from the performance model and the delivered fraction from the
availability model: the engine passes their metrics (``evaluate_cost(design, perf=...,
availability=...)``), a direct call without them computes them. ``cost_breakdown(design,
perf)`` is the arithmetic that needs perf only.

Money lines add up exactly (tests check it):

- per GPU: gpu_cost = silicon_cost + hbm_cost + optics_cost + package_cost (the package);
  module_cost = power_delivery_cost + module_board_cost + thermal_cost; gpu_module_cost =
  gpu_cost + module_cost (the GPU as sold)
- per cluster: cluster_capex = installed_gpus x (gpu_module_cost + gpu_margin + system_share)
  + network_cost, and tco = cluster_capex + energy_cost + maintenance_cost
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import (
    broadcast,
    builtin_evaluator,
    float_values,
    select,
    tech,
    value,
)
from objectives._groups import DEDUP_MIN, dedup
from objectives.availability.spares import silicon_spares
from objectives.cooling import cooling_usd_per_gpu, pue_factor
from objectives.cost.cluster import (
    energy_cost,
    installed_gpus,
    network_cost,
    system_share,
    usd_per_gpu_hour,
    usd_per_mtok,
)
from objectives.cost.gpu import gpu_lines, silicon_lines
from objectives.cost.module import ModuleCost, module_cost
from objectives.cost.package import link_masks
from objectives.cost.pools import pools_cost
from objectives.cost.waterfall import cost_waterfall
from objectives.errors import check_names
from objectives.fabric.topology import is_mesh_domain, is_rack_domain, resolve_fabric
from objectives.package import optional
from objectives.params import PRICE_BASES, VENDORS
from objectives.perf import pool
from objectives.perf.hardware import scaleout_gbps_per_gpu
from objectives.perf.pools import has_pools

__all__ = ["METRICS", "cost_breakdown", "evaluate_cost", "is_market", "vendor_margin"]

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
    "final_test_cost_usd": (
        _GPU,
        "final and system-level test: insertions x minutes per insertion (by logic area) at the "
        "tester's hourly rate",
    ),
    "test_minutes": ("min", "tester time of one package over all its test insertions"),
    "assembly_scrap_usd": (_GPU, "parts and work lost in packages that fail assembly"),
    "package_cost_usd": (_GPU, "interposer + substrate + assembly + final test + scrap"),
    "gpu_cost_usd": (_GPU, "manufacturing cost of the package: silicon + HBM + optics + package"),
    "power_stages": ("stages", "smart power stages (phases) of the module: package current / A"),
    "power_delivery_cost_usd": (
        _GPU,
        "module power delivery: stages (peak power / core voltage / amps per stage) x price",
    ),
    "module_board_mm2": ("mm2", "module PCB: regulators by current + the substrate footprint"),
    "module_board_cost_usd": (_GPU, "module PCB by area and layer count"),
    "thermal_cost_usd": (_GPU, "cold plate (liquid) or heat sink (air) by peak kW"),
    "module_cost_usd": (_GPU, "power delivery + module board + cold plate/heat sink"),
    "gpu_module_cost_usd": (_GPU, "manufacturing cost of the GPU as sold: package + module"),
    "gpu_price_usd": (
        _GPU,
        "what a buyer pays per GPU at the price basis: gpu_module_cost at price_basis=cost; "
        "gpu_module_cost / (1 - the vendor's gross margin) at market",
    ),
    "gpu_margin_usd": (_GPU, "gpu_price - gpu_module_cost (0 at price_basis=cost)"),
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
    "gpu_usd_per_pflops": ("USD/PFLOPS", "gpu_module_cost per dense PFLOPS of one GPU"),
    "host_cost_usd": (_GPU, "host CPUs, DRAM, NICs, chassis, PSUs sized by GPU peak power, or the "
        "product's own platform bill (host_usd_per_gpu)"),
    "facility_cost_usd": (_GPU, "datacentre power and cooling capex, lifetime share"),
    "cooling_cost_usd": (
        _GPU,
        "cooling hardware beyond an air-cooled host's (liquid: cold plates, manifolds, CDU "
        "share) per kW of GPU peak power (objectives/cooling.py)",
    ),
    "system_share_usd": (_GPU, "host + facility + cooling"),
    "installed_gpus": (
        "GPUs",
        "serving GPUs + ceil(spare_fraction x serving) + floor(spare_silicon_fraction x "
        "serving) spares",
    ),
    "memory_pool_cost_usd": (
        _CLUSTER,
        "memory pool over optics: DRAM and memory nodes per GB, CPO ports at both ends of every "
        "GPU's pool links (objectives/perf/pool.py); 0 without a pool",
    ),
    "network_cost_usd": (
        _CLUSTER,
        "switches, OCS ports, switch-side optics, cables (and scale-out NICs), at the price basis",
    ),
    "network_tiers": ("tiers", "switch tiers of the fabric (scale-out tiers for electrical)"),
    "cluster_capex_usd": (
        _CLUSTER,
        "installed GPUs x (gpu module + margin + system share) + network + memory pool",
    ),
    "energy_cost_usd": (_CLUSTER, "electricity over the lifetime at perf.facility_power_w"),
    "maintenance_cost_usd": (_CLUSTER, "annual maintenance fraction x capex x lifetime"),
    "tco_usd": (_CLUSTER, "capex + energy + maintenance over the lifetime"),
    "usd_per_pflops": ("USD/PFLOPS", "TCO per dense PFLOPS of the serving GPUs"),
    "usd_per_gpu_hour": (
        "USD/GPU-h",
        "owning one serving GPU for an hour: capex per GPU (GPU, spares, host, network, "
        "facility share) amortised over lifetime_years at cost_of_capital_per_year, plus "
        "energy (power and cooling at PUE) and maintenance; comparable with ownership and "
        "rental rates",
    ),
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

_AT_BASIS = frozenset(
    {
        "gpu_price_usd",
        "gpu_margin_usd",
        "network_cost_usd",
        "cluster_capex_usd",
        "maintenance_cost_usd",
        "tco_usd",
        "usd_per_pflops",
        "usd_per_gpu_hour",
        "usd_per_mtok",
        "usd_per_mtok_delivered",
    }
)
"""Metrics that follow the design's price_basis; every other money metric is a manufacturing
cost (the same at either basis). Each metric's description says which."""
for _name, (_unit, _text) in METRICS.items():
    if _name in _AT_BASIS:
        METRICS[_name] = (_unit, f"{_text} [at the price_basis]")
    elif _name == "energy_cost_usd":
        METRICS[_name] = (_unit, f"{_text} [the same at either price_basis]")
    elif "USD" in _unit:
        METRICS[_name] = (_unit, f"{_text} [cost at either price_basis]")

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


def _system(d: Mapping[str, Any], perf: Mapping[str, Any], n: Any, life: Any) -> tuple[Any, Any]:
    """(host, facility) USD per installed GPU. Datacentre capacity is provisioned for
    each installed GPU at its nameplate IT power: perf's all-in facility_w_per_gpu before PUE
    (peak package power with its node's nameplate overhead, network and switches). The host is
    sized by GPU power unless the design carries its platform's own bill (host_usd_per_gpu)."""
    peak_w = np.asarray(perf["package_power_w"], float)
    host, facility = system_share(
        gpu_power_w=peak_w,
        it_power_w_per_gpu=np.asarray(perf["facility_w_per_gpu"], float)
        / (tech(d, "pue") * pue_factor(d)),
        host_usd_per_gpu_kw=tech(d, "host_usd_per_gpu_kw"),
        facility_capex_usd_per_kw=tech(d, "facility_capex_usd_per_kw"),
        lifetime_years=life,
        facility_lifetime_years=tech(d, "facility_lifetime_years"),
    )
    own = optional(d, "host_usd_per_gpu")  # a product's own platform bill (0: none)
    return np.where(own > 0, own, host), facility


def _network(
    d: Mapping[str, Any], installed: Any, is_cpo: Any, market: np.ndarray
) -> tuple[Any, Any]:
    """(cluster network USD at the price basis, tiers). Gear is quoted at list
    (technology/fabric.yaml) and brought to cost by network_list_markup; at market, switches
    (with OCS, cables, NICs) and optics each carry their class's gross margin (market.yaml)."""
    is_elec, _, _ = link_masks(d.get("link_type", "electrical"))
    t = {
        **{k: tech(d, k) for k in _NETWORK_KEYS},
        "scaleout_gbps_per_gpu": scaleout_gbps_per_gpu(d),
    }
    fabric = resolve_fabric(d)
    rack = is_rack_domain(d)
    mesh = is_mesh_domain(d)

    def list_usd(prices: Mapping[str, Any]) -> tuple[Any, Any]:
        return network_cost(
            installed=installed,
            links_per_gpu=value(d, "links_per_gpu"),
            lanes_per_link=value(d, "optics_per_link"),
            lane_gbps=value(d, "lane_gbps"),
            silicon_mm2=value(d, "die_area_mm2") * value(d, "dies_per_gpu"),
            is_electrical=is_elec,
            is_cpo=is_cpo,
            fabric=fabric,
            rack_domain=rack,
            mesh_domain=mesh,
            t=prices,
        )

    net_list, tiers = list_usd(t)
    list_markup = tech(d, "network_list_markup")
    at_cost = net_list / list_markup
    if not np.any(market):
        return at_cost, tiers
    switches = list_usd({**t, "pluggable_usd_per_gbps": 0.0, "cpo_usd_per_gbps": 0.0})[0]
    switches = switches / list_markup
    at_market = switches / (1.0 - tech(d, "switch_gross_margin")) + (at_cost - switches) / (
        1.0 - tech(d, "optics_gross_margin")
    )
    return np.where(market, at_market, at_cost), tiers


def is_market(d: Mapping[str, Any]) -> np.ndarray:
    """True where the design is priced at market (``price_basis``; default cost)."""
    basis = np.asarray(d.get("price_basis", "cost"))
    check_names(basis.ravel().tolist(), PRICE_BASES, "price_basis", what="price basis")
    return basis == "market"


def vendor_margin(d: Mapping[str, Any]) -> np.ndarray:
    """The gross margin of each design's GPU vendor (technology.gpu_gross_margin_<vendor>),
    capped below 1 so a swung margin cannot make a price infinite or negative."""
    vendor = np.asarray(d.get("vendor", "nvidia"))
    check_names(vendor.ravel().tolist(), VENDORS, "vendor", what="GPU vendor")
    margins = [tech(d, f"gpu_gross_margin_{v.replace('-', '_')}") for v in VENDORS]
    m = select([vendor == v for v in VENDORS], margins, default=np.nan)
    return np.minimum(np.asarray(m, float), 0.99)


_MODULE_KEYS = (
    "module_core_voltage_v",
    "module_amps_per_power_stage",
    "module_usd_per_power_stage",
    "module_pcb_mm2_per_amp",
    "module_pcb_layers",
    "module_pcb_usd_per_m2_layer",
    "thermal_liquid_usd_per_kw",
    "thermal_air_usd_per_kw",
)


def _module(d: Mapping[str, Any], perf: Mapping[str, Any], substrate_mm2: Any) -> ModuleCost:
    """The module around the package at its peak power (perf's package_power_w)."""
    return module_cost(
        package_power_w=perf["package_power_w"],
        substrate_mm2=substrate_mm2,
        is_liquid=np.asarray(d.get("cooling", "air")) == "liquid",
        **{k: tech(d, k) for k in _MODULE_KEYS},
    )


def _silicon_once_per_die(d: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """``silicon_lines`` computed once per distinct compute die of the batch.

    A batch of a million designs holds a few hundred die sizes, and the harvested yield's
    incomplete beta function is the costliest line of the cost model; every design gets
    exactly what it would get priced alone. Only the die area varies here: a batch whose
    aspect ratio or technology constants vary per design (a robust study's) is priced as it is.
    """
    area = np.asarray(d["die_area_mm2"])
    if area.ndim != 1 or area.size < DEDUP_MIN or area.dtype.kind != "f":
        return silicon_lines(d)
    if np.ndim(d.get("die_aspect_ratio", 1.0)) or any(
        isinstance(v, np.ndarray) and v.ndim for v in d["technology"].values()
    ):
        return silicon_lines(d)
    if not np.all(area > 0):  # NaN and signed zeros: priced as they are
        return silicon_lines(d)
    g = dedup([area])  # grouped bit for bit by hashing: cheaper than a sort
    if g is None or g.first.size * 4 > area.size:  # mostly distinct: nothing to share
        return silicon_lines(d)
    once = silicon_lines({**d, "die_area_mm2": area[g.first]})
    return {k: v[g.inv] if np.ndim(v) == 1 else v for k, v in once.items()}


_SILICON_METRICS = (
    "dies_per_wafer",
    "die_yield",
    "die_cost_usd",
    "cost_per_good_mm2_usd",
    "reticle_fits",
)


def cost_breakdown(design: Mapping[str, Any], perf: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """All cost metrics of ``design`` given its perf metrics (unprefixed names).

    Uses perf's tokens_per_s, tflops_per_gpu, package_power_w, facility_power_w and
    facility_w_per_gpu.
    """
    d = design
    si = _silicon_once_per_die(d)
    g = gpu_lines(d, si)
    is_cpo = g.pop("_is_cpo")
    mod = _module(d, perf, g.pop("_substrate_mm2"))
    module_usd = mod.total_usd  # a sum: taken once
    gpu_module = g["gpu_cost_usd"] + module_usd
    market = is_market(d)
    price = np.where(market, gpu_module / (1.0 - vendor_margin(d)), gpu_module)
    margin = price - gpu_module

    n = value(d, "cluster_size")
    installed = installed_gpus(n, value(d, "spare_fraction"))
    if np.any(optional(d, "spare_silicon_fraction")):  # spares per silicon (availability)
        installed = installed + silicon_spares(d)
    life = tech(d, "lifetime_years")
    host, facility = _system(d, perf, n, life)
    cooling = cooling_usd_per_gpu(d, perf["package_power_w"])
    system = host + facility + cooling
    net, tiers = _network(d, installed, is_cpo, market)
    capex = installed * (price + system) + net
    pool_usd: Any = 0.0
    if pool.used(d):  # a memory pool over optics: its DRAM, nodes and CPO ports
        pool_usd = pool.pool_usd(d, market=market)
        capex = capex + pool_usd
    energy = energy_cost(perf["facility_power_w"], life, tech(d, "electricity_usd_per_kwh"))
    maintenance = capex * tech(d, "maintenance_fraction_per_year") * life
    tco = capex + energy + maintenance
    pflops = n * np.asarray(perf["tflops_per_gpu"], float) / 1000.0

    out = {k: si[k] for k in _SILICON_METRICS}
    out.update(g)
    out.update(
        power_stages=mod.power_stages,
        power_delivery_cost_usd=mod.power_delivery_usd,
        module_board_mm2=mod.pcb_mm2,
        module_board_cost_usd=mod.pcb_usd,
        thermal_cost_usd=mod.thermal_usd,
        module_cost_usd=module_usd,
        gpu_module_cost_usd=gpu_module,
        gpu_price_usd=price,
        gpu_margin_usd=margin,
        gpu_usd_per_pflops=gpu_module
        / np.maximum(np.asarray(perf["tflops_per_gpu"], float) / 1000.0, 1e-12),
        host_cost_usd=host,
        facility_cost_usd=facility,
        cooling_cost_usd=cooling,
        system_share_usd=system,
        installed_gpus=installed,
        memory_pool_cost_usd=pool_usd,
        network_cost_usd=net,
        network_tiers=tiers,
        cluster_capex_usd=capex,
        energy_cost_usd=energy,
        maintenance_cost_usd=maintenance,
        tco_usd=tco,
        usd_per_pflops=tco / np.maximum(pflops, 1e-12),
        usd_per_gpu_hour=usd_per_gpu_hour(
            capex_usd=capex,
            opex_usd=energy + maintenance,
            gpus=n,
            lifetime_years=life,
            cost_of_capital_per_year=tech(d, "cost_of_capital_per_year"),
        ),
        usd_per_mtok=usd_per_mtok(tco, perf["tokens_per_s"], life),
    )
    return broadcast(out)


@builtin_evaluator(metrics=METRICS, needs=("perf", "availability"))
def evaluate_cost(
    design: Mapping[str, Any],
    *,
    perf: Mapping[str, Any] | None = None,
    availability: Mapping[str, Any] | None = None,
) -> dict[str, np.ndarray]:
    """Cost metrics of a (batch of) design(s), given the perf and availability metrics of the
    same designs (computed when not given)."""
    from objectives.availability import delivered_fraction, evaluate_availability

    if perf is None:
        from objectives.perf import evaluate_perf  # the perf model prices nothing; no cycle

        perf = evaluate_perf(design)
    if availability is None:
        availability = evaluate_availability(design, perf=perf)
    design = float_values(design)
    if has_pools(design):  # each pool priced with its own GPU, summed (objectives.cost.pools)
        out = pools_cost(design, perf, cost_breakdown)
    else:
        out = cost_breakdown(design, perf)
    lost = delivered_fraction(design, availability)
    out["usd_per_mtok_delivered"] = out["usd_per_mtok"] / np.maximum(lost, 1e-12)
    return broadcast(out)


evaluate_cost.waterfall = cost_waterfall  # type: ignore[attr-defined]
cost_waterfall.unit = "USD"  # type: ignore[attr-defined]  # the breakdown table's column
