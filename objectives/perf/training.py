"""Training step: 6·N·D FLOPs plus attention, over data x tensor x pipeline parallelism.

Megatron-style: 1F1B pipeline with one-sequence micro-batches (bubble (pp-1)/(m+pp-1)),
tensor-parallel all-reduces in forward and backward (4 per layer per micro-batch), a data-
parallel gradient all-reduce that overlaps the backward pass, ZeRO-1 optimizer sharding and
selective activation recomputation (Korthikanti et al. 2022, 34·s·h bytes per layer).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import tech
from objectives.perf.model import Arch
from objectives.perf.network import allreduce_s
from objectives.perf.serving import Serving

_BF16 = 2.0  # activations, gradients and collectives stay in bf16 even with FP8 GEMMs


def train(
    d: Mapping[str, Any],
    hw: Mapping[str, np.ndarray],
    a: Arch,
    s: Serving,
    tp: np.ndarray,
    pp: np.ndarray,
    batch: np.ndarray,
    replicas: np.ndarray,
) -> dict[str, np.ndarray]:
    """Step time and memory of one data-parallel replica; ``batch`` sequences per replica."""
    seq = s.input_tokens
    peak = hw["tflops_per_gpu"] * 1e12 * tech(d, "gemm_compute_efficiency")
    attn_peak = hw["tflops_per_gpu"] * 1e12 * tech(d, "attention_compute_efficiency")
    layers_stage = np.ceil(a.layers / pp)

    # Per micro-batch (one sequence) per GPU of a stage: forward + backward = 3x forward.
    lin = 6 * seq * (layers_stage * a.layer_active_params + a.embedding_params) / tp
    attn = 3 * layers_stage * a.attn_flops_per_query(seq * (seq + 1) / 2) / tp
    t_compute = lin / peak + attn / attn_peak
    ar = allreduce_s(
        seq * a.hidden * _BF16, tp, hw["net_bytes_per_s"], tech(d, "collective_step_latency_s")
    )
    t_tp = 4 * layers_stage * (ar + np.where(tp > 1, tech(d, "collective_launch_s"), 0.0))
    t_micro = t_compute + t_tp
    t_pipe = (batch + pp - 1) * t_micro  # 1F1B: m micro-batches plus the fill/drain bubble

    # Gradient all-reduce over the replicas, hidden behind the backward pass (2/3 of compute).
    grads = (layers_stage * a.layer_params + a.embedding_params) / tp * _BF16
    t_dp = allreduce_s(grads, replicas, hw["dp_bytes_per_s"], tech(d, "collective_step_latency_s"))
    t_step = t_pipe + np.maximum(t_dp - 2 / 3 * batch * t_compute, 0.0)

    params_gpu = (layers_stage * a.layer_params + a.embedding_params) / tp
    state = params_gpu * (
        tech(d, "train_weight_grad_bytes_per_param")
        + tech(d, "train_optimizer_bytes_per_param") / np.maximum(replicas, 1)
    )
    in_flight = np.minimum(pp, batch)  # 1F1B keeps up to pp micro-batches' activations
    act = (
        in_flight * layers_stage * seq * a.hidden * tech(d, "train_activation_bytes_per_elem") / tp
    )

    model_flops = batch * (
        6 * seq * (a.layers * a.layer_active_params + a.embedding_params)
        + 3 * a.layers * a.attn_flops_per_query(seq * (seq + 1) / 2)
    )
    gpus = tp * pp
    util = model_flops / (t_step * gpus * hw["tflops_per_gpu"] * 1e12)
    hbm = batch * 3 * params_gpu * s.bytes_per_elem / t_step  # weights read fwd, bwd-data, bwd-w
    return {
        "replica_tokens_per_s": batch * seq / t_step,
        "ttft_s": t_step,
        "tpot_s": np.zeros_like(t_step),
        "step_s": t_step,
        "compute_utilization": util,
        "hbm_bytes_per_s": hbm,
        "mem_need_bytes": state + act,
        "kv_bytes": np.zeros_like(t_step),
    }
