"""One layer of today's MoE models: expert parallelism, attention data parallelism, MLA.

A replica's tensor-parallel group of ``tp`` GPUs runs its MoE layers expert-parallel over ``ep``
of them (``workload.ep``; ep divides tp): each GPU holds experts / ep experts, each split
tp / ep ways. The attention then runs tensor-parallel over t = tp / ep GPUs and data-parallel
over the ep such groups, each with its own share of the sequences (attention DP, as TensorRT-LLM
and SGLang serve DeepSeek: "TP8 EP8 + attention-DP" is tp 8, ep 8). Each MoE layer dispatches
every token to the GPUs holding its experts and combines the results back: two all-to-alls on
the scale-up fabric's topology (``objectives.perf.network.all_to_all_s``). ep = 1 is plain
tensor parallelism (two all-reduces a layer). Dense layers of a MoE model (DeepSeek's first
three, Llama 4 Maverick's every other) run their MLP tensor-parallel over t.

FLOPs per GPU do not depend on ep; the weights each GPU streams do (attention weights are
replicated over the ep groups, t-way split), and so do the KV cache (each attention group keeps
only its sequences: MLA's single latent is no longer replicated tp ways) and the traffic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import tech
from objectives.perf.model import Arch
from objectives.perf.network import all_to_all_s, allreduce_s, dispatch_destinations


def attention_group(tp: Any, dp: Any) -> Any:
    """GPUs one attention group's tensor parallelism spans: t = tp / dp, dp the attention
    data-parallel degree (ep with attention DP, 1 without)."""
    return tp / dp


def kv_elems_per_gpu(a: Arch, t: Any) -> Any:
    """KV elements one GPU stores per token per layer of its own sequences: GQA heads split
    over the attention group (at least one KV head each), MLA's latent replicated on each."""
    if a.mla:
        return a.kv_elems_per_token_layer + 0.0 * t
    return a.kv_elems_per_token_layer * np.maximum(a.kv_heads / t, 1.0) / a.kv_heads


def weight_elems_per_gpu(a: Arch, tp: Any, dp: Any, layers: Any, emb_copies: Any) -> Any:
    """Stored weights of one GPU: attention (and dense MLPs, shared experts) split over the
    attention group (tp / dp GPUs), routed experts over the whole tensor-parallel group."""
    t = attention_group(tp, dp)
    f = a.moe_fraction
    routed = f * (a.experts * a.expert_params + a.router_params)
    replicated = a.attn_params + f * a.shared_experts * a.expert_params
    replicated = replicated + (1 - f) * a.dense_mlp_params
    return layers * (replicated / t + routed / tp) + emb_copies * a.embedding_params / tp


def weight_elems_split(a: Arch, tp: Any, dp: Any, layers: Any) -> tuple[Any, Any]:
    """``weight_elems_per_gpu`` of the layers (no embeddings) as (attention, router and dense
    MLPs; routed and shared experts), for a checkpoint that quantizes only its experts."""
    t = attention_group(tp, dp)
    f = a.moe_fraction
    dense = a.attn_params / t + (1 - f) * a.dense_mlp_params / t + f * a.router_params / tp
    expert = f * a.shared_experts * a.expert_params / t + f * a.experts * a.expert_params / tp
    return layers * dense, layers * expert


def dispatch_bytes_per_token(a: Arch, ep: Any, elem_bytes: float) -> Any:
    """Bytes one token sends in one MoE layer's dispatch (and again in its combine): its hidden
    vector once to every other GPU of the ep group that holds one of its routed experts."""
    return dispatch_destinations(a.experts, a.experts_per_token, ep) * a.hidden * elem_bytes


def layer(
    d: Mapping[str, Any],
    hw: Mapping[str, Any],
    a: Arch,
    *,
    e: float,
    ekv: float,
    ce: float,
    ew: float | None = None,
    ed: float | None = None,
    tp: Any,
    ep: Any,
    tokens: Any,
    attention: list[tuple[Any, Any]],
    eff: tuple[Any, Any, Any, Any],
    dp: Any = None,
) -> tuple[Any, Any, Any, Any]:
    """(compute + memory time, communication time, FLOPs, HBM bytes) of one mean layer on one
    GPU; ``tokens`` and the ``attention`` parts are the replica's (the micro-batch's).

    ``dp``: the attention data-parallel degree, ep (the default: "TP8 EP8 + attention-DP")
    or 1 (attention tensor-parallel over all tp GPUs, "TP8 EP8" without attention DP: every
    GPU holds every token after the attention all-reduce, runs its own experts on the tokens
    routed there and the MoE output is all-reduced, with no dispatch or combine)."""
    dp = ep if dp is None else dp
    adp = dp > 1  # attention data-parallel: tokens dispatched to their experts and back
    ec, em, ac, am = eff
    peak_f = hw["tflops_per_gpu"] * 1e12
    # attention's matmuls run at the KV cache's precision, never FP4 (hardware.attention_tflops)
    peak_af = hw["attn_tflops_per_gpu"] * 1e12 if "attn_tflops_per_gpu" in hw else peak_f
    peak_bw = hw["hbm_tbps_per_gpu"] * 1e12
    t = attention_group(tp, dp)
    f = a.moe_fraction
    # GEMMs: routed experts streamed only where the micro-batch's tokens go (expected distinct
    # experts under uniform top-k routing); the rest of the layer's weights always.
    replicated = a.attn_params + f * a.shared_experts * a.expert_params
    replicated = replicated + (1 - f) * a.dense_mlp_params
    if a.experts > 1:
        touched = a.experts * (1 - (1 - a.experts_per_token / a.experts) ** tokens)
        routed = f * (a.router_params + touched * a.expert_params)
    else:
        routed = 0.0
    ew = e if ew is None else ew
    if ed is None or ed == ew:
        w_bytes = (replicated / t + routed / tp) * ew
    else:  # only the experts at the weight-only width (workload.quantized_weights: experts)
        dense = (a.attn_params + (1 - f) * a.dense_mlp_params) / t
        experts = f * a.shared_experts * a.expert_params / t
        if a.experts > 1:
            dense = dense + f * a.router_params / tp
            experts = experts + f * touched * a.expert_params / tp
        w_bytes = dense * ed + experts * ew
    act_per_token = (8 * a.hidden + 3 * a.mlp_active_ffn / tp) * e
    gemm_flops = tokens * (2 * a.layer_active_params / tp)
    gemm_bytes = w_bytes + tokens * act_per_token
    t_gemm = np.maximum(gemm_flops / (peak_f * ec), gemm_bytes / (peak_bw * em))
    if a.experts > 1 and np.any(adp):  # SMs lent to dispatch/combine, imbalance over ranks
        t_gemm = np.where(adp, t_gemm / tech(d, "cb_ep_gemm_efficiency"), t_gemm)

    # Attention: heads split over the attention group, sequences over the dp groups.
    heads_gpu = a.heads / t
    kv_heads_gpu = np.maximum(a.kv_heads / t, 1.0)
    qkvo = tokens / dp * ((2 * heads_gpu + 2 * kv_heads_gpu) * a.head_dim * e)
    flop_per_key = a.attn_flops_per_key_head * heads_gpu
    byte_per_kv = kv_elems_per_gpu(a, t) * ekv
    t_attn: Any = 0.0
    attn_flops: Any = 0.0
    attn_bytes: Any = 0.0
    for i, (ctx_sum, kv_sum) in enumerate(attention):
        fl = ctx_sum / dp * flop_per_key
        by = kv_sum / dp * byte_per_kv + (qkvo if i == 0 else 0.0)
        t_attn = t_attn + np.maximum(fl / (peak_af * ac), by / (peak_bw * am))
        attn_flops, attn_bytes = attn_flops + fl, attn_bytes + by

    # Communication: the attention output's all-reduce over the group (and a dense MLP's);
    # MoE layers all-reduce without attention DP (ep = 1, or experts spread over the tp GPUs
    # that all hold every token), else dispatch + combine over the ep group (and an all-reduce
    # of the experts' split outputs over t when t > 1).
    net_bw = hw["net_bytes_per_s"]
    alpha = tech(d, "collective_step_latency_s")
    launch = tech(d, "collective_launch_s")
    group_tokens = tokens / dp
    ar = allreduce_s(group_tokens * (a.hidden * ce), t, net_bw, alpha, hw)
    ar = ar + np.where(t > 1, launch, 0.0)
    expert_parallel = (ep > 1) & adp
    n_ar = 1.0 + (1 - f) + f * np.where(expert_parallel, 0.0, 1.0)
    comm = n_ar * ar
    if a.experts > 1 and np.any(expert_parallel):
        sent = tokens / tp * dispatch_bytes_per_token(a, ep, ce)
        a2a = all_to_all_s(sent, ep, net_bw, alpha, hw) + launch
        received = tokens * a.experts_per_token / ep * (a.hidden * ce)
        split = allreduce_s(received, t, net_bw, alpha, hw) + np.where(t > 1, launch, 0.0)
        comm = comm + f * np.where(expert_parallel, 2 * a2a + split, 0.0)
    return t_gemm + t_attn, comm, gemm_flops + attn_flops, gemm_bytes + attn_bytes
