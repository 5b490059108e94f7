"""Roofline timing of LLM serving for a grid of parallelism candidates.

Shapes: anything that broadcasts. The search passes candidate degrees as ``(k, 1)`` columns
and per-design figures (hardware, and technology or workload values that vary per design) as
``(1, n)`` rows, so every result is ``(k, n)``: long contiguous rows keep numpy fast.

Each operator (the layer's GEMMs, its attention, the LM head) costs max(compute, memory) at its
own efficiency factor and the tensor-parallel all-reduces add exposed communication, per layer,
as in LLMCompass/GenZ-style operator rooflines.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from objectives._evaluator import tech
from objectives.perf.model import Arch
from objectives.perf.network import allreduce_s, p2p_s


@dataclass(frozen=True)
class Serving:
    """Workload fields the timing needs, already validated."""

    bytes_per_elem: float  # weights, activations and KV cache share the precision
    input_tokens: Any  # a float, or an array broadcasting against the design batch
    output_tokens: Any
    phase: str


@dataclass
class Step:
    """Per-GPU time and work of one pipeline stage processing one micro-batch."""

    time_s: np.ndarray
    flops: np.ndarray
    hbm_bytes: np.ndarray


def _roofline(flops: Any, nbytes: Any, peak_flops: Any, peak_bw: Any, ec: Any, em: Any) -> Any:
    return np.maximum(flops / (peak_flops * ec), nbytes / (peak_bw * em))


def stage_step(
    d: Mapping[str, Any],
    hw: Mapping[str, np.ndarray],
    a: Arch,
    s: Serving,
    tp: np.ndarray,
    pp: np.ndarray,
    b: np.ndarray,
    q: float,
    ctx_per_seq: Any,
    kv_len: Any,
) -> Step:
    """One stage, micro-batch of ``b`` sequences with ``q`` new tokens each.

    ``ctx_per_seq`` is the sum over the q queries of the keys each attends to (q*L in decode,
    S(S+1)/2 for a causal prefill); ``kv_len`` is the KV-cache length read per sequence.
    """
    peak_f = hw["tflops_per_gpu"] * 1e12
    peak_bw = hw["hbm_tbps_per_gpu"] * 1e12
    net_bw = hw["net_bytes_per_s"]
    alpha = tech(d, "collective_step_latency_s")
    launch = tech(d, "collective_launch_s")
    e = s.bytes_per_elem
    tokens = b * q
    layers_stage = np.ceil(a.layers / pp)

    # GEMMs: MoE layers stream only the experts the micro-batch's tokens are routed to
    # (expected distinct experts with uniform top-k routing).
    touched = a.experts * (1 - (1 - a.experts_per_token / a.experts) ** tokens)
    w_elems = a.attn_params + a.router_params + touched * a.expert_params
    act_elems = tokens * (8 * a.hidden + 3 * a.experts_per_token * a.ffn / tp)
    gemm_flops = 2 * tokens * a.layer_active_params / tp
    gemm_bytes = w_elems * e / tp + act_elems * e
    t_gemm = _roofline(
        gemm_flops,
        gemm_bytes,
        peak_f,
        peak_bw,
        tech(d, "gemm_compute_efficiency"),
        tech(d, "gemm_memory_efficiency"),
    )

    # Attention: heads split over TP; KV heads are replicated once tp exceeds them.
    heads_gpu = a.heads / tp
    kv_heads_gpu = np.maximum(a.kv_heads / tp, 1.0)
    attn_flops = 4 * a.head_dim * heads_gpu * b * ctx_per_seq
    kv_read = b * kv_len * 2 * kv_heads_gpu * a.head_dim * e
    qkvo = tokens * (2 * heads_gpu + 2 * kv_heads_gpu) * a.head_dim * e
    attn_bytes = kv_read + qkvo
    t_attn = _roofline(
        attn_flops,
        attn_bytes,
        peak_f,
        peak_bw,
        tech(d, "attention_compute_efficiency"),
        tech(d, "attention_memory_efficiency"),
    )

    # Two all-reduces per layer (after attention and after the MLP), not overlapped.
    allreduce = allreduce_s(tokens * a.hidden * e, tp, net_bw, alpha)
    comm = 2 * (allreduce + np.where(tp > 1, launch, 0.0))

    t_layer = t_gemm + t_attn + comm + tech(d, "layer_overhead_s")
    # LM head on the last stage: logits of the last position of each sequence only.
    head_flops = 2 * b * a.hidden * a.vocab / tp
    head_bytes = a.embedding_params * e / tp
    t_head = _roofline(
        head_flops,
        head_bytes,
        peak_f,
        peak_bw,
        tech(d, "gemm_compute_efficiency"),
        tech(d, "gemm_memory_efficiency"),
    )
    return Step(
        time_s=layers_stage * t_layer + t_head,
        flops=layers_stage * (gemm_flops + attn_flops) + head_flops,
        hbm_bytes=layers_stage * (gemm_bytes + attn_bytes) + head_bytes,
    )


def memory_need_bytes(
    a: Arch, s: Serving, tp: np.ndarray, pp: np.ndarray, batch: np.ndarray, micro: np.ndarray
) -> dict[str, np.ndarray]:
    """Per-GPU HBM need of the bottleneck stage: weights, KV cache, prefill activations."""
    e = s.bytes_per_elem
    layers_stage = np.ceil(a.layers / pp)
    emb_copies = np.where(pp > 1, 1.0, 2.0)  # embedding on the first stage, LM head on the last
    weights = (layers_stage * a.layer_params + emb_copies * a.embedding_params) * e / tp
    kv_heads_gpu = np.maximum(a.kv_heads / tp, 1.0)
    seq_len = s.input_tokens + s.output_tokens
    kv = batch * seq_len * layers_stage * 2 * kv_heads_gpu * a.head_dim * e
    act = micro * s.input_tokens * (a.hidden + 2 * a.experts_per_token * a.ffn / tp) * e
    return {"weights": weights, "kv": kv, "act": act, "total": weights + kv + act}


def serve(
    d: Mapping[str, Any],
    hw: Mapping[str, np.ndarray],
    a: Arch,
    s: Serving,
    tp: np.ndarray,
    pp: np.ndarray,
    batch: np.ndarray,
) -> dict[str, np.ndarray]:
    """Throughput and latency of one replica for every (design, candidate) pair."""
    n_micro = np.minimum(pp, batch)  # micro-batches in flight through the pipeline
    b = batch / n_micro
    e = s.bytes_per_elem
    S, out = s.input_tokens, s.output_tokens
    net_bw, alpha = hw["p2p_bytes_per_s"], tech(d, "collective_step_latency_s")

    pre = stage_step(d, hw, a, s, tp, pp, b, S, S * (S + 1) / 2, S)
    hop_pre = np.where(pp > 1, p2p_s(b * S * a.hidden * e, net_bw, alpha), 0.0)
    t_prefill = (n_micro + pp - 1) * (pre.time_s + hop_pre)

    # Decode: the context grows by one per step, attention cost is linear in it, so the mean
    # step is the step at the mean context.
    ctx = S + out / 2
    dec = stage_step(d, hw, a, s, tp, pp, b, 1.0, ctx, ctx)
    hop_dec = np.where(pp > 1, p2p_s(b * a.hidden * e, net_bw, alpha), 0.0)
    t_round = pp * (dec.time_s + hop_dec)
    steps = np.maximum(out - 1.0, 0.0)

    if s.phase == "prefill":
        cycle, tokens = t_prefill, batch * S
        flops, nbytes = n_micro * pre.flops, n_micro * pre.hbm_bytes
    elif s.phase == "decode":
        cycle, tokens = t_round, batch
        flops, nbytes = n_micro * dec.flops, n_micro * dec.hbm_bytes
    else:  # serve: static batch, prefill then all decode steps (TensorRT-LLM benchmark style)
        cycle = t_prefill + steps * t_round
        tokens = batch * out
        flops = n_micro * (pre.flops + steps * dec.flops)
        nbytes = n_micro * (pre.hbm_bytes + steps * dec.hbm_bytes)
    mem = memory_need_bytes(a, s, tp, pp, batch, b)
    return {
        "replica_tokens_per_s": tokens / cycle,
        "ttft_s": t_prefill,
        "tpot_s": t_round,
        "step_s": cycle,
        "compute_utilization": flops / (cycle * hw["tflops_per_gpu"] * 1e12),
        "hbm_bytes_per_s": nbytes / cycle,
        "mem_need_bytes": mem["total"],
        "kv_bytes": mem["kv"],
    }
