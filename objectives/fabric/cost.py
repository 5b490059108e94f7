"""Network bill of each scale-up fabric, at list prices (the cost model converts the basis).

Counts follow the topology of ``objectives.fabric.topology``: switch ports per link for the
switched domain and the fat tree, OCS ports only on links that leave a directly wired block,
one cable per GPU-to-GPU link, and the scale-out fat tree of a switched cluster that outgrows
one domain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from objectives._evaluator import select
from objectives.fabric.topology import (
    DIRECT,
    OCS,
    PACKET,
    SWITCHED,
    clos_tiers,
    fabric_code,
    fibres_per_link,
    ocs_ports_per_gpu,
    packet_radix,
    reach_gpus,
    switched_domain_gpus,
)


def packet_fabric_cost(
    endpoints: ArrayLike,
    links_per_endpoint: ArrayLike,
    port_gbps: ArrayLike,
    *,
    switch_gbps: ArrayLike,
    max_ports: ArrayLike,
    switch_usd_per_gbps: ArrayLike,
    optics_usd_per_gbps: ArrayLike,
    fibre_usd_per_link: ArrayLike,
) -> tuple[np.ndarray, np.ndarray]:
    """(USD, tiers) of a fat tree with one plane per endpoint link (rail-optimised).

    Per endpoint link a t-tier fat tree uses 2t - 1 switch ports, t cables, and a transceiver
    at every switch port (the endpoint's own transceiver is counted on the endpoint side).
    """
    t = clos_tiers(endpoints, packet_radix(port_gbps, switch_gbps, max_ports))
    links = np.asarray(endpoints, float) * np.asarray(links_per_endpoint, float)
    g = np.asarray(port_gbps, float)
    per_link = (2 * t - 1) * g * (
        np.asarray(switch_usd_per_gbps, float) + np.asarray(optics_usd_per_gbps, float)
    ) + t * np.asarray(fibre_usd_per_link, float)
    return links * per_link, t


def _packet_prices(t: Mapping[str, ArrayLike]) -> dict[str, ArrayLike]:
    """The packet switch and cable prices of ``packet_fabric_cost``."""
    return {
        "switch_gbps": t["packet_switch_gbps"],
        "max_ports": t["packet_switch_max_ports"],
        "switch_usd_per_gbps": t["packet_switch_usd_per_gbps"],
        "fibre_usd_per_link": t["fibre_usd_per_link"],
    }


def _switched_cost(
    n: np.ndarray,
    links: np.ndarray,
    g: np.ndarray,
    silicon_mm2: ArrayLike,
    elec: np.ndarray,
    optics: np.ndarray,
    t: Mapping[str, Any],
    rack: np.ndarray,
    mesh: np.ndarray | bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """(USD, tiers) of a switched scale-up domain: switch ports per Gb/s for every GPU link,
    switch-side transceivers and a fibre per link when optical, the switch trays of a rack-scale
    copper domain per GPU in proportion to its silicon, plus a scale-out packet fat tree with
    pluggable optics once the cluster outgrows one domain. A ``mesh`` domain wires its GPUs to
    each other with no switch between them: no switch ports and no switch-side optics."""
    rack_silicon = t.get("rack_silicon_mm2", np.inf)
    domain = switched_domain_gpus(
        g,
        silicon_mm2,
        elec,
        switch_gbps=t["electrical_switch_gbps"],
        domain_silicon_mm2=np.where(rack, rack_silicon, t["switched_domain_silicon_mm2"]),
    )
    trays = np.where(
        rack & elec,
        n * np.asarray(silicon_mm2, float) / rack_silicon * t.get("rack_domain_usd_per_rack", 0.0),
        0.0,
    )
    scaleout_gbps = t["scaleout_gbps_per_gpu"]
    scaleout, scaleout_tiers = packet_fabric_cost(
        n, 1.0, scaleout_gbps, optics_usd_per_gbps=t["pluggable_usd_per_gbps"], **_packet_prices(t)
    )
    # The scale-out endpoint is a NIC: its own transceiver is a network cost, not GPU optics.
    scaleout = scaleout + n * scaleout_gbps * t["pluggable_usd_per_gbps"]
    outgrown = n > domain
    switched = (
        np.where(mesh, 0.0, n * links * g * (t["electrical_switch_usd_per_gbps"] + optics))
        + np.where(elec, 0.0, n * links * t["fibre_usd_per_link"])
        + np.where(outgrown, scaleout, 0.0)
        + trays
    )
    return switched, np.where(outgrown, scaleout_tiers, 1.0)


def network_cost(
    *,
    installed: ArrayLike,
    links_per_gpu: ArrayLike,
    lanes_per_link: ArrayLike,
    lane_gbps: ArrayLike,
    silicon_mm2: ArrayLike,
    is_electrical: ArrayLike,
    is_cpo: ArrayLike,
    fabric: np.ndarray,
    t: Mapping[str, ArrayLike],
    rack_domain: ArrayLike = False,
    mesh_domain: ArrayLike = False,
) -> tuple[np.ndarray, np.ndarray]:
    """(cluster network USD at list prices, tiers) for the scale-up links of every GPU.

    - switched: switch ports per Gb/s (NVSwitch baseboard) for every GPU link, switch-side
      transceivers when the links are optical, plus a scale-out packet fat tree with pluggable
      optics once the cluster outgrows one domain; tiers are the scale-out tiers (1 inside).
      ``rack_domain``: the copper domain is one rack (``rack_silicon_mm2``, its switch trays
      at ``rack_domain_usd_per_rack``) instead of one baseboard. ``mesh_domain``: the domain
      is a full mesh of GPU-to-GPU links (AMD Infinity Fabric): no switch ports.
    - packet: a fat tree per link plane; switch-side optics are CPO when the GPU's are,
      pluggable for pluggable links, none (copper DAC) for electrical links.
    - ocs: one cable per link inside a block (one rack of compute silicon,
      ``rack_silicon_mm2``), an OCS port per fibre of each link that leaves it
      (``ocs_ports_per_fibre``, 1 with circulators), fibres carrying ``wdm_wavelengths_per_fibre``
      lanes; no transceiver on the OCS side (it is passive). 1 tier.
    - direct: one cable per link, no switch. 1 tier (0 switches).
    """
    n = np.asarray(installed, float)
    links = np.asarray(links_per_gpu, float)
    lanes = np.asarray(lanes_per_link, float)
    g = lanes * np.asarray(lane_gbps, float)
    elec = np.asarray(is_electrical, bool)
    cpo = np.asarray(is_cpo, bool)
    code = fabric_code(np.asarray(fabric))
    fibre = t["fibre_usd_per_link"]
    optics = np.where(elec, 0.0, np.where(cpo, t["cpo_usd_per_gbps"], t["pluggable_usd_per_gbps"]))
    cables = n * links / 2 * fibre
    present = {c: bool(np.any(code == c)) for c in (SWITCHED, PACKET, OCS)}
    zero = np.zeros(np.broadcast(n, links, g, code).shape)
    switched_tiers: Any = 1.0
    packet_tiers: Any = 1.0
    switched = packet = zero
    ocs = zero

    if present[SWITCHED]:  # switched domain (+ scale-out beyond it)
        rack = np.asarray(rack_domain, bool)
        mesh = np.asarray(mesh_domain, bool)
        switched, switched_tiers = _switched_cost(
            n, links, g, silicon_mm2, elec, optics, t, rack, mesh
        )

    if present[PACKET]:
        packet, packet_tiers = packet_fabric_cost(
            n, links, g, optics_usd_per_gbps=optics, **_packet_prices(t)
        )

    if present[OCS]:
        ports = n * ocs_ports(
            cluster=n, links_per_gpu=links, lanes_per_link=lanes, silicon_mm2=silicon_mm2, t=t
        )
        ocs = ports * t["ocs_usd_per_port"] + cables + ports / 2 * fibre

    usd = select(
        [code == SWITCHED, code == PACKET, code == OCS, code == DIRECT],
        [switched, packet, ocs, cables],
    )
    tiers = select([code == SWITCHED, code == PACKET], [switched_tiers, packet_tiers], 1.0)
    return usd, tiers


def ocs_ports(
    *,
    cluster: ArrayLike,
    links_per_gpu: ArrayLike,
    lanes_per_link: ArrayLike,
    silicon_mm2: ArrayLike,
    t: Mapping[str, ArrayLike],
) -> np.ndarray:
    """OCS ports one GPU of an ``ocs`` fabric uses (for power and reporting); a block is one
    rack of compute silicon."""
    block = reach_gpus(t["rack_silicon_mm2"], silicon_mm2)
    fibres = fibres_per_link(lanes_per_link, t["wdm_wavelengths_per_fibre"])
    return ocs_ports_per_gpu(cluster, links_per_gpu, fibres, block, t["ocs_ports_per_fibre"])
