"""What a scale-up fabric lets a parallel group do: bandwidth, latency, hops, feasibility.

Per design (``fabric_hw``): the fabric code, ports per GPU, the switched domain size, the switch
traversals of one message and whether the fabric can carry the links at all. Per candidate
group (``group_links``): the bandwidth and per-step latency its collectives see, the torus
dimensions a direct/OCS fabric offers, and whether the topology can form the group at all.

Topology rules (each one a documented approximation, vectorized over designs):

- switched: every GPU of a domain is one switch hop from every other; a domain holds at most
  radix = floor(switch_gbps / link_gbps) GPUs (each GPU puts one link on each switch plane),
  and with copper links at most one baseboard of compute silicon (HGX). Bigger groups fall back
  to the scale-out NICs (slow, still feasible).
- rack: a switched fabric whose copper domain is one rack of compute silicon (NVL72-class:
  switch trays and a copper spine; liquid-cooled).
- mesh: a switched domain without switches: every GPU of the domain has a link of its own to
  every other (AMD Instinct's Infinity Fabric, 7 links among 8 OAMs on one baseboard). Timed
  as ``switched``; no switch power (objectives.perf.power) and no switch ports
  (objectives.fabric.cost).
- packet: non-blocking, 2t - 1 switch traversals for t tiers; every group is feasible.
- direct with copper links reaches one rack of compute silicon (``rack_silicon_mm2``); beyond
  it is infeasible. Reach is counted in silicon, never in GPUs: a cluster of small dies reaches
  exactly as far as one of big dies with the same total silicon.
- ocs / direct: the GPUs' P ports form a torus of k = floor(P / 2) dimensions; ring and torus
  collectives use ports in pairs (2 floor(P/2) / P of the bandwidth). A 1-port GPU cannot close
  a ring or a pipeline chain, so groups of more than 2 GPUs are infeasible. A ``direct`` group
  is a sub-mesh without wraparound links, so its ring runs at half the link bandwidth; the OCS
  closes the wraparound of any slice (TPU v4).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from objectives._evaluator import one_value, select, tech, value
from objectives._groups import on_whole_numbers
from objectives.choices import checked, compact

FABRICS = ("switched", "packet", "ocs", "direct")
RACK = "rack"
"""A switched fabric whose copper domain spans one rack (NVL72-class) instead of one board."""
MESH = "mesh"
"""A switched domain wired as a full mesh of GPU-to-GPU links: no switch chip to buy."""
CHOICES = ("auto", *FABRICS, RACK, MESH)
OPTICAL_FABRICS = ("circuit", "packet")  # technology.optical_fabric, what ``auto`` follows
SWITCHED, PACKET, OCS, DIRECT = range(4)
MAX_TORUS_DIMS = 3  # the torus collectives use at most 3 dimensions (TPU v4: 3D torus)


def resolve_fabric(d: Mapping[str, Any]) -> np.ndarray:
    """The fabric name of every design: ``scaleup_fabric``, or for ``auto`` the NVSwitch-like
    domain for copper links and ``technology.optical_fabric`` (circuit -> ocs) for optics."""
    choice = _choice(d)
    link = compact(d.get("link_type", "electrical"))
    optical = checked(
        d["technology"].get("optical_fabric", "circuit"),
        OPTICAL_FABRICS,
        "technology.optical_fabric",
        "optical fabric",
    )
    optical_name = np.where(optical == "packet", "packet", "ocs")
    auto = np.where(link == "electrical", "switched", optical_name)
    return np.where(choice == "auto", auto, choice)


def _choice(d: Mapping[str, Any]) -> np.ndarray:
    """The design's ``scaleup_fabric`` names, each checked against ``CHOICES``."""
    return checked(d.get("scaleup_fabric", "auto"), CHOICES, "scaleup_fabric", "fabric")


def is_rack_domain(d: Mapping[str, Any]) -> np.ndarray:
    """True where the design's switched copper domain is a rack (``scaleup_fabric: rack``)."""
    return _choice(d) == RACK


def is_mesh_domain(d: Mapping[str, Any]) -> np.ndarray:
    """True where the design's switched domain is a switchless full mesh (``scaleup_fabric:
    mesh``)."""
    return _choice(d) == MESH


def reach_gpus(reach_silicon_mm2: ArrayLike, silicon_mm2: ArrayLike) -> np.ndarray:
    """GPUs of ``silicon_mm2`` compute silicon each that fit a reach given in silicon (>= 1)."""
    reach = np.floor(np.asarray(reach_silicon_mm2, float) / np.asarray(silicon_mm2, float) + 1e-9)
    return np.maximum(reach, 1.0)


def domain_silicon_mm2(d: Mapping[str, Any]) -> np.ndarray:
    """Compute silicon a switched copper domain holds: one baseboard or one rack."""
    board = tech(d, "switched_domain_silicon_mm2")
    rack = is_rack_domain(d)
    if not np.any(rack):
        return board
    return np.where(rack, tech(d, "rack_silicon_mm2"), board)


def fabric_code(names: np.ndarray) -> np.ndarray:
    """Float code of each fabric name (SWITCHED ... DIRECT), for numeric grouping; a rack and a
    mesh are switched fabrics (their domain and price differ: ``is_rack_domain``,
    ``is_mesh_domain``)."""
    names = np.where((names == RACK) | (names == MESH), "switched", names)
    return select([names == f for f in FABRICS], [float(i) for i in range(len(FABRICS))], -1.0)


def packet_radix(port_gbps: ArrayLike, switch_gbps: ArrayLike, max_ports: ArrayLike) -> np.ndarray:
    """Ports of port_gbps one switch ASIC offers, at most its breakout limit."""
    k = np.floor(np.asarray(switch_gbps, float) / np.maximum(np.asarray(port_gbps, float), 1e-9))
    return np.clip(k, 2.0, np.asarray(max_ports, float))


def clos_tiers(endpoints: ArrayLike, radix: ArrayLike) -> np.ndarray:
    """Tiers of a non-blocking folded-Clos (fat tree) of radix-k switches for N endpoints.

    t tiers reach k (k/2)^(t-1) endpoints: one switch for t = 1, k^2/2 for a leaf-spine.
    """
    n = np.asarray(endpoints, float)
    k = np.maximum(np.asarray(radix, float), 3.0)
    extra = np.ceil(np.log(np.maximum(n / k, 1.0)) / np.log(k / 2.0) - 1e-9)
    return 1.0 + np.maximum(extra, 0.0)


def switched_domain_gpus(
    link_gbps: ArrayLike,
    silicon_mm2: ArrayLike,
    is_electrical: ArrayLike,
    *,
    switch_gbps: ArrayLike,
    domain_silicon_mm2: ArrayLike,
) -> np.ndarray:
    """GPUs in one switched domain: the switch radix at the link rate, and for copper the
    compute silicon one baseboard holds (HGX H100: 8 x 814 mm2). At least 1."""
    radix = np.floor(np.asarray(switch_gbps, float) / np.maximum(np.asarray(link_gbps), 1e-9))
    reach = np.floor(np.asarray(domain_silicon_mm2, float) / np.asarray(silicon_mm2) + 1e-9)
    reach = np.where(np.asarray(is_electrical, bool), reach, np.inf)
    return np.maximum(np.minimum(radix, reach), 1.0)


def torus_steps(p: ArrayLike, dims: ArrayLike) -> np.ndarray:
    """Latency steps of one reduce-scatter (or all-gather) over p GPUs on a torus of up to
    ``dims`` dimensions: min over j <= dims of j (ceil(p^(1/j)) - 1), each a neighbour hop.
    ``dims`` 0 (no torus) is priced like one dimension (a ring)."""
    gpus = np.maximum(np.asarray(p, float), 1.0)
    k = np.asarray(dims, float)
    best = [gpus - 1.0]  # one dimension: a ring; then the best of up to j dimensions
    for j in range(2, MAX_TORUS_DIMS + 1):
        side = np.ceil(gpus ** (1.0 / j) - 1e-9)
        best.append(np.minimum(best[-1], j * (side - 1.0)))
    out = best[0]
    for j in range(2, MAX_TORUS_DIMS + 1):
        if np.any(k >= j):
            out = np.where(k >= j, best[j - 1], out)
    return out


def fabric_hw(d: Mapping[str, Any], link_type: np.ndarray) -> dict[str, np.ndarray]:
    """Per-design fabric figures the parallelism search reads (see the module docstring)."""
    code = fabric_code(resolve_fabric(d))
    ports = value(d, "links_per_gpu")
    link_gbps = value(d, "optics_per_link") * value(d, "lane_gbps")
    link = compact(link_type)
    elec = link == "electrical"
    silicon = value(d, "die_area_mm2") * value(d, "dies_per_gpu")
    domain: Any = np.inf  # read only where the fabric is a switched one
    if np.any(code == SWITCHED):
        domain = switched_domain_gpus(
            link_gbps,
            silicon,
            elec,
            switch_gbps=tech(d, "electrical_switch_gbps"),
            domain_silicon_mm2=domain_silicon_mm2(d),
        )
        if "scaleup_domain_gpus" in d:  # a product's own copper domain (HGX 8, NVL72 72)
            declared = value(d, "scaleup_domain_gpus")
            if np.any(declared > 0):
                domain = np.where(declared > 0, declared, domain)
    tiers: Any = 1.0  # read only where the fabric is a packet one
    if np.any(code == PACKET):
        radix = packet_radix(
            link_gbps, tech(d, "packet_switch_gbps"), tech(d, "packet_switch_max_ports")
        )
        tiers = clos_tiers(value(d, "cluster_size"), radix)
    hops = select([code == SWITCHED, code == PACKET], [1.0, 2 * tiers - 1], 0.0)
    # An optical circuit switch steers light: copper links cannot use it. A copper torus
    # reaches one rack of compute silicon (TPU v4: copper inside a one-rack cube, optics beyond;
    # NVL72: a copper spine over one rack), whatever the size of the dies it holds.
    ok = ~((code == OCS) & elec)
    direct = (code == DIRECT) & elec
    if np.any(direct):  # (read only where a direct torus has copper links)
        beyond_rack = value(d, "cluster_size") > reach_gpus(tech(d, "rack_silicon_mm2"), silicon)
        ok = ok & ~(direct & beyond_rack)
    # A rack-scale copper domain is liquid-cooled (technology.rack_domain_needs_liquid).
    rack = is_rack_domain(d)
    if np.any(rack) and bool(np.any(tech(d, "rack_domain_needs_liquid"))):
        air = compact(d.get("cooling", "air")) != "liquid"
        ok = ok & ~(rack & air & elec & (code == SWITCHED))
    # pJ/bit of a switch-side transceiver (none for copper), for the fabric's power
    side = select(
        [link == "cpo", link == "pluggable"],
        [tech(d, "cpo_link_pj_per_bit"), tech(d, "pluggable_link_pj_per_bit")],
        0.0,
    )
    # Dies of one package share its ports: a collective entering on one die's port and
    # leaving on another's crosses the die-to-die link, (dies - 1) / dies of its bytes.
    dies = one_value(value(d, "dies_per_gpu")) if "dies_per_gpu" in d else np.asarray(1.0)
    d2d = one_value(np.asarray(d.get("d2d_tbps", 0.0), float)) * 1e12 / 2  # bytes/s each way
    multi = (dies > 1) & (d2d > 0) & (tech(d, "d2d_collective_penalty") > 0)
    cross = np.where(multi, (dies - 1) / np.maximum(dies, 1.0) / np.maximum(d2d, 1e-30), 0.0)
    out = {
        "d2d_s_per_byte": cross,
        "d2d_latency_s": np.where(multi, tech(d, "d2d_hop_latency_s"), 0.0),
        "fabric_code": code,
        "ports": ports,
        "domain_gpus": np.where(code == SWITCHED, domain, np.inf),
        "fabric_hops": hops,
        "fabric_tiers": np.where(code == PACKET, tiers, 1.0),
        "fabric_ok": ok.astype(float),
        "switch_side_pj_per_bit": side,
    }
    shape = np.broadcast_shapes(
        *(np.shape(v) for v in out.values()),
        np.shape(link_type),
        np.shape(value(d, "cluster_size")),
    )
    return {k: np.broadcast_to(np.asarray(v, float), shape) for k, v in out.items()}


def group_links(
    d: Mapping[str, Any],
    h: dict[str, Any],
    tp: np.ndarray,
    pp: np.ndarray,
    cluster: Any,
) -> None:
    """Per-candidate bandwidths (bytes/s), latencies and feasibility, written into ``h``.

    Reads ``net_bytes_per_s`` (the GPU's achievable per-direction bandwidth over all its ports)
    and the ``fabric_hw`` figures; writes ``net_bytes_per_s`` (tensor-parallel collectives),
    ``p2p_bytes_per_s`` (pipeline sends), ``dp_bytes_per_s`` (data-parallel, when ``cluster``
    is given), ``alpha_s`` (per collective step), ``torus_dims`` (0 on switched fabrics) and
    ``topology_ok`` (the fabric can form the tp x pp group). A package of several dies pays
    its die-to-die link on every collective: (dies - 1) / dies of the bytes cross it, at
    ``d2d_tbps`` / 2 each way, and one ``d2d_hop_latency_s`` per step.
    """
    code = h["fabric_code"]
    ports = h["ports"]
    bw = h["net_bytes_per_s"]
    switched = code == SWITCHED
    torus = code >= OCS
    pairs = np.floor(ports / 2)
    # Per design (no candidate axis): what a torus leaves of the GPU's bandwidth.
    ring_frac = np.where(ports >= 2, 2 * pairs / ports, 1.0)  # ports used in pairs
    mesh = np.where(code == DIRECT, 0.5, 1.0)  # a direct-torus group lacks its wraparound
    forward = np.maximum(pairs, 1.0) / ports  # a pipeline send leaves on the forward ports
    tp_bw = np.where(torus, bw * ring_frac * mesh, bw)
    p2p_bw = np.where(torus, bw * forward, bw)
    dp_bw = np.where(torus, bw * ring_frac, bw)
    cross = h.get("d2d_s_per_byte")
    if cross is not None and np.any(cross > 0):  # a multi-die package: its die-to-die link
        tp_bw, p2p_bw, dp_bw = (1.0 / (1.0 / b + cross) for b in (tp_bw, p2p_bw, dp_bw))
    if switched.any():  # groups beyond a switched domain go over the scale-out NICs
        scaleout = h["scaleout_gbps_per_gpu"] * 1e9 / 8 * tech(d, "network_efficiency")
        domain = h["domain_gpus"]
        tp_bw = np.where(switched & (tp > domain), scaleout, tp_bw)
        p2p_bw = np.where(switched & (tp * pp > domain), scaleout, p2p_bw)
        if cluster is not None:
            dp_bw = np.where(switched & (cluster > domain), scaleout, dp_bw)
    h["net_bytes_per_s"], h["p2p_bytes_per_s"] = tp_bw, p2p_bw
    if cluster is not None:
        h["dp_bytes_per_s"] = dp_bw
    base = tech(d, "collective_step_latency_s")
    h["alpha_s"] = base + np.maximum(h["fabric_hops"] - 1.0, 0.0) * tech(d, "switch_hop_latency_s")
    if "d2d_latency_s" in h:
        h["alpha_s"] = h["alpha_s"] + h["d2d_latency_s"]
    h["torus_dims"] = np.where(torus, np.minimum(np.maximum(pairs, 1.0), MAX_TORUS_DIMS), 0.0)
    lonely = torus & (ports < 2)  # a 1-port GPU on a torus: pairs only
    bad = h["fabric_ok"] <= 0
    if not (lonely.any() or bad.any()):
        h["topology_ok"] = np.ones((1, 1), dtype=bool)
    else:
        h["topology_ok"] = ~bad & ~(lonely & (tp * pp > 2))


def fibres_per_link(lanes_per_link: ArrayLike, wavelengths_per_fibre: ArrayLike) -> np.ndarray:
    """Fibres one link needs when each fibre carries ``wavelengths_per_fibre`` lanes (WDM)."""
    lanes = np.asarray(lanes_per_link, float)
    return np.maximum(np.ceil(lanes / np.asarray(wavelengths_per_fibre, float) - 1e-9), 1.0)


def ocs_ports_per_gpu(
    cluster: ArrayLike,
    ports: ArrayLike,
    fibres: ArrayLike,
    block_gpus: ArrayLike,
    ports_per_fibre: ArrayLike,
) -> np.ndarray:
    """OCS ports one GPU uses: only links that leave its block (TPU v4: the cube's faces).
    A block is one rack of compute silicon (``reach_gpus(rack_silicon_mm2, ...)`` GPUs).

    A block of b GPUs wired as a k-dimensional torus (k = min(floor(P/2), 3)) has side
    b^(1/k); in every dimension one link in ``side`` leaves the block through the OCS. A
    cluster of one block needs no OCS; a 1-port GPU sends everything through it.
    """
    p = np.asarray(ports, float)
    one = p[:1] if p.ndim == 1 and p.size > 1 and p.strides == (0,) else p  # broadcast: once
    k = np.minimum(np.floor(one / 2), MAX_TORUS_DIMS)
    block = np.asarray(block_gpus, float)
    frac = _leaving(block, k)
    frac = np.where(np.asarray(cluster, float) > block, frac, 0.0)
    return p * np.asarray(fibres, float) * frac * np.asarray(ports_per_fibre, float)


def _leaving(block: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The fraction of a block's links in a dimension that leave it, 1 / max(side, 1) with
    side = block^(1/k) (1 without a torus dimension). A batch's blocks are whole numbers of
    GPUs (``reach_gpus``), a few hundred sizes: each size's fraction is computed once
    (``on_whole_numbers``)."""

    def frac(sizes: np.ndarray) -> np.ndarray:
        side = sizes ** (1.0 / np.maximum(k, 1.0))
        return np.where(k >= 1, 1.0 / np.maximum(side, 1.0), 1.0)

    return on_whole_numbers(frac, block) if np.size(k) == 1 else frac(block)
