"""Memory pooled over optics: weights and/or the KV cache in a shared DRAM pool every GPU reaches
over its own co-packaged optical links (``memory_pool: none | weights | kv | both``).

The lever against weight replication: a cluster of small GPUs serving a 70B model holds one copy
of the weights per replica in HBM, so the smaller the GPU the more of its HBM goes to copies.
With ``weights`` the pool holds one copy for every replica; each GPU keeps only a staging buffer
of ``pool_staging_layers`` layers of its stage in HBM and streams its stage's weights from the
pool every step. With ``kv`` the KV cache lives in the pool (a tier beside HBM: the room the
engine may use is its HBM plus its share of the pool) and every step reads it from there.

What the pool costs a step: the bytes it reads from the pool (the stage's weights on this GPU,
at most the step's HBM traffic, as an MoE step streams only its routed experts; the KV entries
read and written) over the GPU's pool bandwidth, plus one access latency (the reads of a step
are known at its start and prefetched behind each other). The pool runs beside HBM, so the step
takes the longer of the two (``pool_seconds``); pooled weights are staged through HBM, whose
traffic is counted as without the pool.

The pool's price (DRAM, its memory nodes, the CPO ports at both ends of every pool link) and
power (DRAM background and access energy, the links at their provisioned rate, as the scale-up
links) are ``pool_usd`` and ``pool_power_w``; its optical engines take die edge
(``shoreline_used_fraction``). Constants: objectives/presets/technology/pool.yaml. Serving only;
``none`` (the default) leaves every figure as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import tech, value
from objectives.choices import checked
from objectives.errors import ContextError
from objectives.package import optional
from objectives.params import MEMORY_POOLS
from objectives.perf import moe

#: Per-GPU figures the pool adds to the hardware (``hw``) when a design uses it; the parallelism
#: search reads them (and groups designs by them: the pool's KV room depends on the cluster size).
POOL_HW = (
    "pool_weights",  # 1 where the weights are pooled
    "pool_kv",  # 1 where the KV cache is pooled
    "pool_bytes_per_s",  # achievable pool bandwidth of one GPU
    "pool_latency_s",  # one exposed pool access per step
    "pool_kv_bytes",  # KV room one GPU has in the pool
    "pool_fits",  # 1 if the pool holds one copy of the weights (or holds none)
)
_MIN_BYTES_PER_S = 1.0  # a pool without bandwidth: steps take ~forever, but stay finite


def kinds(d: Mapping[str, Any]) -> np.ndarray:
    """Every design's ``memory_pool`` (one value when the batch shares it), checked."""
    return checked(d.get("memory_pool", "none"), MEMORY_POOLS, "memory_pool", "memory pool")


def used(d: Mapping[str, Any]) -> bool:
    """True if some design of the batch keeps something in a pool."""
    return bool(np.any(kinds(d) != "none"))


def _flags(kind: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    both = kind == "both"  # two comparisons: np.isin costs ~15 us a call
    w = ((kind == "weights") | both).astype(float)
    k = ((kind == "kv") | both).astype(float)
    return w, k


def weight_copy_bytes(a: Any, s: Any) -> float:
    """Bytes of one full copy of the model's weights at the serving precision (the layers at
    their stored width, embedding and LM head at the activations')."""
    if s.experts_only:  # only the experts at the weight-only width
        dense, expert = moe.weight_elems_split(a, 1.0, 1.0, float(a.layers))
        layers = float(dense) * float(s.dense_weight_elem) + float(expert) * float(s.weight_elem)
    else:
        layers = float(a.layers) * float(a.layer_params) * float(s.weight_elem)
    return layers + 2.0 * float(a.embedding_params) * float(s.bytes_per_elem)


def pool_hw(
    d: Mapping[str, Any], hw: Mapping[str, np.ndarray], a: Any, s: Any
) -> dict[str, np.ndarray]:
    """The :data:`POOL_HW` figures of every (flattened) design, and its shoreline with the pool's
    optical engines; ``{}`` when no design uses a pool (every figure then stays as it was)."""
    kind = kinds(d)
    if not np.any(kind != "none"):
        return {}
    if s.phase == "train":
        raise ContextError("memory_pool", "is modelled for serving; use none when training")
    n = np.shape(hw["tflops_per_gpu"])
    w, k = (np.broadcast_to(f, n) for f in _flags(kind))
    gb = optional(d, "memory_pool_gb_per_gpu")
    tbps = optional(d, "memory_pool_tbps_per_gpu")
    cluster = value(d, "cluster_size")
    copy = weight_copy_bytes(a, s)
    pool_bytes = gb * 1e9 * cluster
    fits = np.where(w > 0, pool_bytes >= copy, True).astype(float)
    # the weights' copy takes its share of every GPU's part of the pool; KV gets the rest
    kv_room = np.where(k > 0, np.maximum(gb * 1e9 - w * copy / np.maximum(cluster, 1.0), 0.0), 0.0)
    bw = np.maximum(tbps * 1e12 * tech(d, "pool_bandwidth_efficiency"), _MIN_BYTES_PER_S)
    # the pool's CPO engines take die edge like the scale-up links' (spread over the dies)
    edge_mm = tbps * 8000.0 / tech(d, "cpo_gbps_per_mm_edge") / value(d, "dies_per_gpu")
    on = (w + k) > 0
    shoreline = hw["shoreline_used_fraction"] + np.where(on, edge_mm / hw["die_perimeter_mm"], 0.0)
    return {
        "pool_weights": w.astype(float),
        "pool_kv": k.astype(float),
        "pool_bytes_per_s": np.broadcast_to(bw, n).astype(float),
        "pool_latency_s": np.broadcast_to(tech(d, "pool_access_latency_s"), n).astype(float),
        "pool_kv_bytes": np.broadcast_to(kv_room, n).astype(float),
        "pool_fits": np.broadcast_to(fits, n).astype(float),
        "shoreline_used_fraction": np.broadcast_to(shoreline, n).astype(float),
    }


def _hbm_weights(r: Any, weights: Any) -> Any:
    """The bottleneck stage's weights one GPU keeps in HBM: all of them, or where pooled a
    staging buffer of ``pool_staging_layers`` layers."""
    d, hw, a, s, tp, pp = r
    layers = np.ceil(a.layers / pp)
    staging = weights * np.minimum(tech(d, "pool_staging_layers") / layers, 1.0)
    return np.where(hw["pool_weights"] > 0, staging, weights)


def _room(hw: Mapping[str, Any], capacity: Any) -> Any:
    """What the engine may fill: HBM plus the GPU's KV room in the pool (1 byte, i.e. nothing
    fits, where the pool cannot hold the weights' copy)."""
    return np.where(hw["pool_fits"] > 0, capacity + hw["pool_kv_bytes"], 1.0)


def memory(r: Any, weights: Any, capacity: Any) -> tuple[Any, Any]:
    """Continuous scheduler (``rounds._memory``): (weights in HBM, bytes the engine may fill)."""
    return _hbm_weights(r, weights), _room(r.hw, capacity)


def static_memory(r: Any, mem: Mapping[str, Any], usable: Any) -> tuple[dict[str, Any], Any]:
    """Static scheduler (``replica.serve``): ``memory_need_bytes``'s figures with the weights in
    HBM only where not pooled, and the usable bytes with the pool's KV room."""
    w = _hbm_weights(r, mem["weights"])
    out = dict(mem)
    out["weights"], out["total"] = w, mem["total"] - mem["weights"] + w
    return out, _room(r.hw, usable)


def pool_seconds(hw: Mapping[str, Any], *, weights: Any, kv_bytes: Any, hbm_bytes: Any) -> Any:
    """Seconds a step spends reading the pool (``serving.mixed_step`` takes the longer of it and
    the step without the pool): the pooled weights (at most the step's HBM traffic) and KV
    bytes over the pool's bandwidth, plus one access latency."""
    nbytes = hw["pool_weights"] * np.minimum(weights, hbm_bytes) + hw["pool_kv"] * kv_bytes
    return nbytes / hw["pool_bytes_per_s"] + np.where(nbytes > 0, hw["pool_latency_s"], 0.0)


def _on(d: Mapping[str, Any]) -> np.ndarray:
    w, k = _flags(kinds(d))
    return (w + k) > 0


def pool_power_w(d: Mapping[str, Any], busy: Any, hbm_bytes_per_s: Any) -> np.ndarray:
    """IT power of the cluster's pool: DRAM background per GB; both CPO ports of every GPU's
    pool links at their provisioned rate (links are always up, as the scale-up links); DRAM
    access at each busy GPU's pool reads, bounded by its pool bandwidth and by its HBM traffic
    (every pooled byte is staged through HBM)."""
    n = value(d, "cluster_size")
    gb = optional(d, "memory_pool_gb_per_gpu")
    bytes_per_s = optional(d, "memory_pool_tbps_per_gpu") * 1e12
    links_w = bytes_per_s * 8 * tech(d, "pool_link_ends") * tech(d, "cpo_link_pj_per_bit") * 1e-12
    reads = np.minimum(bytes_per_s, np.asarray(hbm_bytes_per_s, float))
    dram_w = reads * 8 * tech(d, "pool_dram_pj_per_bit") * 1e-12
    total = n * (gb * tech(d, "pool_dram_w_per_gb") + links_w) + busy * dram_w
    return np.where(_on(d), total, 0.0)


def pool_usd(d: Mapping[str, Any], *, market: Any = False) -> np.ndarray:
    """Price of the cluster's pool: its DRAM and memory nodes per GB, and a CPO port at both
    ends of every GPU's pool links, priced as the GPU's own CPO (engines per Gb/s, quoted at
    list: at cost below ``market`` price basis; one external laser per ``cpo_lanes_per_laser``
    lanes of ``lane_gbps``)."""
    n = value(d, "cluster_size")
    gb = optional(d, "memory_pool_gb_per_gpu")
    gbps = optional(d, "memory_pool_tbps_per_gpu") * 8000.0
    per_gb = tech(d, "pool_dram_usd_per_gb") + tech(d, "pool_appliance_usd_per_gb")
    engine = tech(d, "cpo_usd_per_gbps") / np.where(market, 1.0, tech(d, "network_list_markup"))
    laser = tech(d, "cpo_laser_usd") / (tech(d, "cpo_lanes_per_laser") * value(d, "lane_gbps"))
    ports = gbps * tech(d, "pool_link_ends") * (engine + laser)
    return np.where(_on(d), n * (gb * per_gb + ports), 0.0)


def hbm_weight_copies_bytes(
    d: Mapping[str, Any], perf: Mapping[str, Any], copy_bytes: float
) -> np.ndarray:
    """Bytes of weight copies the cluster keeps in HBM: one copy per replica where the weights
    are not pooled (the staging buffers aside), none where they are."""
    w, _ = _flags(kinds(d))
    return np.asarray(perf["replicas"], float) * copy_bytes * (1.0 - w)


def hbm_weight_copies_gb(d: Mapping[str, Any], replicas: Any, a: Any, s: Any) -> np.ndarray:
    """``perf.hbm_weight_copies_gb``: :func:`hbm_weight_copies_bytes` in GB (0 when training,
    where data-parallel copies may be sharded)."""
    if s.phase == "train":
        return np.zeros(np.shape(replicas))
    copies = hbm_weight_copies_bytes(d, {"replicas": replicas}, weight_copy_bytes(a, s))
    return copies / 1e9
