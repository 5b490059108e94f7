"""Performance and power of an AI cluster serving (or training) a transformer.

``evaluate_perf(design)`` scores every design of a numpy batch: per-GPU peak figures from die
area, HBM stacks and links; a per-layer roofline of prefill and decode for each candidate
tensor x pipeline parallelism (and batch, when ``workload.batch`` is ``auto``), searched by
broadcasting over a small candidate axis and an argmax; then power and efficiency.

Technology constants and the numeric workload fields may be arrays too: they broadcast against
the design values (a robust study puts sampled assumptions on the batch axis). For speed the
serving search runs once per group of designs with bit-identical hardware figures (its timing
does not depend on the cluster size), on a product grid of the hardware's axes where only
hardware varies (each timing term once per combination of the axes it reads), and scores only
the candidates that can win; all exact, every design gets what it would get evaluated alone.

One module per idea: ``batch`` (the design batch broadcast and flattened), ``hardware``
(per-GPU figures), ``workload`` (validated workload, the candidate grid), ``search`` (timing
every candidate and choosing), ``serving``/``continuous``/``moe``/``training`` (the timing
models), ``power``; this module assembles the metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from objectives._evaluator import builtin_evaluator, tech
from objectives.cooling import it_power_factor, pue_factor
from objectives.errors import ContextError
from objectives.fabric import fabric_hw
from objectives.perf import pool
from objectives.perf.batch import flatten, own_arrays, serving_rows
from objectives.perf.hardware import attention_tflops, hardware
from objectives.perf.model import Arch, arch_of
from objectives.perf.pools import POOL_METRICS, evaluate_pools, has_pools, no_pools
from objectives.perf.power import (
    fabric_w_per_gpu,
    gpu_power_w,
    idle_gpu_power_w,
    overhead_w_per_gpu,
)
from objectives.perf.search import (
    _GRID_ELEMS,
    CHUNK_ELEMS,
    Grid,
    choose,
    grid_timing,
    product_grid,
    search_groups,
    search_keys,
    select_train,
    timing,
)
from objectives.perf.serving import Serving
from objectives.perf.training import cp_of
from objectives.perf.training import options as train_options
from objectives.perf.workload import candidates, ep_auto, serving_of
from objectives.units import SECONDS_PER_YEAR

__all__ = ["METRICS", "Arch", "arch_of", "evaluate_perf"]

METRICS: dict[str, tuple[str, str]] = {
    "tflops_per_gpu": ("TFLOPS", "dense tensor throughput of one GPU at the workload precision"),
    "hbm_tbps_per_gpu": ("TB/s", "peak HBM bandwidth of one GPU"),
    "hbm_gb_per_gpu": ("GB", "HBM capacity of one GPU"),
    "net_gbps_per_gpu": ("Gb/s", "scale-up bandwidth of one GPU, per direction"),
    "clock_eff_ghz": ("GHz", "tensor clock after cooling-limited DVFS throttling"),
    "power_density_w_per_mm2": ("W/mm2", "full-load logic power density at the effective clock"),
    "tokens_per_s": (
        "tokens/s",
        "output tokens/s of the cluster (prefill: input, train: trained)",
    ),
    "ttft_s": (
        "s",
        "time to first token: one request's prefill plus one step of waiting (continuous; "
        "under poisson arrivals, at the SLO percentile with the waits for a batch slot and "
        "for prefill), the prefill of the whole batch (static); 0 when training",
    ),
    "tpot_s": (
        "s",
        "mean time per output token: one step of the running batch, with its prefill chunks "
        "when prefill is co-located (under poisson arrivals, its SLO percentile over "
        "requests); 0 when training",
    ),
    "step_s": (
        "s",
        "serve: one engine step (continuous; disaggregated: group-seconds per request) or one "
        "static-batch cycle; train: one optimizer step",
    ),
    "mfu": ("1", "model FLOPs / (peak FLOPs x time) of the busy GPUs (training MFU)"),
    "gpu_power_w": ("W", "power of one serving GPU package at this workload"),
    "package_power_w": ("W", "peak (TDP-like) package power: full compute, HBM and links"),
    "cluster_power_w": ("W", "IT power of the serving GPUs incl. host and network share"),
    "facility_power_w": ("W", "cluster power times PUE"),
    "facility_w_per_gpu": (
        "W",
        "all-in provisioned power per GPU: peak package power with its node's nameplate "
        "overhead (technology.node_nameplate_overhead_w_per_w), scale-out network and "
        "scale-up switches, without the server fans liquid cooling removes, times PUE (the kW "
        "per GPU of datacentre TCO models)",
    ),
    "tokens_per_joule": ("tokens/J", "tokens_per_s / cluster_power_w"),
    "model_fits": ("0/1", "1 if some parallelism fits weights, KV cache and activations in HBM"),
    "coolable": (
        "0/1",
        "1 if some clock above 0 keeps the die within its cooling and package power limits "
        "(0: no clock cools it, clock_eff_ghz = 0)",
    ),
    "runnable": (
        "0/1",
        "1 if the design runs the workload: a replica fits (model_fits), a clock cools it "
        "(coolable), and the chosen step ends (HBM bandwidth, and links wherever its "
        "parallelism communicates); 0: a design that cannot run, whose rates are 0 and whose "
        "never-ending times are the lifetime (docs/evaluators.md)",
    ),
    "slo_met": (
        "0/1",
        "1 if the chosen configuration meets the TTFT and TPOT SLOs (and, at a given "
        "arrival_rate_per_s, keeps up with it)",
    ),
    "load_served_fraction": (
        "1",
        "at a given arrival_rate_per_s: tokens/s served / offered (< 1: the replicas cannot "
        "keep up, their queues grow without bound and the figures are the saturated "
        "engine's); 1 otherwise",
    ),
    "tp": ("GPUs", "tensor-parallel degree chosen"),
    "pp": ("GPUs", "pipeline-parallel degree chosen"),
    "ep": (
        "GPUs",
        "expert-parallel degree: serving, experts over ep GPUs of the TP group with attention "
        "data-parallel over ep groups and all-to-all dispatch (workload.ep; 1: plain TP); "
        "training, experts over workload.ep GPUs of the data-parallel group; 1 if dense",
    ),
    "attention_dp": (
        "0/1",
        "serving a MoE model with ep > 1: 1 if the attention runs data-parallel over the ep "
        "groups (each its own engine limits, tokens dispatched to their experts), 0 if "
        "tensor-parallel over the whole group (workload.attention_dp; auto: the better)",
    ),
    "replicas": ("replicas", "model replicas serving in the cluster (0 unless runnable)"),
    "gpus_per_replica": (
        "GPUs",
        "tp x pp (x cp when training or prefilling context-parallel): the model-parallel "
        "group a failure takes down",
    ),
    "batch": ("sequences", "concurrent sequences per replica (continuous auto: solved)"),
    "compute_utilization": ("1", "achieved / peak tensor FLOPs over the serving cycle"),
    "hbm_utilization": ("1", "achieved / peak HBM bandwidth over the serving cycle"),
    "memory_used_fraction": ("1", "HBM need / usable HBM of the chosen configuration"),
    "shoreline_used_fraction": ("1", "die edge used by HBM PHYs and link I/O / die perimeter"),
    "topology_ok": ("0/1", "1 if the scale-up fabric can form the chosen tp x pp group"),
    "scaleup_domain_gpus": (
        "GPUs",
        "GPUs one switched scale-up domain holds (radix, copper reach); cluster size otherwise",
    ),
    "fabric_hops": ("hops", "switch traversals of one scale-up message (0 on a torus)"),
    "die_perimeter_mm": ("mm", "perimeter of one compute die"),
    "hbm_weight_copies_gb": (
        "GB",
        "serving: the weights' copies the cluster's HBM holds, one per replica (0 where "
        "memory_pool keeps them once in a pool: objectives/perf/pool.py); 0 when training",
    ),
    **POOL_METRICS,  # heterogeneous prefill/decode pools (objectives.perf.pools)
}


@builtin_evaluator(metrics=METRICS)
def evaluate_perf(design: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Cluster serving throughput, latency and power for a (batch of) design(s).

    It needs no other evaluator; availability and cost consume its metrics (the engine passes
    them on, a direct call of theirs computes them).
    """
    if has_pools(design):  # prefill and decode pools of their own GPUs (objectives.perf.pools)
        return evaluate_pools(design, _evaluate_perf)
    out = _evaluate_perf(design)
    return {**out, **no_pools(out)}


@dataclass
class _Prepared:
    """One design batch made ready for the parallelism search."""

    fl: Any  # the flattened designs (objectives.perf.batch.flatten)
    flat: Any
    a: Arch
    s: Serving
    slo: Any
    hw: dict[str, Any]
    cand: dict[str, Any]
    search: dict[str, Any]
    cluster: Any
    chunk: int
    batch_pd: bool  # a pinned batch that differs per design

    def cand_batch(self, d_rows: Mapping[str, Any]) -> Any:
        return d_rows["workload"]["batch"] if self.batch_pd else self.cand["batch"][:, None]


def _evaluate_perf(design: Mapping[str, Any]) -> dict[str, np.ndarray]:
    if "disaggregated" in design:  # the design parameter: searchable, overrides the workload
        return _by_serving_mode(design)
    pr = _prepare(design)
    # A zero rate (no clock that cools, no HBM bandwidth, no link) makes the times of the
    # candidates that need it infinite, and their utilizations 0/0: such a candidate never
    # wins where another runs, and a design that cannot run gets the documented figures of
    # ``_stalled`` in place of them (docs/evaluators.md, "Designs that cannot run").
    with np.errstate(divide="ignore", invalid="ignore"):
        if pr.s.phase == "train":
            best, sel = _select_train(pr)
        else:
            best, sel = _select_serving(pr)
    return _figures(pr, best, sel)


def _prepare(design: Mapping[str, Any]) -> _Prepared:
    """The hardware of every design and the parallelism candidates of its workload."""
    wl = design["workload"]
    a = arch_of(wl["model"])
    fl = flatten(design)
    flat = fl.design()
    s, slo, precision = serving_of(fl.workload)
    hw = hardware(flat, precision)
    hw["net_bytes_per_s"] = _net_bytes_per_s(flat, hw)
    hw.update(fabric_hw(flat, flat["link_type"]))
    hw.update(pool.pool_hw(flat, hw, a, s))  # memory pool over optics; {} when none
    cand = candidates(flat, fl.workload, a)
    batch_pd = "batch" in fl.wl_keys  # a pinned batch that differs per design
    k = cand["tp"].size
    cluster = flat["cluster_size"]
    if np.any(~(cluster >= 1)) or np.any(cluster != np.floor(cluster)):
        raise ContextError("cluster_size", "expected a whole number of GPUs >= 1")
    chunk = max(1, CHUNK_ELEMS // k)
    if precision == "fp4":  # attention runs at the KV cache's precision (FP8 or BF16)
        hw["attn_tflops_per_gpu"] = attention_tflops(flat, hw, s)
    search = {key: hw[key] for key in search_keys(precision)}
    search.update({key: hw[key] for key in pool.POOL_HW if key in hw})
    return _Prepared(fl, flat, a, s, slo, hw, cand, search, cluster, chunk, batch_pd)


def _select_train(pr: _Prepared) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Training: the best candidate of every design, in memory blocks of many designs."""
    best_parts: list[np.ndarray] = []
    parts: list[dict[str, np.ndarray]] = []
    n = pr.hw["tflops_per_gpu"].size
    for start in range(0, n, pr.chunk):  # memory blocks of many designs, not a per-design loop
        sl = slice(start, start + pr.chunk)
        d_rows = pr.fl.rows(sl)
        s_rows, slo_rows = serving_rows(pr.s, pr.slo, sl)
        h_rows = {key: v[sl] for key, v in pr.search.items()}
        b, p = select_train(
            d_rows, h_rows, pr.a, s_rows, pr.cand, pr.cand_batch(d_rows), pr.cluster[sl], slo_rows
        )
        best_parts.append(b)
        parts.append(p)
    if len(parts) == 1:
        return best_parts[0], dict(parts[0])
    best = np.concatenate(best_parts)
    return best, {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


def _select_serving(pr: _Prepared) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Serving: a candidate's timing depends on the hardware, not on the cluster size, so it is
    computed once per distinct hardware and shared by the designs that have it."""
    fl, hw, cand, cluster, chunk = pr.fl, pr.hw, pr.cand, pr.cluster, pr.chunk
    n = hw["tflops_per_gpu"].size
    pooled = pr.s.pooled  # a central queue: the timing reads the replicas, so the cluster size
    g = search_groups(fl, hw, (np.broadcast_to(cluster, (n,)),) if pooled else ())
    groups = cand["group"]
    whole = bool(  # (every cluster size is a whole number: _prepare checked)
        np.all(np.abs(cluster) < 2.0**52) and np.all(groups == np.floor(groups))
    )
    best_all = np.empty(n, dtype=np.intp)
    sel_all: dict[str, np.ndarray] = {}
    grid = _grid(pr, g)
    if grid is not None:  # one timing on the product of the hardware's axes
        idx = g.first
        s_rows, slo_rows = serving_rows(pr.s, pr.slo, idx)
        t = grid_timing(fl.rows(idx), pr.a, s_rows, cand, slo_rows, whole, n > 8, grid)
        cols = grid.col[g.inv]
        # choose scores only the contenders (a few of the k candidates), so its blocks hold
        # no more than a timed figure of the grid (_GRID_ELEMS): most batches take one block
        block = _GRID_ELEMS // t["contenders"].size if t["contenders"].size else chunk
        if n <= block:
            return choose(t, cols, cand, cluster)
        for start in range(0, n, block):
            part = slice(start, start + block)
            b, p = choose(t, cols[part], cand, cluster[part])
            best_all[part] = b
            for key, v in p.items():
                if key not in sel_all:
                    sel_all[key] = np.empty(n, dtype=v.dtype)
                sel_all[key][part] = v
        return best_all, sel_all
    n_groups = g.first.size
    for u0 in range(0, n_groups, chunk):
        u1 = min(u0 + chunk, n_groups)
        idx = g.first[u0:u1]
        d_rows = fl.rows(idx)
        s_rows, slo_rows = serving_rows(pr.s, pr.slo, idx)
        h_rows = {key: v[idx] for key, v in pr.search.items()}
        if pooled:
            h_rows["cluster_size"] = np.broadcast_to(cluster, (n,))[idx]
        # the designs of these hardware groups, in their order
        mine = (
            np.arange(n) if u1 - u0 == n_groups else np.flatnonzero((g.inv >= u0) & (g.inv < u1))
        )
        t = timing(
            d_rows,
            h_rows,
            pr.a,
            s_rows,
            cand,
            pr.cand_batch(d_rows),
            slo_rows,
            whole,
            mine.size > 8,
        )
        for start in range(0, mine.size, chunk):
            rows = mine[start : start + chunk]
            b, p = choose(t, g.inv[rows] - u0, cand, cluster[rows])
            best_all[rows] = b
            for key, v in p.items():
                if key not in sel_all:
                    sel_all[key] = np.empty(n, dtype=v.dtype)
                sel_all[key][rows] = v
    return best_all, dict(sel_all)


def _grid(pr: _Prepared, g: Any) -> Grid | None:
    """The hardware groups on a product grid (``objectives.perf.search.product_grid``) when
    only hardware figures vary per design (no technology or workload values, no pinned batch
    per design, no memory pool), and the grid is worth it; else None."""
    if pr.fl.tech_keys or pr.fl.wl_keys or pr.batch_pd or g.first.size < _GRID_MIN:
        return None
    if any(key in pr.search for key in pool.POOL_HW):
        return None
    # Measured to gain only where no batch is solved per point (a pinned batch, saturated
    # continuous batching, no SLO): a bisection runs on every point of the grid alike.
    s = pr.s
    if s.scheduler != "continuous" or s.arrivals != "saturated" or s.phase == "prefill":
        return None
    if any(x is not None for x in pr.slo) or not np.all(np.isfinite(pr.cand["batch"])):
        return None
    return product_grid({key: v[g.first] for key, v in pr.search.items()}, pr.cand["tp"].size)


#: Groups below which the grid is not tried (few groups: their rows are as cheap).
_GRID_MIN = 256


def _figures(pr: _Prepared, best: np.ndarray, sel: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The metrics of the chosen candidates: parallelism, power, tokens and the hardware's."""
    s, fl, flat, hw, cand, cluster = pr.s, pr.fl, pr.flat, pr.hw, pr.cand, pr.cluster
    n = hw["tflops_per_gpu"].size
    sel["tp"], sel["pp"] = cand["tp"][best], cand["pp"][best]
    sel["ep"] = cand["ep"][best] if "ep" in cand else np.ones_like(sel["tp"])

    group = sel["tp"] * sel["pp"]
    if s.phase == "train":
        group = group * cp_of(fl.workload)
    elif "cp" in cand:  # context-parallel prefill: cp groups of tp x pp
        group = cand["group"][best]
    coolable = hw["clock_eff_ghz"] > 0
    stalled = ~(coolable & (hw["hbm_tbps_per_gpu"] > 0) & np.isfinite(sel["step_s"]))
    if stalled.any():
        _stalled(sel, stalled, tech(flat, "lifetime_years") * SECONDS_PER_YEAR)
    runnable = (sel["model_fits"] > 0) & ~stalled
    busy = sel["replicas"] * group
    p_gpu = gpu_power_w(flat, hw, sel["compute_utilization"], sel["hbm_bytes_per_s"])
    p_idle = idle_gpu_power_w(flat, hw)
    fabric_w = fabric_w_per_gpu(flat, hw)
    overhead = overhead_w_per_gpu(flat, hw) + fabric_w
    cluster_w = busy * p_gpu + (cluster - busy) * p_idle + cluster * overhead
    fans, pue, pue_cooling = it_power_factor(flat), tech(flat, "pue"), pue_factor(flat)
    cluster_w = cluster_w * fans  # server fans: objectives/cooling.py
    if "pool_weights" in hw:  # the memory pool's DRAM and links
        cluster_w = cluster_w + pool.pool_power_w(flat, busy, sel["hbm_bytes_per_s"])
    tokens = sel["replicas"] * sel["replica_tokens_per_s"]
    served = np.ones_like(tokens)
    if s.arrival_rate_per_s is not None and s.arrivals == "poisson":
        offered = sel["replicas"] * s.arrival_rate_per_s * s.output_tokens
        with np.errstate(divide="ignore", invalid="ignore"):
            served = np.where(offered > 0, np.minimum(tokens / offered, 1.0), 1.0)
        served = np.where(served > 1.0 - 1e-9, 1.0, served)  # all of it, but for rounding
    out = {
        "tflops_per_gpu": hw["tflops_per_gpu"],
        "hbm_tbps_per_gpu": hw["hbm_tbps_per_gpu"],
        "hbm_gb_per_gpu": hw["hbm_gb_per_gpu"],
        "net_gbps_per_gpu": hw["net_gbps_per_gpu"],
        "clock_eff_ghz": hw["clock_eff_ghz"],
        "power_density_w_per_mm2": hw["power_density_w_per_mm2"],
        "tokens_per_s": tokens,
        "ttft_s": sel["ttft_s"] if s.phase != "train" else np.zeros_like(sel["ttft_s"]),
        "tpot_s": sel["tpot_s"],
        "step_s": sel["step_s"],
        "mfu": sel["compute_utilization"],
        "gpu_power_w": p_gpu,
        "package_power_w": hw["package_power_w"],
        "cluster_power_w": cluster_w,
        "facility_power_w": cluster_w * pue * pue_cooling,
        "facility_w_per_gpu": (
            hw["package_power_w"]
            * (
                1
                + tech(flat, "node_nameplate_overhead_w_per_w")
                + tech(flat, "network_power_per_gpu_watt")
            )
            + fabric_w
        )
        * fans  # a liquid-cooled node provisions no server fans
        * pue
        * pue_cooling,
        "tokens_per_joule": _ratio(tokens, cluster_w),
        "model_fits": sel["model_fits"],
        "coolable": coolable.astype(float),
        "runnable": runnable.astype(float),
        "slo_met": sel["slo_met"],
        "load_served_fraction": served,
        "tp": sel["tp"],
        "pp": sel["pp"],
        "ep": _ep(s, fl.workload, pr.a, sel),
        "attention_dp": _attention_dp(s, cand, best, sel),
        "replicas": sel["replicas"],
        "gpus_per_replica": group,
        "batch": sel["batch"],
        "compute_utilization": sel["compute_utilization"],
        # An achieved rate is at most the peak: the traffic of a cycle over its duration can
        # pass it where the step overlaps phases timed apart (1.04 in MoE training, issue 39).
        "hbm_utilization": np.minimum(
            _ratio(sel["hbm_bytes_per_s"], hw["hbm_tbps_per_gpu"] * 1e12), 1.0
        ),
        "memory_used_fraction": sel["memory_used_fraction"],
        "shoreline_used_fraction": hw["shoreline_used_fraction"],
        "die_perimeter_mm": hw["die_perimeter_mm"],
        "topology_ok": sel["topology_ok"],
        "scaleup_domain_gpus": np.minimum(hw["domain_gpus"], cluster),
        "fabric_hops": hw["fabric_hops"],
        "hbm_weight_copies_gb": pool.hbm_weight_copies_gb(flat, sel["replicas"], pr.a, s),
    }
    return {key: v.reshape(fl.shape) for key, v in own_arrays(out, n).items()}


def _stalled(sel: dict[str, np.ndarray], stalled: np.ndarray, life_s: Any) -> None:
    """The figures of the designs whose chosen step cannot run (no clock that cools, no HBM
    bandwidth, or a link its parallelism needs with none): no replica serves and no work is
    done (rates, utilizations and the running batch 0), and a time that never ends is the
    cluster's lifetime, the horizon past which nothing is counted (docs/evaluators.md)."""
    zero = ("replicas", "replica_tokens_per_s", "compute_utilization", "hbm_bytes_per_s", "batch")
    for key in zero:
        sel[key] = np.where(stalled, 0.0, sel[key])
    life = np.broadcast_to(life_s, stalled.shape)
    for key in ("step_s", "ttft_s", "tpot_s"):
        t = sel[key]
        sel[key] = np.where(stalled & ~np.isfinite(t), life, t)


def _ratio(part: np.ndarray, whole: np.ndarray) -> np.ndarray:
    """``part / whole``, 0 where there is no whole (no HBM: nothing of it is used)."""
    part, whole = np.broadcast_arrays(np.asarray(part, float), np.asarray(whole, float))
    return np.divide(part, whole, out=np.zeros(part.shape), where=whole > 0)


def _ep(s: Serving, wl: Mapping[str, Any], a: Arch, sel: Mapping[str, np.ndarray]) -> np.ndarray:
    """Expert-parallel degree: serving, the candidate chosen (experts over ep GPUs of the TP
    group, objectives.perf.moe); training, workload.ep GPUs of the data-parallel group (the
    candidate chosen when auto); 1 for a dense model."""
    tp = sel["tp"]
    if a.experts <= 1:
        return np.ones_like(tp)
    if s.phase == "train" and not ep_auto(wl):
        return np.minimum(train_options(wl)["ep"], a.experts) + np.zeros_like(tp)
    return sel["ep"]


def _attention_dp(
    s: Serving, cand: Mapping[str, np.ndarray], best: np.ndarray, sel: Mapping[str, np.ndarray]
) -> np.ndarray:
    """1 where the chosen serving candidate runs attention data-parallel (ep > 1 with it)."""
    if s.phase == "train" or "adp" not in cand:
        return np.zeros_like(sel["tp"])
    return np.where(sel["ep"] > 1, cand["adp"][best], 0.0)


def _by_serving_mode(design: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Designs with the ``disaggregated`` parameter (0/1, may vary per design): each mode's
    designs are evaluated as one vectorized batch and the results put back in place."""
    rest = {k: v for k, v in design.items() if k != "disaggregated"}
    try:
        flag = np.asarray(design["disaggregated"], dtype=float)
    except (TypeError, ValueError):
        raise ContextError("disaggregated", "expected 0 or 1") from None
    if not np.isin(flag, (0.0, 1.0)).all():
        raise ContextError(
            "disaggregated", f"expected 0 or 1, got {flag[~np.isin(flag, (0.0, 1.0))].flat[0]}"
        )
    if flag.ndim == 0 or np.all(flag == flag.flat[0]):
        rest["workload"] = {**design["workload"], "disaggregated": bool(flag.flat[0])}
        out = _evaluate_perf(rest)
        return (
            out
            if flag.ndim == 0
            else {
                k: np.broadcast_to(v, np.broadcast_shapes(v.shape, flag.shape)).copy()
                for k, v in out.items()
            }
        )
    fl = flatten(
        {
            **rest,
            "cluster_size": np.broadcast_to(
                rest["cluster_size"],
                np.broadcast_shapes(np.shape(rest["cluster_size"]), flag.shape),
            ),
        }
    )
    f = np.broadcast_to(flag, fl.shape).reshape(-1)
    res: dict[str, np.ndarray] = {}
    for mode in (0.0, 1.0):
        idx = np.flatnonzero(f == mode)
        sub: dict[str, Any] = {k: v[idx] for k, v in fl.values.items()}
        sub["technology"] = {**fl.technology, **{k: fl.technology[k][idx] for k in fl.tech_keys}}
        w = {**fl.workload, **{k: fl.workload[k][idx] for k in fl.wl_keys}}
        sub["workload"] = {**w, "disaggregated": bool(mode)}
        part = _evaluate_perf(sub)
        for k, v in part.items():
            if k not in res:
                res[k] = np.empty(f.size)
            res[k][idx] = v
    return {k: v.reshape(fl.shape) for k, v in res.items()}


def _net_bytes_per_s(d: Mapping[str, Any], hw: Mapping[str, np.ndarray]) -> np.ndarray:
    """Achievable per-direction scale-up bandwidth in bytes/s."""
    return hw["net_gbps_per_gpu"] * 1e9 / 8 * tech(d, "network_efficiency")
