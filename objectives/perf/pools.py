"""Heterogeneous disaggregated serving: a prefill pool and a decode pool, each its own GPU type,
GPU count and parallelism, joined by the scale-out network that carries each prompt's KV cache.

``workload.prefill_pool`` / ``decode_pool`` (``{gpu, gpus, tp, pp, ep, attention_dp}``, every
field optional; ``gpu`` defaults to the design's own GPU, so a pool without one follows a
searched die) turn a ``serve`` workload into two homogeneous ones, each evaluated by the same
serving model on its own hardware view (one vectorized call per pool):

- the prefill pool runs ``phase: prefill`` (prompts in token-budget chunks) on
  ``prefill_gpus`` GPUs: P requests/s = its prompt tokens/s / input_tokens;
- the decode pool runs ``phase: decode`` (decode-only steps, the KV cache of input + output
  tokens per sequence) on the rest of ``cluster_size``: D requests/s = its output tokens/s /
  output_tokens;
- each prompt's KV cache, ``input_tokens x layers x KV elements per token and layer x KV
  bytes``, crosses the scale-out network (GPU NICs, ``technology.scaleout_gbps_per_silicon_mm2``
  at ``network_efficiency``): a request's transfer runs over the NICs of its prefill replica
  into those of its decode replica, the narrower side bounding it, and is added to TTFT; all
  transfers together are bounded by the NICs of the busy GPUs of each pool, L requests/s.

The system serves min(P, D, L) requests/s. Cluster power, facility power and (in
``objectives.cost``) capex, energy and TCO are the sums over both pools, a pool that waits on
the other at its duty cycle (``at_load``). The split is ``prefill_gpus`` (a design parameter a
study searches), else the pools' ``gpus``, else balanced: each pool's replica rate and size at
the parallelism it picks on the whole cluster, then the integer split that maximizes min(P, D)
(exact, three candidates, see ``balanced_split``). Per-GPU and per-replica perf figures (tp,
batch, tflops_per_gpu, ...) are the decode pool's; ``prefill_*`` metrics describe the prefill
pool.

Poisson arrivals (``arrivals: poisson``, as MLPerf's Server scenario runs disaggregated
systems): requests reach the system at rate lam (``arrival_rate_per_s``, the whole system's
rate here, or solved: the largest lam whose SLO percentiles meet the SLOs, which needs a TTFT
SLO), spread evenly over each pool's replicas. A prompt waits for its prefill replica, an M/G/1
queue served first come, first served at the replica's saturated prompt rate
(:func:`objectives.perf.queueing.fcfs_wait_s`, the prompt lengths' spread in the service time),
then is prefilled alone (the pool's single-prompt TTFT) and its KV cache crosses to a decode
replica, where it waits for one of the replica's batch slots (the saturated batch: M/G/c,
:func:`objectives.perf.queueing.admission_wait_s`). TTFT adds the waits at the SLO percentile
to the prefill and the transfer. A decode replica's time per output token is tabulated at
running batches 1, 2, 4, ... up to its saturated batch, the replica the saturated pool chose
(its tp, pp, ep and attention DP pinned: ``decode_ladder``), and taken piecewise linear between
them (a mixture of experts reads more experts as its batch grows, so the step is not affine),
so Little's law B = r L t(B) (r = lam / decode replicas, L the output tokens) solves in closed
form on the segment where it crosses; TPOT is the SLO percentile over requests of the mean step
a request lives through (the batch Poisson-distributed around B, an M/G/inf count, through the
segment's slope: :func:`objectives.perf.queueing.tpot_quantile_s`). With ``dispatch:
shortest_queue`` each pool's replicas share one queue (M/G/n prefill, M/G/(n x slots) decode
slots). A load beyond what either pool or the KV links carry is served at that capacity with
``load_served_fraction`` < 1 and counts as a missed SLO.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from objectives._evaluator import tech
from objectives.cooling import it_power_factor, pue_factor
from objectives.errors import ContextError
from objectives.params import PARAMS
from objectives.perf.batch import flatten
from objectives.perf.hardware import hardware, scaleout_gbps_per_gpu
from objectives.perf.model import arch_of
from objectives.perf.power import idle_gpu_power_w
from objectives.perf.queueing import (
    admission_wait_mean_s,
    admission_wait_s,
    pooled_fcfs_wait_s,
    tpot_quantile_s,
)
from objectives.perf.workload import serving_of

__all__ = [
    "POOL_KEYS",
    "POOL_METRICS",
    "balanced_split",
    "evaluate_pools",
    "has_pools",
    "kv_bytes_per_request",
    "no_pools",
    "pool_design",
]

POOL_KEYS = ("prefill_pool", "decode_pool")
Evaluate = Callable[[Mapping[str, Any]], dict[str, np.ndarray]]

#: Metrics of the pools (0 for a design without them), published by the perf evaluator.
POOL_METRICS: dict[str, tuple[str, str]] = {
    "prefill_gpus": ("GPUs", "GPUs of the prefill pool (workload.prefill_pool); 0 without pools"),
    "prefill_tp": ("GPUs", "tensor-parallel degree of the prefill pool; 0 without pools"),
    "prefill_requests_per_s": ("requests/s", "prompts/s the prefill pool can serve; 0 without"),
    "decode_requests_per_s": ("requests/s", "requests/s the decode pool can serve; 0 without"),
    "kv_link_requests_per_s": (
        "requests/s",
        "prompts' KV caches/s the scale-out NICs of the busy GPUs carry between the pools; 0 "
        "without pools",
    ),
    "kv_transfer_s": (
        "s",
        "one prompt's KV cache from its prefill replica to its decode replica over their "
        "scale-out NICs (in ttft_s); 0 without pools",
    ),
}

#: Design parameters of the deployment, not of the GPU: a pool's GPU preset never sets them.
_DEPLOYMENT = frozenset({"cluster_size", "spare_fraction", "price_basis", "disaggregated",
                         "prefill_gpus"})  # fmt: skip
_DEGREES = ("tp", "pp", "ep", "attention_dp")


def has_pools(design: Mapping[str, Any]) -> bool:
    """The workload gives disaggregated serving's pools (``prefill_pool`` or ``decode_pool``)."""
    wl = design.get("workload")
    return isinstance(wl, Mapping) and any(wl.get(k) is not None for k in POOL_KEYS)


def no_pools(out: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The pool metrics of designs without pools: zeros shaped like the other metrics."""
    zero = np.zeros_like(np.asarray(out["tokens_per_s"], dtype=float))
    return {k: zero.copy() for k in POOL_METRICS}


def _pool(wl: Mapping[str, Any], which: str) -> Mapping[str, Any]:
    spec = wl.get(f"{which}_pool") or {}
    if not isinstance(spec, Mapping):
        raise ContextError(f"workload.{which}_pool", f"expected a mapping, got {spec!r}")
    return spec


def pool_design(design: Mapping[str, Any], which: str, gpus: Any) -> dict[str, Any]:
    """The homogeneous design one pool is: its GPU's fields (the preset's, the parameter
    defaults for what the preset does not set; the design's own without a ``gpu``), ``gpus``
    GPUs, and the workload's ``phase`` set to the pool's (``prefill`` or ``decode``) with its
    parallelism and the SLO that bounds it (TTFT the prefill pool, TPOT the decode pool)."""
    wl = design["workload"]
    spec = _pool(wl, which)
    sub = {k: v for k, v in design.items() if k not in ("disaggregated", "prefill_gpus")}
    gpu = spec.get("gpu")
    if isinstance(gpu, Mapping):
        for name, p in PARAMS.items():
            if name in _DEPLOYMENT:
                continue
            v = gpu.get(name, p.default)
            if v is None:
                sub.pop(name, None)
            else:
                sub[name] = v
        sub["gpu"] = str(gpu.get("name", "a pool's GPU"))
    elif gpu is not None:
        msg = f"expected a resolved GPU preset (resolve the context first), got {gpu!r}"
        raise ContextError(f"workload.{which}_pool.gpu", msg)
    node = spec.get("technology")
    if isinstance(node, Mapping):  # the pool's GPU on its own node (objectives.presets)
        sub["technology"] = node
    sub["cluster_size"] = gpus
    w = {k: v for k, v in wl.items() if k not in POOL_KEYS}
    w.update(phase=which, disaggregated=False)
    for key in _DEGREES:
        w[key] = spec.get(key, "auto")
    w["tpot_slo_s" if which == "prefill" else "ttft_slo_s"] = None
    if str(wl.get("arrivals", "saturated") or "saturated") == "poisson":
        # each pool at saturation, its SLO percentiles taken on the open system (open_pools)
        w.update(arrivals="saturated", arrival_rate_per_s=None, ttft_slo_s=None, tpot_slo_s=None,
                 dispatch="random")  # fmt: skip
    sub["workload"] = w
    return sub


def kv_bytes_per_request(wl: Mapping[str, Any]) -> Any:
    """Bytes of one prompt's KV cache: input_tokens x layers x KV elements per token and layer
    (K and V of the KV heads; MLA: the latent and the rotary key) x the KV cache's bytes."""
    a = arch_of(wl["model"])
    s, _, _ = serving_of(wl)
    return s.input_tokens * a.layers * a.kv_elems_per_token_layer * s.kv_elem


def nic_bytes_per_s(d: Mapping[str, Any]) -> Any:
    """Achievable scale-out bytes/s of one GPU (its NICs at ``network_efficiency``)."""
    return scaleout_gbps_per_gpu(d) * 1e9 / 8 * tech(d, "network_efficiency")


def balanced_split(
    cluster: Any, rate_p: Any, group_p: Any, rate_d: Any, group_d: Any
) -> np.ndarray:
    """GPUs of the prefill pool that maximize min(prefill, decode requests/s), replicas whole.

    With n_a replicas of the pool of larger replicas (rate a, g_a GPUs each) the other gets
    n_b = floor((N - n_a g_a) / g_b). min(n_a a, n_b b) rises with n_a until the two cross;
    the crossing lies within g_b / g_a <= 1 replica below the fluid optimum
    x = N b / (g_a b + g_b a), so the best n_a is one of floor(x) - 1, floor(x), floor(x) + 1.
    Every pool keeps at least one replica where the cluster holds one of each.
    """
    n = np.asarray(cluster, dtype=float)
    rp, gp, rd, gd = (np.asarray(x, dtype=float) for x in (rate_p, group_p, rate_d, group_d))
    d_big = gd >= gp
    ra, ga = np.where(d_big, rd, rp), np.where(d_big, gd, gp)
    rb, gb = np.where(d_big, rp, rd), np.where(d_big, gp, gd)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(ga * rb + gb * ra > 0, n * rb / (ga * rb + gb * ra), 0.0)
    top = np.maximum(np.floor((n - gb) / ga), 1.0)  # room for one replica of the other pool
    best_na = np.ones_like(x)
    best = np.full(x.shape, -1.0)
    for k in (-1.0, 0.0, 1.0):  # three candidates, each a vectorized pass over every design
        na = np.clip(np.floor(x) + k, 1.0, top)
        nb = np.floor(np.maximum(n - na * ga, 0.0) / gb)
        v = np.minimum(na * ra, nb * rb)
        better = v > best
        best, best_na = np.where(better, v, best), np.where(better, na, best_na)
    gpus_a = best_na * ga
    prefill = np.where(d_big, n - gpus_a, gpus_a)
    return np.clip(prefill, 1.0, np.maximum(n - 1.0, 1.0))


def _split(design: Mapping[str, Any], evaluate: Evaluate, cluster: np.ndarray) -> np.ndarray:
    """GPUs of the prefill pool, per design (see the module docstring)."""
    raw = design.get("prefill_gpus")
    given = np.broadcast_to(np.asarray(0.0 if raw is None else raw, float), cluster.shape)
    if np.all(given > 0):
        return given.copy()
    return np.where(given > 0, given, _workload_split(design, evaluate, cluster))


def _workload_split(
    design: Mapping[str, Any], evaluate: Evaluate, cluster: np.ndarray
) -> np.ndarray:
    """The split the pools' ``gpus`` give, else the balanced one."""
    wl = design["workload"]
    gp, gd = _pool(wl, "prefill").get("gpus", "auto"), _pool(wl, "decode").get("gpus", "auto")
    if gp != "auto" and gd != "auto":
        if np.any(cluster != float(gp) + float(gd)):
            msg = (
                f"prefill {gp} + decode {gd} GPUs must make cluster_size "
                f"({np.unique(cluster)[0]:g}); give one pool's gpus and the other takes the rest"
            )
            raise ContextError("workload.decode_pool.gpus", msg)
        return np.full(cluster.shape, float(gp))
    if gp != "auto":
        return np.full(cluster.shape, float(gp))
    if gd != "auto":
        return cluster - float(gd)
    # balanced: each pool's replica at the parallelism it picks on the whole cluster
    whole_p = evaluate(pool_design(design, "prefill", cluster))
    whole_d = evaluate(pool_design(design, "decode", cluster))
    s, _, _ = serving_of(wl)
    rate_p = _per_replica(whole_p) / s.input_tokens
    rate_d = _per_replica(whole_d) / s.output_tokens
    return balanced_split(
        cluster,
        rate_p,
        whole_p["gpus_per_replica"].reshape(-1),
        rate_d,
        whole_d["gpus_per_replica"].reshape(-1),
    )


def _per_replica(out: Mapping[str, np.ndarray]) -> np.ndarray:
    tokens, replicas = out["tokens_per_s"].reshape(-1), out["replicas"].reshape(-1)
    return np.divide(tokens, replicas, out=np.zeros_like(tokens), where=replicas > 0)


def _check(design: Mapping[str, Any]) -> None:
    wl = design["workload"]
    if str(wl.get("phase")) != "serve" or str(wl.get("scheduler", "continuous")) != "continuous":
        msg = (
            "prefill and decode pools are modelled for phase: serve with scheduler: continuous"
            f" (got phase {wl.get('phase')!r}, scheduler {wl.get('scheduler')!r})"
        )
        raise ContextError("workload.prefill_pool", msg)
    serving_of({k: v for k, v in wl.items() if k not in POOL_KEYS})  # the workload's own rules


def pools_parts(
    design: Mapping[str, Any], evaluate: Evaluate
) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(prefill design, decode design, their perf metrics), flattened to 1-D."""
    _check(design)
    shape = _shape(design)
    cluster = np.broadcast_to(np.asarray(design["cluster_size"], dtype=float), shape)
    cluster = cluster.reshape(-1).astype(float)
    if np.any(cluster < 2):
        raise ContextError("cluster_size", "prefill and decode pools need at least 2 GPUs")
    flat = _flat_design(design, shape)
    n_p = _split(flat, evaluate, cluster).reshape(-1)
    if np.any((n_p < 1) | (n_p > cluster - 1) | (n_p != np.floor(n_p))):
        bad = n_p[(n_p < 1) | (n_p > cluster - 1) | (n_p != np.floor(n_p))][0]
        msg = f"the prefill pool needs 1 to cluster_size - 1 whole GPUs, got {bad:g}"
        raise ContextError("prefill_gpus", msg)
    pre = pool_design(flat, "prefill", n_p)
    dec = pool_design(flat, "decode", cluster - n_p)
    return pre, dec, _flat(evaluate(pre)), _flat(evaluate(dec))


def _shape(design: Mapping[str, Any]) -> tuple[int, ...]:
    """The batch shape: the design's (objectives.perf.batch) with its ``prefill_gpus``."""
    rest = {k: v for k, v in design.items() if k != "prefill_gpus"}
    return np.broadcast_shapes(flatten(rest).shape, np.shape(design.get("prefill_gpus", 0.0)))


def _flat_design(design: Mapping[str, Any], shape: tuple[int, ...]) -> dict[str, Any]:
    """Array design values broadcast to the batch shape and flattened (the pools' GPU counts
    are 1-D)."""
    out = dict(design)
    for k, v in design.items():
        if isinstance(v, np.ndarray) and v.ndim:
            out[k] = np.broadcast_to(v, shape).reshape(-1)
    return out


def _flat(out: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: np.asarray(v, dtype=float).reshape(-1) for k, v in out.items()}


def at_load(
    pools: tuple[Mapping[str, Any], Mapping[str, Any]],
    metrics: tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]],
    rates: tuple[np.ndarray, np.ndarray],
    req: np.ndarray,
    precision: str,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The (prefill, decode) pools' metrics with their power at the system's request rate
    ``req``: a pool that waits on the other (its own rate in ``rates``) is busy a fraction
    u = req / rate of the time and idle the rest, the duty cycle the serving model gives an
    engine below one request in flight, so its busy GPUs draw idle + u x (serving - idle)
    power; cluster and facility power follow."""
    out = []
    for design, m, rate in zip(pools, metrics, rates, strict=True):
        flat = flatten(design).design()
        idle = np.asarray(idle_gpu_power_w(flat, hardware(flat, precision)), float).reshape(-1)
        u = np.divide(req, rate, out=np.ones_like(req), where=rate > 0)
        busy = m["replicas"] * m["gpus_per_replica"]
        saved = busy * (1 - np.minimum(u, 1.0)) * np.maximum(m["gpu_power_w"] - idle, 0.0)
        saved = saved * it_power_factor(flat)
        facility = saved * tech(flat, "pue") * pue_factor(flat)
        out.append(
            {
                **m,
                "cluster_power_w": m["cluster_power_w"] - saved,
                "facility_power_w": m["facility_power_w"] - facility,
            }
        )
    return out[0], out[1]


def evaluate_pools(design: Mapping[str, Any], evaluate: Evaluate) -> dict[str, np.ndarray]:
    """The perf metrics of the whole system (see the module docstring)."""
    pre, dec, p, d = pools_parts(design, evaluate)
    wl = design["workload"]
    s, slo, precision = serving_of({k: v for k, v in wl.items() if k not in POOL_KEYS})
    req_p = p["tokens_per_s"] / s.input_tokens
    req_d = d["tokens_per_s"] / s.output_tokens
    kv = kv_bytes_per_request(wl)
    bw_p, bw_d = nic_bytes_per_s(pre), nic_bytes_per_s(dec)
    per_request = np.minimum(p["gpus_per_replica"] * bw_p, d["gpus_per_replica"] * bw_d)
    t_kv = kv / per_request
    busy_p, busy_d = p["replicas"] * p["gpus_per_replica"], d["replicas"] * d["gpus_per_replica"]
    req_l = np.minimum(busy_p * bw_p, busy_d * bw_d) / kv
    req = np.minimum(np.minimum(req_p, req_d), req_l)
    ttft = p["ttft_s"] + t_kv
    tpot = d["tpot_s"]
    slo_met = p["slo_met"] * d["slo_met"]
    served, batch = np.ones_like(req), d["batch"]
    if s.arrivals == "poisson":
        ladder = decode_ladder(dec, d, evaluate)
        req, ttft, tpot, slo_met, served, batch = open_pools(
            s, slo, p=p, d=d, ladder=ladder, capacity=req, t_kv=t_kv
        )
    elif slo[0] is not None:
        slo_met = slo_met * (ttft <= slo[0])
    tokens = req * s.output_tokens
    p, d = at_load((pre, dec), (p, d), (req_p, req_d), req, precision)
    cluster_w = p["cluster_power_w"] + d["cluster_power_w"]
    n_p, n_d = pre["cluster_size"], dec["cluster_size"]
    out = dict(d)  # per-GPU and per-replica figures: the decode pool's
    out.update(
        tokens_per_s=tokens,
        ttft_s=ttft,
        tpot_s=tpot,
        batch=batch,
        load_served_fraction=served,
        cluster_power_w=cluster_w,
        facility_power_w=p["facility_power_w"] + d["facility_power_w"],
        facility_w_per_gpu=(n_p * p["facility_w_per_gpu"] + n_d * d["facility_w_per_gpu"])
        / (n_p + n_d),
        tokens_per_joule=tokens / cluster_w,
        model_fits=p["model_fits"] * d["model_fits"],
        slo_met=slo_met,
        prefill_gpus=n_p + 0.0 * tokens,
        prefill_tp=p["tp"],
        prefill_requests_per_s=req_p,
        decode_requests_per_s=req_d,
        kv_link_requests_per_s=req_l,
        kv_transfer_s=t_kv + 0.0 * tokens,
    )
    shape = _shape(design)
    return {k: np.asarray(v, dtype=float).reshape(shape) for k, v in out.items()}


_LAM_BISECT = 48  # halvings of the arrival-rate bracket (2^-48 of the capacity)


def _subset(design: Mapping[str, Any], rows: np.ndarray, n: int) -> dict[str, Any]:
    """The designs ``rows`` of a flattened design of ``n`` (its 1-D arrays, the workload's too)."""

    def take(v: Any) -> Any:
        return v[rows] if isinstance(v, np.ndarray) and v.shape == (n,) else v

    out = {k: take(v) for k, v in design.items()}
    out["workload"] = {k: take(v) for k, v in design["workload"].items()}
    return out


def decode_ladder(
    dec: Mapping[str, Any], d: Mapping[str, np.ndarray], evaluate: Evaluate
) -> tuple[np.ndarray, np.ndarray]:
    """(batches, TPOT) of each design's decode replica, as the saturated pool ``d`` chose it
    (its tp, pp, ep and attention DP pinned), at running batches 1, 2, 4, ... up to its
    saturated batch: shape (points, designs). A decode step's time is not affine in the batch
    (a mixture of experts reads more experts as its batch grows, concavely), so the open
    system interpolates between these points. One evaluation per point and chosen layout."""
    n = d["batch"].size
    slots = np.maximum(d["batch"], 1.0)
    top = int(np.ceil(np.log2(float(slots.max())))) + 1
    batches = np.minimum(slots[None, :], 2.0 ** np.arange(top)[:, None])
    batches[-1] = slots
    tpot = np.empty_like(batches)
    layout = np.c_[d["tp"], d["pp"], d["ep"], d["attention_dp"]]
    keys, inv = np.unique(layout, axis=0, return_inverse=True)
    for i, (tp, pp, ep, adp) in enumerate(keys):
        rows = np.flatnonzero(inv.reshape(-1) == i)
        sub = _subset(dec, rows, n)
        pinned = {"tp": int(tp), "pp": int(pp), "ep": int(ep), "attention_dp": bool(adp)}
        for k in range(top):
            wl = {**sub["workload"], **pinned, "batch": batches[k, rows]}
            tpot[k, rows] = _flat(evaluate({**sub, "workload": wl}))["tpot_s"]
    return batches, np.maximum.accumulate(tpot, axis=0)  # a step never shortens with the batch


def open_pools(
    s: Any,
    slo: tuple[Any, Any],
    *,
    p: Mapping[str, np.ndarray],
    d: Mapping[str, np.ndarray],
    ladder: tuple[np.ndarray, np.ndarray],
    capacity: np.ndarray,
    t_kv: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """(requests/s, TTFT, TPOT, slo_met, load_served_fraction, the decode replicas' mean
    running batch) of the pools under Poisson arrivals (see the module docstring); ``p``/``d``
    the pools at saturation, ``ladder`` the decode replica's TPOT at batches 1 ... saturated
    (``decode_ladder``), ``capacity`` min(P, D, L) requests/s."""
    q, out = s.slo_quantile, s.output_tokens
    n_p, n_d = np.maximum(p["replicas"], 1.0), np.maximum(d["replicas"], 1.0)
    prompts = p["tokens_per_s"] / s.input_tokens  # the prefill pool's prompts/s, saturated
    service = np.divide(n_p, prompts, out=np.full_like(n_p, np.inf), where=prompts > 0)
    slots = np.maximum(d["batch"], 1.0)
    bk, tk = ladder
    with np.errstate(divide="ignore", invalid="ignore"):  # each segment's slope (0 if flat)
        slope = np.diff(tk, axis=0) / np.diff(bk, axis=0)
    slope = np.where(np.isfinite(slope), np.maximum(slope, 0.0), 0.0)

    def little(r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(mean batch B = r L t(B), the step t(B), the local slope, stable): t piecewise
        linear through the ladder, so B solves in closed form on the segment where
        r L t(B) - B changes sign; below one sequence the engine idles between requests."""
        g = r * out * tk - bk  # > 0 where the load needs more than that batch
        k = np.argmax(g <= 0, axis=0)  # first ladder point that holds the load
        stable = (g <= 0).any(axis=0)
        k = np.where(stable, k, bk.shape[0] - 1)
        cols = np.arange(bk.shape[1])
        lo = np.maximum(k - 1, 0)
        b0, t0 = bk[lo, cols], tk[lo, cols]
        beta = slope[np.minimum(lo, slope.shape[0] - 1), cols] if slope.size else 0.0 * b0
        with np.errstate(divide="ignore", invalid="ignore"):
            b = r * out * (t0 - beta * b0) / (1.0 - r * out * beta)
        b = np.where(k == 0, r * out * tk[0], b)  # holds at one sequence: B = r L t(1)
        b = np.where(stable, np.clip(b, 0.0, slots), slots)
        t_step = np.where(k == 0, tk[0], t0 + beta * (np.maximum(b, 1.0) - b0))
        return b, t_step, np.where(k == 0, 0.0, beta), stable

    def at(lam: np.ndarray) -> tuple[np.ndarray, ...]:
        """TTFT, TPOT (at the percentile, or means), stability and the decode replicas' mean
        running batch at system rate ``lam``."""
        b, t_step, t1, stable = little(lam / n_d)
        stable = stable & (b < slots)
        hold = out * t_step
        # join the shortest queue: one queue for each pool's replicas (M/G/n_p, M/G/(n_d c))
        k_p, k_d = (n_p, n_d) if s.pooled else (1.0, 1.0)
        if s.latency_mean:
            wait = pooled_fcfs_wait_s(k_p, lam / n_p * k_p, service, s.input_tokens_cv, None)
            wait = wait + admission_wait_mean_s(k_d * slots, k_d * b, hold, s.output_tokens_cv)
            tpot = t_step
        else:
            wait = pooled_fcfs_wait_s(k_p, lam / n_p * k_p, service, s.input_tokens_cv, q)
            wait = wait + admission_wait_s(k_d * slots, k_d * b, hold, s.output_tokens_cv, q)
            common = t1 * np.sqrt(np.maximum(b, 1.0))  # sd of the round over a Poisson batch
            tpot = tpot_quantile_s(t_step, common, 0.0 * t_step, out, s.output_tokens_cv, q)
        stable = stable & np.isfinite(wait)
        ttft = p["ttft_s"] + t_kv + np.where(stable, wait, 0.0)
        return ttft, tpot, stable, b

    def meets(lam: np.ndarray) -> np.ndarray:
        ttft, tpot, stable, _ = at(lam)
        good = stable
        if slo[0] is not None:
            good = good & (ttft <= slo[0])
        if slo[1] is not None:
            good = good & (tpot <= slo[1])
        return good

    if s.arrival_rate_per_s is not None:
        rate = np.asarray(s.arrival_rate_per_s, float)
        if rate.size == capacity.size:  # a rate per design (the designs are flattened here)
            lam = rate.reshape(capacity.shape).astype(float)
        elif rate.size == 1:
            lam = np.full(capacity.shape, float(rate.reshape(-1)[0]))
        else:
            msg = f"expected one rate or one per design ({capacity.size}), got {rate.size}"
            raise ContextError("workload.arrival_rate_per_s", msg)
    else:  # the largest rate meeting the SLOs: they tighten as the rate grows
        lo, hi = np.zeros_like(capacity), capacity.astype(float)
        for _ in range(_LAM_BISECT):
            mid = (lo + hi) / 2
            ok = meets(mid)
            lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
        lam = lo
    ttft, tpot, stable, batch = at(lam)
    keeps_up = stable & (lam <= capacity)
    served = np.where(keeps_up, 1.0, np.divide(capacity, lam, out=np.ones_like(lam),
                                               where=lam > 0))  # fmt: skip
    req = np.where(keeps_up, lam, np.minimum(lam, capacity))
    # a load the pools cannot keep up with: the saturated figures, counted as missing the SLOs
    ttft = np.where(keeps_up, ttft, p["ttft_s"] + t_kv)
    tpot = np.where(keeps_up, tpot, d["tpot_s"])
    slo_met = (meets(lam) & keeps_up & (lam > 0)).astype(float)
    return req, ttft, tpot, slo_met, served, np.where(keeps_up, batch, slots)
