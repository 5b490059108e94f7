"""Training step: 6·N·D FLOPs plus attention, over data x tensor x context x pipeline parallelism.

Megatron-style (Megatron-LM / Megatron-Bridge / NeMo), per GPU of the slowest pipeline stage,
per micro-batch of ``micro_batch`` sequences (``tokens`` = micro_batch x sequence / cp per GPU):

* compute: forward + backward = 3x forward. The linear layers' GEMMs run at the achieved BF16
  GEMM rate, times ``train_fp8_gemm_speedup`` with FP8 (Transformer Engine: every linear layer
  of the blocks in FP8, the LM head and the attention core in BF16); fused (flash) attention at
  its own BF16 efficiency; plus the memory-bound work around the GEMMs, streamed through HBM:
  norms, rotary, residual adds, the MLP activation (bytes per token per hidden / FFN element,
  counted), the FP8 casts and transposes of every GEMM input with FP8, the fp32 weight-gradient
  accumulation of every micro-batch (gradient-accumulation fusion: read + write 4 bytes per
  parameter) and the logits' softmax; and a fixed cost per layer (kernel launches). The forward
  of recomputed layers is added.
* tensor parallelism with sequence parallelism: all-gather / reduce-scatter pairs, 2 per layer
  forward and 2 backward (the bytes of 4 all-reduces), +2 per recomputed forward; with
  ``tp_comm_overlap`` (Megatron's userbuffer overlap) they run under the layer's GEMMs, exposing
  what the GEMMs do not cover plus the first of its ``tp`` chunks;
* context parallelism (ring attention, Megatron-Core CP): each GPU holds tokens/cp of every
  sequence; cp - 1 KV-chunk sends forward, twice that backward (K, V and their gradients),
  overlapped with the attention of the chunk in hand; the CP group leaves the scale-up domain
  when tp x cp exceeds it;
* expert parallelism (mixture-of-experts models): the experts of a layer are spread over ``ep``
  GPUs of the data-parallel group (Megatron-Core EP), each GPU holding experts / ep of them;
  every MoE layer sends each token's top-k copies to their experts and back, an all-to-all
  forward and backward (4 per layer, exposed), and permutes them in HBM on each side;
* pipeline: interleaved 1F1B with ``v`` virtual stages per GPU, bubble (p-1)/(m·v) of the
  m = batch / micro_batch micro-batches (Narayanan et al., SC21), and the activation sends at
  stage boundaries; the LM head sits on the last stage, which gets the spare layers when there
  are any (as Llama 3 §3.3.2 balances its stages);
* data parallelism (over dp x cp ranks, which hold the same weights): the gradient
  reduce-scatter and parameter all-gather (ZeRO stage 0-3) overlap one micro-batch's backward
  and forward, only the excess is exposed (hierarchically over NVLink and the NICs when the
  group spans scale-up domains); then the optimizer step streams its state;
* memory of the first stage (the one with most micro-batches in flight): bf16 weights and
  gradients and fp32 Adam state, sharded over dp x cp by the ZeRO stage, and activations per
  Korthikanti et al. 2022: s·b·h·(34 + 5·a·s/h)/t bytes per layer with tensor + sequence
  parallelism, 34·s·b·h/t with selective recomputation, 2·s·b·h/t (the layer input) with full
  recomputation; ``auto`` recomputes the fewest whole layers that fit, ``recompute_layers``
  pins how many layers per stage (Megatron's ``recompute_num_layers``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import tech
from objectives.errors import ContextError, unknown_name
from objectives.fabric.topology import SWITCHED
from objectives.perf.model import Arch
from objectives.perf.network import allgather_s, allreduce_s, p2p_s
from objectives.perf.serving import Serving

_BF16 = 2.0  # activations, gradients and collectives stay in bf16 even with FP8 GEMMs
RECOMPUTE = ("auto", "selective", "full", "none")
#: Integer training options: (workload key, lowest, highest or None, default).
_INTEGERS = (
    ("zero_stage", 0, 3, 1),
    ("pp_interleave", 1, None, 1),
    ("cp", 1, None, 1),
    ("micro_batch", 1, None, 1),
    ("ep", 1, None, 1),
)


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
    context: Any = None,
) -> Any:
    """Activation bytes one layer keeps for the backward pass of one micro-batch of ``tokens``
    (s·b), per GPU with tensor + sequence parallelism of degree ``tp`` (Korthikanti et al.
    2022, Table 2): s·b·h·(34 + 5·a·s/h)/t without recomputation, 34·s·b·h/t with selective
    recomputation (attention scores recomputed, or never stored by flash attention), and the
    2·s·b·h/t layer input with full recomputation. ``context`` is the keys each query scores
    (the sequence; ``tokens`` when not given, i.e. one sequence per micro-batch)."""
    sbh = np.asarray(tokens, dtype=float) * hidden / tp
    if recompute == "full":
        return full_per_elem * sbh
    if recompute == "none":
        ctx = np.asarray(tokens if context is None else context)
        return sbh * (per_elem + per_score * heads * ctx / hidden)
    return per_elem * sbh


def options(wl: Mapping[str, Any]) -> dict[str, Any]:
    """The training options, validated: recompute mode, recompute_layers (None: by the mode),
    tp_comm_overlap, and the integers of ``_INTEGERS`` (which may be per design)."""
    recompute = str(wl.get("recompute", "auto"))
    if recompute not in RECOMPUTE:
        raise unknown_name("workload.recompute", recompute, RECOMPUTE, what="recompute mode")
    out: dict[str, Any] = {"recompute": recompute}
    for key, lo, hi, default in _INTEGERS:
        raw = wl.get(key, default)
        try:
            v = np.asarray(default if raw is None else raw, dtype=float)
        except (TypeError, ValueError):
            raise ContextError(f"workload.{key}", f"expected an integer, got {raw!r}") from None
        ok = (v == np.floor(v)) & (v >= lo) & (v <= (np.inf if hi is None else hi))
        if not np.all(ok):
            span = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise ContextError(f"workload.{key}", f"expected an integer {span}, got {raw!r}")
        out[key] = v
    layers = wl.get("recompute_layers")
    if layers is not None:
        try:
            r = float(layers)
        except (TypeError, ValueError):
            r = -1.0
        if r < 0 or r != int(r):
            msg = f"expected a whole number of layers >= 0, got {layers!r}"
            raise ContextError("workload.recompute_layers", msg)
        layers = r
    out["recompute_layers"] = layers
    overlap = wl.get("tp_comm_overlap", False)
    if overlap not in (True, False, 0, 1, None):
        raise ContextError("workload.tp_comm_overlap", f"expected true or false, got {overlap!r}")
    out["tp_comm_overlap"] = bool(overlap)
    return out


def cp_of(wl: Mapping[str, Any]) -> Any:
    """The context-parallel degree (1 unless set); part of the model-parallel group."""
    return options(wl)["cp"]


def _scaleout_bytes_per_s(d: Mapping[str, Any], hw: Mapping[str, Any]) -> Any:
    return hw["scaleout_gbps_per_gpu"] * 1e9 / 8 * tech(d, "network_efficiency")


def _dp_gather_s(
    d: Mapping[str, Any], hw: Mapping[str, Any], nbytes: Any, shard: Any, tp: Any, alpha: Any
) -> Any:
    """All-gather of ``nbytes`` over the ``shard`` ranks that hold the same weights.

    On a switched fabric a group larger than one scale-up domain gathers hierarchically, as
    NCCL's rings over NVLink and one NIC per GPU do: inside a domain, over its g = domain / tp
    members (Megatron places tensor parallelism innermost), then across the shard / g domains,
    where each member carries only its 1/g of the data through its own NIC: (n - 1)/n x
    nbytes / g per NIC instead of (shard - 1)/shard x nbytes. Other fabrics (and groups inside
    one domain) keep the flat collective on the fabric's data-parallel bandwidth."""
    flat = allgather_s(nbytes, shard, hw["dp_bytes_per_s"], alpha, hw)
    switched = hw["fabric_code"] == SWITCHED
    if not np.any(switched):
        return flat
    g = np.clip(np.floor(hw["domain_gpus"] / tp), 1.0, shard)
    inside = allgather_s(nbytes, g, hw["net_bytes_per_s"], alpha)
    across = allgather_s(nbytes / g, shard / g, _scaleout_bytes_per_s(d, hw), alpha)
    spans = shard * tp > hw["domain_gpus"]  # the group leaves the domain
    return np.where(switched & spans, inside + across, flat)


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
    """Step time and memory of one data-parallel replica (tp x pp x cp GPUs); ``batch``
    sequences per replica and step, ``micro_batch`` of them per micro-batch."""
    opt = options(d["workload"])
    recompute, zero, v_req = opt["recompute"], opt["zero_stage"], opt["pp_interleave"]
    cp, mbs = opt["cp"], opt["micro_batch"]
    moe = a.experts > 1
    ep = np.minimum(opt["ep"], a.experts) if moe else np.ones(1)
    seq = s.input_tokens
    fp8 = s.bytes_per_elem < _BF16
    peak = hw["tflops_per_gpu"] * 1e12  # at the workload precision
    bf16_peak = peak / tech(d, "fp8_flops_multiplier") if fp8 else peak
    gemm_rate = bf16_peak * tech(d, "train_gemm_compute_efficiency")
    block_rate = gemm_rate * (tech(d, "train_fp8_gemm_speedup") if fp8 else 1.0)
    attn_rate = bf16_peak * tech(d, "train_attention_compute_efficiency")
    hbm_rate = hw["hbm_tbps_per_gpu"] * 1e12 * tech(d, "train_elementwise_memory_efficiency")
    alpha = tech(d, "collective_step_latency_s")
    launch = np.where(tp > 1, tech(d, "collective_launch_s"), 0.0)
    dp = np.maximum(replicas, 1.0)
    shard = dp * cp  # ranks holding the same weights: gradients reduce and ZeRO shards over them
    micro = np.maximum(batch / mbs, 1.0)  # micro-batches per step
    tokens = mbs * seq / cp  # tokens of one micro-batch on one GPU

    # Slowest stage: ceil(L/p) layers, or the last stage's layers plus the LM head when there
    # are too few spare layers to make room for it.
    n_l = np.ceil(a.layers / pp)
    spare = np.minimum(pp * n_l - a.layers, n_l)
    v = np.minimum(v_req, n_l)  # at least one layer per virtual stage

    # One layer, forward + backward, one micro-batch (seconds).
    ffn = a.mlp_active_ffn  # the MLP width one token runs through (mean layer)
    # MoE layers' share of the layers, and the routed experts' weights of the mean layer
    moe_share = (1.0 if a.legacy else a.moe_fraction) if moe else 0.0
    routed_params = moe_share * a.experts * a.expert_params if moe else 0.0
    t_gemm = 3 * 2 * tokens * a.layer_active_params / tp / block_rate
    t_attn = 3 * mbs * a.attn_flops_per_query(seq * (seq + 1) / 2) / (tp * cp) / attn_rate
    elem = (
        tech(d, "train_elementwise_bytes_per_hidden") * a.hidden
        + tech(d, "train_elementwise_bytes_per_ffn") * ffn
    )
    if fp8:
        elem = (
            elem
            + tech(d, "train_fp8_cast_bytes_per_hidden") * a.hidden
            + tech(d, "train_fp8_cast_bytes_per_ffn") * ffn
        )
    if moe:  # each token's top-k copies are permuted to their experts and back
        elem = elem + tech(d, "train_moe_permute_bytes_per_hidden") * moe_share * (
            a.experts_per_token * a.hidden
        )
    # the weights one GPU holds of a layer: experts / ep of the experts, all of the rest
    local_layer = a.layer_params - (1 - 1 / ep) * routed_params
    grad_acc = tech(d, "train_grad_accum_bytes_per_param") * local_layer / tp
    t_mem = (tokens * elem / tp + grad_acc) / hbm_rate
    t_layer = t_gemm + t_attn + t_mem + tech(d, "train_layer_overhead_s")
    head_gemm = 3 * 2 * tokens * a.embedding_params / tp / gemm_rate
    head_mem = tokens * a.vocab / tp * tech(d, "train_logit_bytes_per_vocab") / hbm_rate
    t_head = head_gemm + head_mem
    t_stage = np.maximum(n_l * t_layer, (n_l - spare) * t_layer + t_head)

    # Memory of the first stage: ZeRO-sharded state, then activations of the micro-batches in
    # flight (p for 1F1B; p + (p-1)/v stage-loads for the interleaved schedule).
    params_gpu = (n_l * local_layer + a.embedding_params) / tp
    w_b = tech(d, "train_weight_grad_bytes_per_param") - tech(d, "train_grad_bytes_per_param")
    g_b = tech(d, "train_grad_bytes_per_param")
    o_b = tech(d, "train_optimizer_bytes_per_param")
    per_param = (
        w_b / np.where(zero >= 3, shard, 1.0)
        + g_b / np.where(zero >= 2, shard, 1.0)
        + o_b / np.where(zero >= 1, shard, 1.0)
    )
    state = params_gpu * per_param + np.where(zero >= 3, local_layer / tp * w_b, 0.0)
    in_flight = np.minimum(np.where(v > 1, pp + (pp - 1) / v, pp), micro) * n_l
    consts = {
        "per_elem": tech(d, "train_activation_bytes_per_elem"),
        "per_score": tech(d, "train_activation_bytes_per_score"),
        "full_per_elem": tech(d, "train_full_recompute_bytes_per_elem"),
    }
    kept_mode = "none" if recompute == "none" else "selective"
    kept = activation_bytes_per_layer(
        tokens, a.hidden, a.heads, tp, kept_mode, context=seq / cp, **consts
    )
    full = activation_bytes_per_layer(tokens, a.hidden, a.heads, tp, "full", **consts)
    usable = hw["hbm_gb_per_gpu"] * 1e9 * tech(d, "hbm_usable_fraction")
    if opt["recompute_layers"] is not None:
        frac = np.minimum(opt["recompute_layers"], n_l) / n_l
    elif recompute == "full":
        frac = np.ones(1)
    elif recompute == "auto":  # the fewest whole layers per stage that make it fit
        over = state + in_flight * kept - usable
        need = np.where(over > 0, (over + kept) / (in_flight * (kept - full)), 0.0)
        frac = np.ceil(np.clip(need, 0.0, 1.0) * n_l - 1e-9) / n_l
    else:
        frac = np.zeros(1)
    # A recomputed layer's full activations exist again while its backward runs.
    act = in_flight * ((1 - frac) * kept + frac * full) + np.where(frac > 0, kept, 0.0)

    # Per micro-batch: compute (with the recomputed forwards), TP and CP traffic, stage sends.
    t_compute = t_stage + frac * n_l * t_layer / 3
    ar = allreduce_s(tokens * a.hidden * _BF16, tp, hw["net_bytes_per_s"], alpha, hw)
    t_tp_layer = (4 + 2 * frac) * (ar + launch)
    if opt["tp_comm_overlap"]:
        t_tp_layer = np.maximum(t_tp_layer - t_gemm, 0.0) + t_tp_layer / np.maximum(tp, 1.0)
    t_tp = n_l * t_tp_layer
    kv_bytes = tokens * a.kv_elems_per_token_layer * _BF16 / tp
    cp_bw = np.where(tp * cp > hw["domain_gpus"], _scaleout_bytes_per_s(d, hw),
                     hw["net_bytes_per_s"])  # fmt: skip
    t_ring = 3 * (cp - 1) * (kv_bytes / cp_bw + alpha)
    t_cp = n_l * np.maximum(t_ring - t_attn, 0.0)
    if moe:  # dispatch + combine, forward and backward: 4 all-to-alls of the routed copies
        routed = tokens * a.experts_per_token * a.hidden * _BF16 / tp
        a2a_bw = np.where(tp * ep > hw["domain_gpus"], _scaleout_bytes_per_s(d, hw),
                          hw["net_bytes_per_s"])  # fmt: skip
        a2a = (ep - 1) / ep * routed / a2a_bw + (ep - 1) * alpha
        t_ep = n_l * moe_share * 4 * np.where(ep > 1, a2a, 0.0)
    else:
        t_ep = 0.0
    send = p2p_s(tokens * a.hidden * _BF16 / tp, hw["p2p_bytes_per_s"], alpha, hw)
    t_p2p = np.where(pp > 1, 2 * v * send, 0.0)
    t_micro = t_compute + t_tp + t_cp + t_ep + t_p2p
    t_pipe = micro * t_micro * (1 + bubble_fraction(pp, micro, v))

    # Data parallelism: reduce-scatter of the bf16 gradients behind one micro-batch's backward
    # (every micro-batch from ZeRO-2 on), all-gather of the updated bf16 weights behind the next
    # step's first forward (and every forward and backward with ZeRO-3); then the optimizer
    # step streams its (sharded) state through HBM.
    grads = params_gpu * _BF16
    t_rs = _dp_gather_s(d, hw, grads, shard, tp, alpha)  # a reduce-scatter costs the same
    t_fwd = t_micro / 3
    t_bwd = 2 * t_fwd
    rs_x, ag_fwd_x = np.maximum(t_rs - t_bwd, 0.0), np.maximum(t_rs - t_fwd, 0.0)
    t_dp = np.where(zero >= 2, micro, 1.0) * rs_x + np.where(
        zero >= 3, micro * (ag_fwd_x + rs_x), ag_fwd_x
    )
    opt_bytes = tech(d, "train_optimizer_step_bytes_per_param") * params_gpu
    t_opt = opt_bytes / np.where(zero >= 1, shard, 1.0) / hbm_rate
    t_step = t_pipe + t_dp + t_opt

    model_flops = batch * (
        6 * seq * (a.layers * a.layer_active_params + a.embedding_params)
        + 3 * a.layers * a.attn_flops_per_query(seq * (seq + 1) / 2)
    )
    gpus = tp * pp * cp
    util = model_flops / (t_step * gpus * peak)
    # HBM traffic per GPU: weights read fwd, bwd-data, bwd-weight, plus the streamed work
    hbm = micro * (3 * params_gpu * s.bytes_per_elem + n_l * (tokens * elem / tp + grad_acc))
    return {
        "replica_tokens_per_s": batch * seq / t_step,
        "ttft_s": t_step,
        "tpot_s": np.zeros_like(t_step),
        "step_s": t_step,
        "compute_utilization": util,
        "hbm_bytes_per_s": hbm / t_step,
        "mem_need_bytes": state + act,
        "kv_bytes": np.zeros_like(t_step),
        "batch": batch + np.zeros_like(t_step),
    }
