"""Network, per-GPU system share and TCO arithmetic, as functions of numpy arrays."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from objectives.errors import unknown_name

OPTICAL_FABRICS = ("circuit", "packet")
HOURS_PER_YEAR = 365.25 * 24.0
SECONDS_PER_YEAR = HOURS_PER_YEAR * 3600.0


def installed_gpus(cluster_size: ArrayLike, spare_fraction: ArrayLike) -> np.ndarray:
    """Serving GPUs plus ceil(spare_fraction x serving) hot spares: the hardware paid for."""
    n = np.asarray(cluster_size, float)
    return n + np.ceil(np.asarray(spare_fraction, float) * n - 1e-9)


def clos_tiers(endpoints: ArrayLike, radix: ArrayLike) -> np.ndarray:
    """Tiers of a non-blocking folded-Clos (fat tree) of radix-k switches for N endpoints.

    t tiers reach k (k/2)^(t-1) endpoints: one switch for t = 1, k^2/2 for a leaf-spine.
    """
    n = np.asarray(endpoints, float)
    k = np.maximum(np.asarray(radix, float), 3.0)
    extra = np.ceil(np.log(np.maximum(n / k, 1.0)) / np.log(k / 2.0) - 1e-9)
    return 1.0 + np.maximum(extra, 0.0)


def packet_radix(port_gbps: ArrayLike, switch_gbps: ArrayLike, max_ports: ArrayLike) -> np.ndarray:
    """Ports of port_gbps one switch ASIC offers, at most its breakout limit."""
    k = np.floor(np.asarray(switch_gbps, float) / np.maximum(np.asarray(port_gbps, float), 1e-9))
    return np.clip(k, 2.0, np.asarray(max_ports, float))


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


def check_fabric(name: object) -> np.ndarray:
    fabric = np.asarray(name)
    for f in np.unique(fabric):
        if str(f) not in OPTICAL_FABRICS:
            raise unknown_name(
                "technology.optical_fabric", str(f), OPTICAL_FABRICS, what="optical fabric"
            )
    return fabric


def network_cost(
    *,
    installed: ArrayLike,
    links_per_gpu: ArrayLike,
    link_gbps: ArrayLike,
    is_electrical: ArrayLike,
    is_cpo: ArrayLike,
    optical_fabric: object,
    t: dict[str, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """(cluster network USD, tiers) for the scale-up links of every installed GPU.

    - electrical: a one-tier copper switch domain (NVSwitch-like) of
      electrical_scaleup_domain_gpus GPUs,
      plus a scale-out packet fat tree of scaleout_gbps_per_gpu with pluggable optics once the
      cluster outgrows one domain; tiers are the scale-out tiers (1 inside one domain).
    - optical, circuit fabric: every GPU link lands on an optical circuit switch port; the OCS
      is passive, so no transceiver on its side. It is flat (1 tier) at any size: the GPUs'
      links form a direct network whose multi-hop routing the performance model accounts for.
    - optical, packet fabric: a fat tree per link plane whose tiers grow with cluster size;
      switch-side optics are CPO when the GPU's are, pluggable otherwise.
    """
    n = np.asarray(installed, float)
    links = np.asarray(links_per_gpu, float)
    g = np.asarray(link_gbps, float)
    elec = np.asarray(is_electrical, bool)
    fabric = check_fabric(optical_fabric)
    common = dict(
        switch_gbps=t["packet_switch_gbps"],
        max_ports=t["packet_switch_max_ports"],
        switch_usd_per_gbps=t["packet_switch_usd_per_gbps"],
        fibre_usd_per_link=t["fibre_usd_per_link"],
    )

    copper = n * links * g * t["electrical_switch_usd_per_gbps"]
    scaleout, scaleout_tiers = packet_fabric_cost(
        n,
        1.0,
        t["scaleout_gbps_per_gpu"],
        optics_usd_per_gbps=t["pluggable_usd_per_gbps"],
        **common,
    )
    # The scale-out endpoint is a NIC: its own transceiver is a network cost, not GPU optics.
    scaleout = scaleout + n * t["scaleout_gbps_per_gpu"] * t["pluggable_usd_per_gbps"]
    outgrown = n > t["electrical_scaleup_domain_gpus"]
    electrical = copper + np.where(outgrown, scaleout, 0.0)
    electrical_tiers = np.where(outgrown, scaleout_tiers, 1.0)

    circuit = n * links * (t["ocs_usd_per_port"] + t["fibre_usd_per_link"])
    switch_optics = np.where(is_cpo, t["cpo_usd_per_gbps"], t["pluggable_usd_per_gbps"])
    packet, packet_tiers = packet_fabric_cost(
        n, links, g, optics_usd_per_gbps=switch_optics, **common
    )
    is_circuit = fabric == "circuit"
    optical = np.where(is_circuit, circuit, packet)
    optical_tiers = np.where(is_circuit, 1.0, packet_tiers)
    return np.where(elec, electrical, optical), np.where(elec, electrical_tiers, optical_tiers)


def system_share(
    *,
    gpu_power_w: ArrayLike,
    it_power_w_per_gpu: ArrayLike,
    host_usd_per_gpu_kw: ArrayLike,
    board_usd_per_gpu: ArrayLike,
    facility_capex_usd_per_kw: ArrayLike,
    lifetime_years: ArrayLike,
    facility_lifetime_years: ArrayLike,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(host, board, facility) USD per installed GPU.

    Host capacity (CPUs, DRAM, NICs, PSUs, chassis) is sized by the GPU power it feeds, so four
    quarter-power GPUs share what one full GPU needs. The datacentre (power delivery and
    cooling) is built per kW of IT load and lives longer than the cluster, which is charged
    lifetime / facility lifetime of it.
    """
    host = np.asarray(gpu_power_w, float) / 1000.0 * np.asarray(host_usd_per_gpu_kw, float)
    board = np.asarray(board_usd_per_gpu, float) + 0.0 * host
    share = np.minimum(
        np.asarray(lifetime_years, float) / np.asarray(facility_lifetime_years, float), 1.0
    )
    facility = (
        np.asarray(it_power_w_per_gpu, float)
        / 1000.0
        * np.asarray(facility_capex_usd_per_kw, float)
        * share
    )
    return host, board, facility


def energy_cost(
    facility_power_w: ArrayLike, lifetime_years: ArrayLike, usd_per_kwh: ArrayLike
) -> np.ndarray:
    """Electricity over the lifetime at the facility power (IT x PUE) the perf model reports."""
    kwh = (
        np.asarray(facility_power_w, float)
        / 1000.0
        * np.asarray(lifetime_years, float)
        * HOURS_PER_YEAR
    )
    return kwh * np.asarray(usd_per_kwh, float)


def usd_per_mtok(
    tco_usd: ArrayLike, tokens_per_s: ArrayLike, lifetime_years: ArrayLike
) -> np.ndarray:
    """TCO per million output tokens served over the lifetime at full load.

    A cluster that serves nothing (tokens_per_s = 0, e.g. the model does not fit) must still
    give a finite number for the engine: lifetime tokens are floored at one token, so its cost
    is TCO x 1e6 per Mtok, far above any real design (perf.model_fits excludes it anyway).
    """
    tokens = np.asarray(tokens_per_s, float) * np.asarray(lifetime_years, float) * SECONDS_PER_YEAR
    return np.asarray(tco_usd, float) * 1e6 / np.maximum(tokens, 1.0)
