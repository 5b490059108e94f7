"""Power of one GPU at its workload, and of the cluster.

A GPU's power is leakage plus dynamic power at the achieved activity on the DVFS curve, HBM
energy per bit actually moved, and link power (links are always up), behind a voltage regulator.
Cluster IT power adds each GPU's share of host and network; facility power multiplies by PUE.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import one_value, tech, value
from objectives.fabric.cost import ocs_ports
from objectives.fabric.topology import OCS, PACKET, SWITCHED, is_mesh_domain
from objectives.perf.hardware import compute_w_per_mm2


def gpu_power_w(
    d: Mapping[str, Any],
    hw: Mapping[str, np.ndarray],
    compute_utilization: np.ndarray,
    hbm_bytes_per_s: np.ndarray,
) -> np.ndarray:
    """Package power at a given tensor utilization and HBM traffic."""
    # A serving GPU keeps its clocks, schedulers and caches busy even when the tensor cores wait
    # on memory, so activity has a floor above zero. It reaches full activity (the package's
    # TDP at full HBM traffic) at a tensor utilization below 1: measured H100s serving at ~50 %
    # of peak tensor throughput already draw ~TDP, and a busier one is held there by its power
    # limit (the clock it loses is in the fitted efficiencies), so power never exceeds TDP.
    floor = tech(d, "compute_busy_activity_floor")
    busy = np.clip(compute_utilization / tech(d, "compute_utilization_at_full_power"), 0.0, 1.0)
    activity = floor + (1 - floor) * busy
    logic_w = _architecture(
        hw, compute_w_per_mm2(d, hw["clock_eff_ghz"], activity) * hw["logic_area_mm2"]
    )
    hbm_w = hbm_bytes_per_s * 8 * tech(d, "hbm_pj_per_bit") * 1e-12
    return (logic_w + hbm_w + hw["link_w"]) / tech(d, "vrm_efficiency")


def idle_gpu_power_w(d: Mapping[str, Any], hw: Mapping[str, np.ndarray]) -> np.ndarray:
    """A powered GPU with no work: leakage and links only."""
    logic_w = _architecture(
        hw, compute_w_per_mm2(d, hw["clock_eff_ghz"], 0.0) * hw["logic_area_mm2"]
    )
    return (logic_w + hw["link_w"]) / tech(d, "vrm_efficiency")


def _architecture(hw: Mapping[str, np.ndarray], logic_w: Any) -> Any:
    """Logic power of the architecture (its ``compute_power_factor`` times the node's)."""
    factor = hw.get("compute_power_factor")
    if factor is None or not np.any(one_value(factor) != 1.0):
        return logic_w
    return logic_w * factor


def overhead_w_per_gpu(d: Mapping[str, Any], hw: Mapping[str, np.ndarray]) -> np.ndarray:
    """Host (CPU, DRAM, NICs, fans) and scale-out network share of one GPU, by its TDP (the
    package as built: an operator's power limit lowers the clock, not the host)."""
    per_watt = tech(d, "host_power_per_gpu_watt") + tech(d, "network_power_per_gpu_watt")
    return per_watt * hw.get("node_basis_w", hw["package_power_w"])


def fabric_w_per_gpu(d: Mapping[str, Any], hw: Mapping[str, np.ndarray]) -> np.ndarray:
    """Scale-up switch power per GPU (the GPU's own link power is in the package).

    Switched and packet fabrics: every bit crosses ``fabric_hops`` switch chips, each costing
    the switch's pJ/bit (ASIC power / per-direction capacity) plus a switch-side transceiver
    for optical links. An OCS is passive optics: a fixed power per port in use. A direct torus
    has no switch, nor has a ``mesh`` domain (each GPU wired to every other, as AMD's Infinity
    Fabric): its links' power is in the package. Always on, like the links.
    """
    code = hw["fabric_code"]
    if code.ndim == 1 and code.size > 1 and code.strides == (0,):
        code = code[:1]  # one fabric broadcast over the batch: compared once (same values)
    switched_or_packet = (code == SWITCHED) | (code == PACKET)
    through: Any = 0.0  # read only where a fabric has switches
    if np.any(switched_or_packet):
        side = hw["switch_side_pj_per_bit"]
        electrical, packet = (tech(d, f"{k}_switch_pj_per_bit") for k in ("electrical", "packet"))
        switch = np.where(code == SWITCHED, electrical, packet)
        through = hw["net_gbps_per_gpu"] * 1e9 * hw["fabric_hops"] * (switch + side) * 1e-12
        through = np.where(is_mesh_domain(d), 0.0, through)  # no switch chip to cross
    if not np.any(code == OCS):
        return np.where(switched_or_packet, through, 0.0)
    ports = ocs_ports(
        cluster=value(d, "cluster_size"),
        links_per_gpu=value(d, "links_per_gpu"),
        lanes_per_link=value(d, "optics_per_link"),
        silicon_mm2=value(d, "die_area_mm2") * value(d, "dies_per_gpu"),
        t={
            k: tech(d, k)
            for k in ("rack_silicon_mm2", "wdm_wavelengths_per_fibre", "ocs_ports_per_fibre")
        },
    )
    ocs = ports * tech(d, "ocs_w_per_port")
    return np.where(switched_or_packet, through, np.where(code == OCS, ocs, 0.0))
