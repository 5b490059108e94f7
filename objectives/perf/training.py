"""Training step: 6·N·D FLOPs plus attention, over data x tensor x pipeline parallelism.

Megatron-style, one sequence per micro-batch, per GPU of the slowest pipeline stage:

* compute: forward + backward = 3x forward at the *training* GEMM and attention efficiencies
  (large BF16 GEMMs, not the decode-fitted serving factors), plus the forward of the layers
  that are recomputed;
* tensor parallelism with sequence parallelism: all-gather / reduce-scatter pairs, 2 per layer
  forward and 2 backward (the bytes of 4 all-reduces), exposed; a recomputed forward adds 2;
* pipeline: interleaved 1F1B with ``v`` virtual stages per GPU, bubble (p-1)/(m·v) of the
  m micro-batches (Narayanan et al., SC21), and the activation sends at stage boundaries;
  the LM head sits on the last stage, which gets the spare layers when there are any
  (as Llama 3 §3.3.2 balances its stages);
* data parallelism: the gradient reduce-scatter and parameter all-gather (ZeRO stage 0-3)
  overlap one micro-batch's backward and forward; only the excess is exposed;
* memory of the first stage (the one with most micro-batches in flight): bf16 weights and
  gradients and fp32 Adam state, sharded over data parallelism by the ZeRO stage, and
  activations per Korthikanti et al. 2022: s·b·h·(34 + 5·a·s/h)/t bytes per layer with
  tensor + sequence parallelism, 34·s·b·h/t with selective recomputation, 2·s·b·h/t (the
  layer input) with full recomputation; ``auto`` recomputes the fewest whole layers that fit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import tech
from objectives.errors import ContextError, unknown_name
from objectives.perf.model import Arch
from objectives.perf.network import allgather_s, allreduce_s, p2p_s
from objectives.perf.serving import Serving

_BF16 = 2.0  # activations, gradients and collectives stay in bf16 even with FP8 GEMMs
RECOMPUTE = ("auto", "selective", "full", "none")


def bubble_fraction(pp: Any, microbatches: Any, interleave: Any = 1) -> Any:
    """Idle time of (interleaved) 1F1B relative to the ideal m micro-batch times:
    (p - 1) / (m · v) (Narayanan et al., SC21, §2.2)."""
    return (np.asarray(pp, dtype=float) - 1) / (np.asarray(microbatches) * interleave)


def activation_bytes_per_layer(
    tokens: Any,
    hidden: Any,
    heads: Any,
    tp: Any,
    recompute: str,
    per_elem: Any = 34.0,
    per_score: Any = 5.0,
    full_per_elem: Any = 2.0,
) -> Any:
    """Activation bytes one layer keeps for the backward pass of one micro-batch of ``tokens``
    (s·b), per GPU with tensor + sequence parallelism of degree ``tp`` (Korthikanti et al.
    2022, Table 2): s·b·h·(34 + 5·a·s/h)/t without recomputation, 34·s·b·h/t with selective
    recomputation (attention scores recomputed, or never stored by flash attention), and the
    2·s·b·h/t layer input with full recomputation. ``tokens`` is one sequence here."""
    sbh = np.asarray(tokens, dtype=float) * hidden / tp
    if recompute == "full":
        return full_per_elem * sbh
    if recompute == "none":
        return sbh * (per_elem + per_score * heads * np.asarray(tokens) / hidden)
    return per_elem * sbh


def _options(wl: Mapping[str, Any]) -> tuple[str, Any, Any]:
    """(recompute, zero_stage, pp_interleave), validated; the numbers may be per design."""
    recompute = str(wl.get("recompute", "auto"))
    if recompute not in RECOMPUTE:
        raise unknown_name("workload.recompute", recompute, RECOMPUTE, what="recompute mode")
    vals = []
    for key, lo, hi, default in (("zero_stage", 0, 3, 1), ("pp_interleave", 1, None, 1)):
        raw = wl.get(key, default)
        try:
            v = np.asarray(default if raw is None else raw, dtype=float)
        except (TypeError, ValueError):
            raise ContextError(f"workload.{key}", f"expected an integer, got {raw!r}") from None
        ok = (v == np.floor(v)) & (v >= lo) & (v <= (np.inf if hi is None else hi))
        if not np.all(ok):
            span = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise ContextError(f"workload.{key}", f"expected an integer {span}, got {raw!r}")
        vals.append(v)
    return recompute, vals[0], vals[1]


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
    """Step time and memory of one data-parallel replica; ``batch`` sequences per replica,
    one per micro-batch."""
    recompute, zero, v_req = _options(d["workload"])
    seq = s.input_tokens
    peak = hw["tflops_per_gpu"] * 1e12
    gemm_peak = peak * tech(d, "train_gemm_compute_efficiency")
    attn_peak = peak * tech(d, "train_attention_compute_efficiency")
    alpha = tech(d, "collective_step_latency_s")
    launch = np.where(tp > 1, tech(d, "collective_launch_s"), 0.0)
    dp = np.maximum(replicas, 1.0)

    # Slowest stage: ceil(L/p) layers, or the last stage's layers plus the LM head when there
    # are too few spare layers to make room for it.
    n_l = np.ceil(a.layers / pp)
    spare = np.minimum(pp * n_l - a.layers, n_l)
    v = np.minimum(v_req, n_l)  # at least one layer per virtual stage
    t_layer = (
        2 * seq * a.layer_active_params / gemm_peak
        + a.attn_flops_per_query(seq * (seq + 1) / 2) / attn_peak
    ) / tp
    t_head = 2 * seq * a.embedding_params / tp / gemm_peak
    t_fwd = np.maximum(n_l * t_layer, (n_l - spare) * t_layer + t_head)

    # Memory of the first stage: ZeRO-sharded state, then activations of the micro-batches in
    # flight (p for 1F1B; p + (p-1)/v stage-loads for the interleaved schedule).
    params_gpu = (n_l * a.layer_params + a.embedding_params) / tp
    w_b = tech(d, "train_weight_grad_bytes_per_param") - tech(d, "train_grad_bytes_per_param")
    g_b = tech(d, "train_grad_bytes_per_param")
    o_b = tech(d, "train_optimizer_bytes_per_param")
    per_param = (
        w_b / np.where(zero >= 3, dp, 1.0)
        + g_b / np.where(zero >= 2, dp, 1.0)
        + o_b / np.where(zero >= 1, dp, 1.0)
    )
    state = params_gpu * per_param + np.where(zero >= 3, a.layer_params / tp * w_b, 0.0)
    in_flight = np.minimum(np.where(v > 1, pp + (pp - 1) / v, pp), batch) * n_l
    consts = {
        "per_elem": tech(d, "train_activation_bytes_per_elem"),
        "per_score": tech(d, "train_activation_bytes_per_score"),
        "full_per_elem": tech(d, "train_full_recompute_bytes_per_elem"),
    }
    kept = activation_bytes_per_layer(
        seq, a.hidden, a.heads, tp, "none" if recompute == "none" else "selective", **consts
    )
    full = activation_bytes_per_layer(seq, a.hidden, a.heads, tp, "full", **consts)
    usable = hw["hbm_gb_per_gpu"] * 1e9 * tech(d, "hbm_usable_fraction")
    if recompute == "full":
        frac = np.ones(1)
    elif recompute == "auto":  # the fewest whole layers per stage that make it fit
        over = state + in_flight * kept - usable
        need = np.where(over > 0, (over + kept) / (in_flight * (kept - full)), 0.0)
        frac = np.ceil(np.clip(need, 0.0, 1.0) * n_l - 1e-9) / n_l
    else:
        frac = np.zeros(1)
    # A recomputed layer's full activations exist again while its backward runs.
    act = in_flight * ((1 - frac) * kept + frac * full) + np.where(frac > 0, kept, 0.0)

    # Per micro-batch: compute (with the recomputed forwards), TP collectives, stage sends.
    t_compute = 3 * t_fwd + frac * n_l * t_layer
    ar = allreduce_s(seq * a.hidden * _BF16, tp, hw["net_bytes_per_s"], alpha, hw)
    t_tp = (4 + 2 * frac) * n_l * (ar + launch)
    send = p2p_s(seq * a.hidden * _BF16 / tp, hw["p2p_bytes_per_s"], alpha, hw)
    t_p2p = np.where(pp > 1, 2 * v * send, 0.0)
    t_micro = t_compute + t_tp + t_p2p
    t_pipe = batch * t_micro * (1 + bubble_fraction(pp, batch, v))

    # Data parallelism: reduce-scatter of the bf16 gradients behind one micro-batch's backward
    # (every micro-batch from ZeRO-2 on), all-gather of the updated bf16 weights behind the next
    # step's first forward (and every forward and backward with ZeRO-3).
    shard = params_gpu * _BF16
    t_rs = allgather_s(shard, replicas, hw["dp_bytes_per_s"], alpha, hw)  # same cost as gather
    t_bwd = 2 * t_fwd
    rs_x, ag_fwd_x = np.maximum(t_rs - t_bwd, 0.0), np.maximum(t_rs - t_fwd, 0.0)
    t_dp = np.where(zero >= 2, batch, 1.0) * rs_x + np.where(
        zero >= 3, batch * (ag_fwd_x + rs_x), ag_fwd_x
    )
    t_step = t_pipe + t_dp

    model_flops = batch * (
        6 * seq * (a.layers * a.layer_active_params + a.embedding_params)
        + 3 * a.layers * a.attn_flops_per_query(seq * (seq + 1) / 2)
    )
    gpus = tp * pp
    util = model_flops / (t_step * gpus * peak)
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
        "batch": batch + np.zeros_like(t_step),
    }
