"""Performance and power of an AI cluster serving (or training) a transformer.

``evaluate_perf(design)`` scores every design of a numpy batch: per-GPU peak figures from die
area, HBM stacks and links; a per-layer roofline of prefill and decode for each candidate
tensor x pipeline parallelism (and batch, when ``workload.batch`` is ``auto``), searched by
broadcasting over a small candidate axis and an argmax; then power and efficiency.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import MEMO_KEY, broadcast, builtin_evaluator, tech
from objectives.errors import ContextError
from objectives.perf.hardware import hardware
from objectives.perf.model import Arch, arch_of
from objectives.perf.power import gpu_power_w, idle_gpu_power_w, overhead_w_per_gpu
from objectives.perf.serving import Serving, serve
from objectives.perf.training import train
from objectives.perf.workload import candidates, serving_of

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
    "ttft_s": ("s", "time to first token (prefill of the batch); 0 when training"),
    "tpot_s": ("s", "mean time per output token (one decode step of the batch); 0 when training"),
    "step_s": ("s", "serve: one static-batch cycle (prefill + decode); train: one optimizer step"),
    "mfu": ("1", "model FLOPs / (peak FLOPs x time) of the busy GPUs (training MFU)"),
    "gpu_power_w": ("W", "power of one serving GPU package at this workload"),
    "package_power_w": ("W", "peak (TDP-like) package power: full compute, HBM and links"),
    "cluster_power_w": ("W", "IT power of the serving GPUs incl. host and network share"),
    "facility_power_w": ("W", "cluster power times PUE"),
    "tokens_per_joule": ("tokens/J", "tokens_per_s / cluster_power_w"),
    "model_fits": ("0/1", "1 if some parallelism fits weights, KV cache and activations in HBM"),
    "slo_met": ("0/1", "1 if the chosen configuration meets the TTFT and TPOT SLOs"),
    "tp": ("GPUs", "tensor-parallel degree chosen"),
    "pp": ("GPUs", "pipeline-parallel degree chosen"),
    "ep": ("GPUs", "expert-parallel degree (MoE experts spread over the TP group; 1 if dense)"),
    "replicas": ("replicas", "model replicas serving in the cluster"),
    "gpus_per_replica": ("GPUs", "tp x pp: the model-parallel group a failure takes down"),
    "batch": ("sequences", "concurrent sequences per replica"),
    "compute_utilization": ("1", "achieved / peak tensor FLOPs over the serving cycle"),
    "hbm_utilization": ("1", "achieved / peak HBM bandwidth over the serving cycle"),
    "memory_used_fraction": ("1", "HBM need / usable HBM of the chosen configuration"),
    "shoreline_used_fraction": ("1", "die edge used by HBM PHYs and link I/O / die perimeter"),
    "die_perimeter_mm": ("mm", "perimeter of one compute die"),
}

_NUMERIC = (
    "die_area_mm2",
    "die_aspect_ratio",
    "dies_per_gpu",
    "hbm_stacks_per_die",
    "hbm_tbps_per_stack",
    "hbm_gb_per_stack",
    "links_per_gpu",
    "optics_per_link",
    "lane_gbps",
    "clock_ghz",
    "cluster_size",
)
_STRINGS = ("link_type", "cooling")
_CHUNK_ELEMS = 1 << 20  # (designs x candidates) per block: bounds memory, keeps numpy fast


def _flatten(design: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[int, ...]]:
    """Broadcast the design's batch values to one shape and flatten them to 1-D."""
    vals: dict[str, np.ndarray] = {}
    for k in _NUMERIC:
        if k not in design:
            raise ContextError(k, "missing from the design (resolve the context first)")
        try:
            vals[k] = np.asarray(design[k], dtype=float)
        except (TypeError, ValueError):
            raise ContextError(k, f"expected a number, got {design[k]!r}") from None
    for k in _STRINGS:
        vals[k] = np.asarray(design.get(k, "air" if k == "cooling" else "electrical"))
    shape = np.broadcast_shapes(*(v.shape for v in vals.values()))
    flat: dict[str, Any] = {k: np.broadcast_to(v, shape).reshape(-1) for k, v in vals.items()}
    flat["technology"] = design["technology"]
    flat["workload"] = design["workload"]
    return flat, shape


def _select(
    d: Mapping[str, Any],
    hw: Mapping[str, np.ndarray],
    a: Arch,
    s: Serving,
    cand: Mapping[str, np.ndarray],
    cluster: np.ndarray,
    slo: tuple[float | None, float | None],
) -> dict[str, np.ndarray]:
    """Score every candidate of every design in the block and keep the best per design."""
    h = {k: v[:, None] for k, v in hw.items()}
    tp, pp, batch = (cand[k][None, :] for k in ("tp", "pp", "batch"))
    # An electrical scale-up domain (NVLink in one HGX node) is bounded; groups beyond it talk
    # over the scale-out NICs. Optical fabrics reach the whole cluster.
    domain = tech(d, "electrical_scaleup_domain_gpus")
    scaleout = h["scaleout_gbps_per_gpu"] * 1e9 / 8 * tech(d, "network_efficiency")
    elec = h["is_electrical"] > 0
    h["p2p_bytes_per_s"] = np.where(elec & (tp * pp > domain), scaleout, h["net_bytes_per_s"])
    h["dp_bytes_per_s"] = np.where(
        elec & (cluster[:, None] > domain), scaleout, h["net_bytes_per_s"]
    )
    h["net_bytes_per_s"] = np.where(elec & (tp > domain), scaleout, h["net_bytes_per_s"])
    group = tp * pp
    replicas = np.floor(cluster[:, None] / group)
    if s.phase == "train":
        r = train(d, h, a, s, tp, pp, batch, replicas)
    else:
        r = serve(d, h, a, s, tp, pp, batch)
    usable = h["hbm_gb_per_gpu"] * 1e9 * tech(d, "hbm_usable_fraction")
    mem_ratio = r["mem_need_bytes"] / usable
    fits = (mem_ratio <= 1) & (replicas >= 1)
    ttft_slo, tpot_slo = slo
    slo_excess = np.zeros_like(mem_ratio)
    if ttft_slo is not None:
        slo_excess = slo_excess + np.maximum(r["ttft_s"] / ttft_slo - 1, 0)
    if tpot_slo is not None:
        slo_excess = slo_excess + np.maximum(r["tpot_s"] / tpot_slo - 1, 0)
    tput = replicas * r["replica_tokens_per_s"]
    # Feasible candidates rank by throughput (>= 0); otherwise least memory overflow, then
    # least SLO excess, so that a design that fits nothing still reports finite figures.
    score = np.where(
        fits & (slo_excess == 0),
        tput,
        np.where(fits, -1 - slo_excess, -1e9 - np.maximum(mem_ratio, 1) - (replicas < 1) * 1e6),
    )
    best = np.argmax(score, axis=1)
    rows = np.arange(score.shape[0])

    def pick(x: np.ndarray) -> np.ndarray:
        return np.broadcast_to(x, score.shape)[rows, best]

    fit_any = pick(fits.astype(float))
    out = {k: pick(v) for k, v in r.items()}
    out.update(
        tp=pick(tp),
        pp=pick(pp),
        batch=pick(batch),
        replicas=pick(replicas) * fit_any,
        model_fits=fit_any,
        slo_met=pick((slo_excess == 0).astype(float)) * fit_any,
        memory_used_fraction=pick(mem_ratio),
    )
    return out


@builtin_evaluator(metrics=METRICS)
def evaluate_perf(design: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Cluster serving throughput, latency and power for a (batch of) design(s).

    Cost and availability call this too; when the design carries a scratch dict under
    ``MEMO_KEY`` (the engine gives each evaluation a fresh one) the result is computed once.
    """
    memo = design.get(MEMO_KEY)
    if isinstance(memo, dict):
        if "perf" not in memo:
            memo["perf"] = _evaluate_perf(design)
        return memo["perf"]
    return _evaluate_perf(design)


def _evaluate_perf(design: Mapping[str, Any]) -> dict[str, np.ndarray]:
    wl = design["workload"]
    a = arch_of(wl["model"])
    s, slo, precision = serving_of(wl)
    flat, shape = _flatten(design)
    hw = hardware(flat, precision)
    hw["net_bytes_per_s"] = _net_bytes_per_s(flat, hw)
    cand = candidates(flat, wl, a)
    n, k = hw["tflops_per_gpu"].size, cand["tp"].size
    cluster = flat["cluster_size"]
    chunk = max(1, _CHUNK_ELEMS // k)
    parts: list[dict[str, np.ndarray]] = []
    for start in range(0, n, chunk):  # memory blocks of many designs, not a per-design loop
        sl = slice(start, start + chunk)
        hw_block = {key: v[sl] for key, v in hw.items()}
        parts.append(_select(flat, hw_block, a, s, cand, cluster[sl], slo))
    sel = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}

    group = sel["tp"] * sel["pp"]
    busy = sel["replicas"] * group
    p_gpu = gpu_power_w(flat, hw, sel["compute_utilization"], sel["hbm_bytes_per_s"])
    p_idle = idle_gpu_power_w(flat, hw)
    overhead = overhead_w_per_gpu(flat, hw)
    cluster_w = busy * p_gpu + (cluster - busy) * p_idle + cluster * overhead
    tokens = sel["replicas"] * sel["replica_tokens_per_s"]
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
        "facility_power_w": cluster_w * tech(flat, "pue"),
        "tokens_per_joule": tokens / cluster_w,
        "model_fits": sel["model_fits"],
        "slo_met": sel["slo_met"],
        "tp": sel["tp"],
        "pp": sel["pp"],
        "ep": np.minimum(sel["tp"], a.experts) if a.experts > 1 else np.ones_like(sel["tp"]),
        "replicas": sel["replicas"],
        "gpus_per_replica": group,
        "batch": sel["batch"],
        "compute_utilization": sel["compute_utilization"],
        "hbm_utilization": sel["hbm_bytes_per_s"] / (hw["hbm_tbps_per_gpu"] * 1e12),
        "memory_used_fraction": sel["memory_used_fraction"],
        "shoreline_used_fraction": hw["shoreline_used_fraction"],
        "die_perimeter_mm": hw["die_perimeter_mm"],
    }
    return {key: v.reshape(shape) for key, v in broadcast(out).items()}


def _net_bytes_per_s(d: Mapping[str, Any], hw: Mapping[str, np.ndarray]) -> np.ndarray:
    """Achievable per-direction scale-up bandwidth in bytes/s."""
    return hw["net_gbps_per_gpu"] * 1e9 / 8 * tech(d, "network_efficiency")
