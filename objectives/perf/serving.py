"""Roofline timing of LLM serving for a grid of parallelism candidates.

Shapes: anything that broadcasts. The search passes candidate degrees as ``(k, 1)`` columns
and per-design figures (hardware, and technology or workload values that vary per design) as
``(1, n)`` rows, so every result is ``(k, n)``: long contiguous rows keep numpy fast.

Each operator (the layer's GEMMs, its attention, the LM head) costs max(compute, memory) at its
own efficiency factor and the tensor-parallel all-reduces add exposed communication, per layer,
as in LLMCompass/GenZ-style operator rooflines.

Two schedulers (``workload.scheduler``):

* ``static``: the whole batch is prefilled, then decoded (TensorRT-LLM 0.5 gptSessionBenchmark);
  it keeps the 2023 kernel efficiencies it was fitted with.
* ``continuous``: steady-state in-flight batching with chunked prefill (TensorRT-LLM >= 0.10,
  vLLM, SGLang). Every step decodes the running batch B and prefills the B/out requests that
  replace the ones finishing, so a step carries B decode tokens plus B*S/out prompt tokens;
  B is solved (``continuous``), not searched. With ``disaggregated`` prompts run on a separate
  prefill pool sized so both pools keep up (Splitwise, DistServe).

This module times steps; :mod:`objectives.perf.replica` turns them into a replica's figures
(``serve``: the static scheduler there, the continuous one in :mod:`objectives.perf.continuous`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from objectives._evaluator import tech
from objectives.perf import moe
from objectives.perf.model import Arch
from objectives.perf.network import allreduce_s

SCHEDULERS = ("continuous", "static")
ARRIVALS = ("saturated", "poisson")
DISPATCH = ("random", "shortest_queue")  # how requests reach the replicas (poisson arrivals)
PREFILL_BATCHING = ("mixed", "separate")  # prompts in the decode steps, or steps of their own
LATENCY_STATISTICS = ("percentile", "mean")
#: Kernel efficiencies each scheduler reads: (GEMM compute, GEMM memory, attention compute,
#: attention memory, per-layer overhead). Static keeps the TensorRT-LLM 0.5 fit.
_EFF = {
    "static": (
        "gemm_compute_efficiency",
        "gemm_memory_efficiency",
        "attention_compute_efficiency",
        "attention_memory_efficiency",
        "layer_overhead_s",
    ),
    "continuous": (
        "cb_gemm_compute_efficiency",
        "cb_gemm_memory_efficiency",
        "cb_attention_compute_efficiency",
        "cb_attention_memory_efficiency",
        "cb_layer_overhead_s",
    ),
}
_BISECT = 24  # halvings of the batch interval when an SLO bounds the batch


@dataclass(frozen=True)
class Serving:
    """Workload fields the timing needs, already validated."""

    bytes_per_elem: float  # weights and activations
    input_tokens: Any  # a float, or an array broadcasting against the design batch
    output_tokens: Any
    phase: str
    kv_bytes_per_elem: float | None = None  # KV cache; None: as the weights
    weight_bytes_per_elem: float | None = None  # layers' linear weights; None: bytes_per_elem
    experts_only: bool = False  # weight_bytes_per_elem holds for the MoE experts alone
    scheduler: str = "static"
    disaggregated: bool = False
    max_batch: Any = None  # a cap on the continuous batch (None: none)
    arrivals: str = "saturated"  # saturated: every request queued; poisson: an open system
    slo_quantile: float = 0.99  # the quantile the SLOs bound under poisson arrivals
    input_tokens_cv: Any = 0.0  # coefficient of variation of prompt lengths
    output_tokens_cv: Any = 0.0  # and of output lengths
    arrival_rate_per_s: Any = None  # poisson: requests/s each replica receives (None: solved)
    latency_mean: bool = False  # poisson: latencies as means, not at the SLO percentile
    pooled: bool = False  # poisson: join the shortest queue, one central queue for the replicas
    separate_prefill: bool = False  # continuous: prompts in prefill-only steps, not mixed in
    fp4: bool = False  # FP4 (NVFP4/MXFP4) GEMMs: their own efficiency (cb_fp4_gemm_efficiency)
    mtp_tokens: int = 0  # draft tokens per decode step (multi-token prediction), continuous only
    mtp_acceptance: float = 0.0  # probability each draft token is accepted, given the previous
    cuda_graphs: bool = True  # False: eager PyTorch, every kernel launched from the host

    @property
    def tokens_per_step(self) -> float:
        """Expected output tokens of one decode step per sequence: 1 + p + p^2 + ... + p^n."""
        p = self.mtp_acceptance
        return 1.0 + sum(p**i for i in range(1, self.mtp_tokens + 1))

    @property
    def weight_elem(self) -> float:
        """Stored bytes per layer weight: narrower than ``bytes_per_elem`` when weight-only
        quantized (read at this width, computed at the activations' rate)."""
        w = self.weight_bytes_per_elem
        return self.bytes_per_elem if w is None else w

    @property
    def dense_weight_elem(self) -> float:
        """Stored bytes per weight of the layers' non-expert parts (attention, router, dense
        MLPs): the weight-only width, or the activations' where only the experts are
        quantized (``workload.quantized_weights: experts``, as gpt-oss ships MXFP4)."""
        return self.bytes_per_elem if self.experts_only else self.weight_elem

    @property
    def kv_elem(self) -> float:
        return self.bytes_per_elem if self.kv_bytes_per_elem is None else self.kv_bytes_per_elem


class Replica(NamedTuple):
    """What every step of one replica's timing reads: the design, its hardware, the model's
    architecture, the workload and the parallelism candidates (``tp``, ``pp``)."""

    d: Mapping[str, Any]
    hw: Mapping[str, Any]
    a: Arch
    s: Serving
    tp: Any
    pp: Any


@dataclass
class Step:
    """Per-GPU time and work of one pipeline stage processing one micro-batch."""

    time_s: np.ndarray
    flops: np.ndarray
    hbm_bytes: np.ndarray


def _roofline(flops: Any, nbytes: Any, peak_flops: Any, peak_bw: Any, ec: Any, em: Any) -> Any:
    return np.maximum(flops / (peak_flops * ec), nbytes / (peak_bw * em))


def _efficiencies(d: Mapping[str, Any], a: Arch, s: Serving) -> tuple[Any, Any, Any, Any, Any]:
    """(GEMM compute, GEMM memory, attention compute, attention memory efficiency, per-layer
    overhead) of the scheduler, the continuous GEMMs scaled for MoE and for FP4."""
    ec, em, ac, am, overhead = (tech(d, k) for k in _EFF[s.scheduler])
    if a.experts > 1 and s.scheduler == "continuous":  # grouped expert GEMMs, routing, imbalance
        moe_eff = tech(d, "cb_moe_gemm_efficiency")
        ec, em = ec * moe_eff, em * moe_eff
    if s.fp4 and s.scheduler == "continuous":  # NVFP4 GEMMs: block scales, dequantization
        fp4_eff = tech(d, "cb_fp4_gemm_efficiency")
        ec, em = ec * fp4_eff, em * fp4_eff
    if s.scheduler == "continuous":  # the serving stack's kernels against TensorRT-LLM's
        stack = tech(d, "cb_stack_gemm_efficiency")
        if np.any(stack != 1.0):
            ec, em = ec * stack, em * stack
    return ec, em, ac, am, overhead


def host_bound(d: Mapping[str, Any], s: Serving, layers: Any, gpu_s: Any) -> Any:
    """A step's time when the host launches every kernel (``cuda_graphs: false``).

    Launches are asynchronous: the host runs ahead of the GPU through the launch queue while
    kernels are long, so a step takes the longer of the GPU's time and the host's dispatch
    time, ``layers x eager_host_s_per_layer``, not their sum. With graphs (the default) one
    replay launches the step and the host time is already in ``cb_layer_overhead_s``."""
    if s.cuda_graphs:
        return gpu_s
    return np.maximum(gpu_s, layers * tech(d, "eager_host_s_per_layer"))


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
    return mixed_step(d, hw, a, s, tp, pp, b * q, b, [(b * ctx_per_seq, b * kv_len)])


def mixed_step(
    d: Mapping[str, Any],
    hw: Mapping[str, np.ndarray],
    a: Arch,
    s: Serving,
    tp: np.ndarray,
    pp: np.ndarray,
    tokens: Any,
    seqs: Any,
    attention: list[tuple[Any, Any]],
) -> Step:
    """One stage over ``tokens`` new tokens of ``seqs`` sequences; ``attention`` lists parts
    (keys attended summed over the queries, KV entries read), each its own roofline: a decode
    part is memory-bound, a prefill chunk compute-bound, and they do not hide each other."""
    # The continuous engines keep activations in 16 bits between FP8 GEMMs, so all-reduces
    # move 2 bytes per element (TensorRT-LLM all-reduce plugin runs in the activation dtype).
    if "pool_weights" in hw:  # weights or KV read over an optical memory pool
        from objectives.perf.pool import POOL_HW, pool_seconds

        base = mixed_step(d, {k: v for k, v in hw.items() if k not in POOL_HW}, a, s, tp, pp,
                          tokens, seqs, attention)  # fmt: skip
        weights, kv_token = weights_and_kv_token(
            a, s, tp, pp, hw.get("ep"), hw.get("cp"), hw.get("attn_dp")
        )
        kv_bytes = (sum(kv for _, kv in attention) + tokens) * kv_token
        t_pool = pool_seconds(hw, weights=weights, kv_bytes=kv_bytes, hbm_bytes=base.hbm_bytes)
        return Step(np.maximum(base.time_s, t_pool), base.flops, base.hbm_bytes)
    ce = 2.0 if s.scheduler == "continuous" else s.bytes_per_elem
    layers_stage = np.ceil(a.layers / pp)
    ep = hw.get("ep")
    if ep is not None or not a.legacy:  # today's MoE models, expert parallelism, MLA
        return _general_step(
            d, hw, a, s, tp, layers_stage, tokens, seqs, attention, ep, ce, hw.get("attn_dp")
        )
    ec, em, ac, am, overhead = _efficiencies(d, a, s)
    peak_f = hw["tflops_per_gpu"] * 1e12
    peak_bw = hw["hbm_tbps_per_gpu"] * 1e12
    net_bw = hw["net_bytes_per_s"]
    alpha = tech(d, "collective_step_latency_s")
    launch = tech(d, "collective_launch_s")
    e, ekv, ew = s.bytes_per_elem, s.kv_elem, s.weight_elem
    inv_f, inv_bw = 1.0 / (peak_f * ec), 1.0 / (peak_bw * em)  # s per FLOP, s per byte

    # GEMMs: MoE layers stream only the experts the micro-batch's tokens are routed to
    # (expected distinct experts with uniform top-k routing); a dense layer streams them all.
    ed = s.dense_weight_elem
    if a.experts > 1:
        touched = a.experts * (1 - (1 - a.experts_per_token / a.experts) ** tokens)
        if s.experts_only:
            w_bytes = (
                (a.attn_params + a.router_params) * ed + touched * a.expert_params * ew
            ) / tp
        else:
            w_bytes = (a.attn_params + a.router_params + touched * a.expert_params) * (ew / tp)
    else:
        w_bytes = a.layer_active_params * ed / tp
    act_per_token = (8 * a.hidden + 3 * a.experts_per_token * a.ffn / tp) * e
    gemm_flops = tokens * (2 * a.layer_active_params / tp)
    gemm_bytes = w_bytes + tokens * act_per_token
    t_gemm = np.maximum(gemm_flops * inv_f, gemm_bytes * inv_bw)

    # Attention: heads split over TP; KV heads are replicated once tp exceeds them.
    heads_gpu = a.heads / tp
    kv_heads_gpu = np.maximum(a.kv_heads / tp, 1.0)
    qkvo = tokens * ((2 * heads_gpu + 2 * kv_heads_gpu) * a.head_dim * e)
    flop_per_key = 4 * a.head_dim * heads_gpu
    byte_per_kv = 2 * kv_heads_gpu * a.head_dim * ekv
    peak_af = hw["attn_tflops_per_gpu"] * 1e12 if "attn_tflops_per_gpu" in hw else peak_f
    inv_af, inv_am = 1.0 / (peak_af * ac), 1.0 / (peak_bw * am)
    t_attn: Any = 0.0
    attn_flops: Any = 0.0
    attn_bytes: Any = 0.0
    for i, (ctx_sum, kv_sum) in enumerate(attention):
        fl = ctx_sum * flop_per_key
        by = kv_sum * byte_per_kv + qkvo if i == 0 else kv_sum * byte_per_kv
        t_part = np.maximum(fl * inv_af, by * inv_am)
        if i == 0:  # 0 + t: the same (times are >= 0), without a pass over the array
            t_attn, attn_flops, attn_bytes = t_part, fl, by
        else:
            t_attn = t_attn + t_part
            attn_flops, attn_bytes = attn_flops + fl, attn_bytes + by

    # Two all-reduces per layer (after attention and after the MLP), not overlapped.
    t_layer = t_gemm + t_attn + overhead
    if np.any(tp > 1):
        allreduce = allreduce_s(tokens * (a.hidden * ce), tp, net_bw, alpha, hw)
        t_layer = t_layer + 2 * (allreduce + np.where(tp > 1, launch, 0.0))
    # LM head on the last stage: logits of the last position of each sequence only.
    head_flops = seqs * (2 * a.hidden * a.vocab / tp)
    head_bytes = a.embedding_params * e / tp
    t_head = np.maximum(head_flops * inv_f, head_bytes * inv_bw)
    return Step(
        time_s=host_bound(d, s, layers_stage, layers_stage * t_layer + t_head),
        flops=layers_stage * (gemm_flops + attn_flops) + head_flops,
        hbm_bytes=layers_stage * (gemm_bytes + attn_bytes) + head_bytes,
    )


def _general_step(
    d: Mapping[str, Any],
    hw: Mapping[str, Any],
    a: Arch,
    s: Serving,
    tp: Any,
    layers_stage: Any,
    tokens: Any,
    seqs: Any,
    attention: list[tuple[Any, Any]],
    ep: Any,
    ce: float,
    dp: Any = None,
) -> Step:
    """``mixed_step`` through ``objectives.perf.moe.layer`` (expert and attention data
    parallelism, MLA, dense layers among MoE ones); ``dp`` the attention data-parallel degree
    (None: ep)."""
    ec, em, ac, am, overhead = _efficiencies(d, a, s)
    core, comm, flops, nbytes = moe.layer(
        d,
        hw,
        a,
        e=s.bytes_per_elem,
        ew=s.weight_elem,
        ed=s.dense_weight_elem,
        ekv=s.kv_elem,
        ce=ce,
        tp=tp,
        ep=1.0 if ep is None else ep,
        tokens=tokens,
        attention=attention,
        eff=(ec, em, ac, am),
        dp=dp,
    )
    e = s.bytes_per_elem
    head_flops = seqs * (2 * a.hidden * a.vocab / tp)
    head_bytes = a.embedding_params * e / tp
    peak_f, peak_bw = hw["tflops_per_gpu"] * 1e12, hw["hbm_tbps_per_gpu"] * 1e12
    t_head = np.maximum(head_flops / (peak_f * ec), head_bytes / (peak_bw * em))
    return Step(
        time_s=host_bound(d, s, layers_stage, layers_stage * (core + overhead + comm) + t_head),
        flops=layers_stage * flops + head_flops,
        hbm_bytes=layers_stage * nbytes + head_bytes,
    )


def weights_and_kv_token(
    a: Arch, s: Serving, tp: Any, pp: Any, ep: Any = None, cp: Any = None, dp: Any = None
) -> tuple[Any, Any]:
    """Per-GPU bytes of the bottleneck stage's weights, and of its KV cache per token of one
    sequence (expert and attention data parallelism: each attention group keeps only its own
    sequences, so a replica-wide token costs 1/ep of a KV row; context parallelism: each group
    keeps its 1/cp of every prompt)."""
    e, ew = s.bytes_per_elem, s.weight_elem
    layers_stage = np.ceil(a.layers / pp)
    emb_copies = np.where(pp > 1, 1.0, 2.0)  # embedding on the first stage, LM head on the last
    emb = emb_copies * a.embedding_params * e / tp  # embeddings stay at the activations' width
    ed = s.dense_weight_elem
    if ep is None and a.legacy:
        if s.experts_only:  # the experts at their width, the rest at the activations'
            expert = a.experts * a.expert_params if a.experts > 1 else 0.0
            layer = (a.layer_params - expert) * ed + expert * ew
            weights = layers_stage * layer / tp + emb
        else:
            weights = layers_stage * a.layer_params * ew / tp + emb
        kv_heads_gpu = np.maximum(a.kv_heads / tp, 1.0)
        kv_token = layers_stage * 2 * kv_heads_gpu * a.head_dim * s.kv_elem
    else:
        ep = 1.0 if ep is None else ep
        dp = ep if dp is None else dp  # attention data-parallel degree (ep with attention DP)
        if s.experts_only:
            dense, expert = moe.weight_elems_split(a, tp, dp, layers_stage)
            weights = dense * ed + expert * ew + emb
        else:
            weights = moe.weight_elems_per_gpu(a, tp, dp, layers_stage, 0.0) * ew + emb
        per_gpu = moe.kv_elems_per_gpu(a, moe.attention_group(tp, dp)) / dp
        kv_token = layers_stage * per_gpu * s.kv_elem
    if cp is not None:
        kv_token = kv_token / cp
    return weights, kv_token


def memory_need_bytes(
    a: Arch,
    s: Serving,
    tp: np.ndarray,
    pp: np.ndarray,
    batch: np.ndarray,
    micro: np.ndarray,
    ep: Any = None,
    cp: Any = None,
    dp: Any = None,
) -> dict[str, np.ndarray]:
    """Per-GPU HBM need of the bottleneck stage: weights, KV cache, prefill activations."""
    weights, kv_token = weights_and_kv_token(a, s, tp, pp, ep, cp, dp)
    kv = batch * ((s.input_tokens + s.output_tokens) * kv_token)
    act = micro * s.input_tokens * (a.hidden + 2 * a.mlp_active_ffn / tp) * s.bytes_per_elem
    return {"weights": weights, "kv": kv, "act": act, "total": weights + kv + act}
