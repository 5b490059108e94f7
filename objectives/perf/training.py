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
  forward and backward (4 per layer, exposed), and permutes them in HBM on each side; the
  routed experts' grouped GEMMs run at ``train_moe_gemm_efficiency`` of the dense rate and each
  MoE layer pays ``train_moe_layer_overhead_s`` (router, permutation bookkeeping, the dropless
  dispatcher's host synchronisation); the experts' gradients, ZeRO shards and optimizer step
  live on their expert-data-parallel group (dp x cp / ep ranks), and an MoE layer keeps the
  activations of its top-k routed copies;
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
from dataclasses import dataclass
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


@dataclass(frozen=True)
class _Step:
    """What every part of one training step needs: the design, its hardware, the model, the
    parallel layout (tp x pp x cp GPUs per replica, ``ep`` of the dp x cp ranks sharing experts)
    and the achieved rates (FLOP/s, bytes/s)."""

    d: Mapping[str, Any]
    hw: Mapping[str, np.ndarray]
    a: Arch
    opt: dict[str, Any]
    tp: np.ndarray
    pp: np.ndarray
    cp: Any
    mbs: Any
    ep: Any
    shard: Any  # dp x cp ranks hold the same weights: gradients reduce, ZeRO shards over them
    moe: bool
    fp8: Any
    seq: Any
    tokens: Any  # tokens of one micro-batch on one GPU
    n_l: Any  # layers of the slowest stage
    peak: Any  # FLOP/s at the workload precision
    gemm_rate: Any  # BF16 GEMMs
    block_rate: Any  # the blocks' linear layers (FP8 GEMMs with FP8)
    attn_rate: Any
    hbm_rate: Any
    alpha: Any
    launch: Any


def _step(
    d: Mapping[str, Any], hw: Mapping[str, np.ndarray], a: Arch, s: Serving, layout: Any
) -> _Step:
    """The step's context; ``layout`` = (tp, pp, data-parallel replicas)."""
    tp, pp, replicas = layout
    opt = options(d["workload"])
    cp, mbs = opt["cp"], opt["micro_batch"]
    moe = a.experts > 1
    fp8 = s.bytes_per_elem < _BF16
    peak = hw["tflops_per_gpu"] * 1e12
    bf16_peak = peak / tech(d, "fp8_flops_multiplier") if fp8 else peak
    gemm_rate = bf16_peak * tech(d, "train_gemm_compute_efficiency")
    return _Step(
        d=d,
        hw=hw,
        a=a,
        opt=opt,
        tp=tp,
        pp=pp,
        cp=cp,
        mbs=mbs,
        ep=np.minimum(opt["ep"], a.experts) if moe else np.ones(1),
        shard=np.maximum(replicas, 1.0) * cp,
        moe=moe,
        fp8=fp8,
        seq=s.input_tokens,
        tokens=mbs * s.input_tokens / cp,
        n_l=np.ceil(a.layers / pp),
        peak=peak,
        gemm_rate=gemm_rate,
        block_rate=gemm_rate * (tech(d, "train_fp8_gemm_speedup") if fp8 else 1.0),
        attn_rate=bf16_peak * tech(d, "train_attention_compute_efficiency"),
        hbm_rate=hw["hbm_tbps_per_gpu"] * 1e12 * tech(d, "train_elementwise_memory_efficiency"),
        alpha=tech(d, "collective_step_latency_s"),
        launch=np.where(tp > 1, tech(d, "collective_launch_s"), 0.0),
    )


def _moe_extra_s(st: _Step, moe_share: Any) -> Any:
    """What a mixture-of-experts layer costs beyond its FLOPs at the dense GEMM rate, forward +
    backward, one micro-batch: the routed experts' grouped GEMMs run at
    ``train_moe_gemm_efficiency`` of the dense GEMMs' rate (many GEMMs of tokens x ep x k /
    experts rows each, with their tile and wave tails), and each MoE layer pays
    ``train_moe_layer_overhead_s`` for the router, the permutation bookkeeping and the
    dropless dispatcher's host synchronisation on the token counts."""
    a, d = st.a, st.d
    routed_flops = 3 * 2 * st.tokens * moe_share * a.experts_per_token * a.expert_params / st.tp
    slow = 1.0 / tech(d, "train_moe_gemm_efficiency") - 1.0
    return routed_flops / st.block_rate * slow + moe_share * tech(d, "train_moe_layer_overhead_s")


def _layer(st: _Step) -> dict[str, Any]:
    """One layer, forward + backward, one micro-batch (seconds); the bytes per token it streams
    through HBM; and the weights one GPU holds of it (experts / ep of the routed experts, all of
    the rest)."""
    d, a, tp, tokens = st.d, st.a, st.tp, st.tokens
    ffn = a.mlp_active_ffn  # the MLP width one token runs through (mean layer)
    # MoE layers' share of the layers, and the routed experts' weights of the mean layer
    moe_share = (1.0 if a.legacy else a.moe_fraction) if st.moe else 0.0
    routed_params = moe_share * a.experts * a.expert_params if st.moe else 0.0
    t_gemm = 3 * 2 * tokens * a.layer_active_params / tp / st.block_rate
    scored = a.attn_flops_per_query(st.seq * (st.seq + 1) / 2)
    t_attn = 3 * st.mbs * scored / (tp * st.cp) / st.attn_rate
    elem = (
        tech(d, "train_elementwise_bytes_per_hidden") * a.hidden
        + tech(d, "train_elementwise_bytes_per_ffn") * ffn
    )
    if st.fp8:
        elem = (
            elem
            + tech(d, "train_fp8_cast_bytes_per_hidden") * a.hidden
            + tech(d, "train_fp8_cast_bytes_per_ffn") * ffn
        )
    if st.moe:  # each token's top-k copies are permuted to their experts and back
        elem = elem + tech(d, "train_moe_permute_bytes_per_hidden") * moe_share * (
            a.experts_per_token * a.hidden
        )
    local_layer = a.layer_params - (1 - 1 / st.ep) * routed_params
    grad_acc = tech(d, "train_grad_accum_bytes_per_param") * local_layer / tp
    t_mem = (tokens * elem / tp + grad_acc) / st.hbm_rate
    t_layer = t_gemm + t_attn + t_mem + tech(d, "train_layer_overhead_s")
    if st.moe:
        t_layer = t_layer + _moe_extra_s(st, moe_share)
    return {
        "t_gemm": t_gemm,
        "t_attn": t_attn,
        "t_layer": t_layer,
        "elem": elem,
        "local_layer": local_layer,
        "expert_layer": routed_params / st.ep,  # the routed experts one GPU holds of a layer
        "grad_acc": grad_acc,
        "moe_share": moe_share,
    }


def _recompute_fraction(st: _Step, state: Any, in_flight: Any, kept: Any, full: Any) -> Any:
    """Share of the stage's layers whose forward is recomputed (whole layers)."""
    recompute, n_l = st.opt["recompute"], st.n_l
    if st.opt["recompute_layers"] is not None:
        return np.minimum(st.opt["recompute_layers"], n_l) / n_l
    if recompute == "full":
        return np.ones(1)
    if recompute == "auto":  # the fewest whole layers per stage that make it fit
        usable = st.hw["hbm_gb_per_gpu"] * 1e9 * tech(st.d, "hbm_usable_fraction")
        over = state + in_flight * kept - usable
        need = np.where(over > 0, (over + kept) / (in_flight * (kept - full)), 0.0)
        return np.ceil(np.clip(need, 0.0, 1.0) * n_l - 1e-9) / n_l
    return np.zeros(1)


def _zero_bytes_per_param(st: _Step, group: Any) -> Any:
    """Bytes per parameter of weights, gradients and optimizer state when the ``group`` ranks
    holding the parameter shard them by the ZeRO stage."""
    zero, d = st.opt["zero_stage"], st.d
    w_b = tech(d, "train_weight_grad_bytes_per_param") - tech(d, "train_grad_bytes_per_param")
    g_b = tech(d, "train_grad_bytes_per_param")
    o_b = tech(d, "train_optimizer_bytes_per_param")
    return (
        w_b / np.where(zero >= 3, group, 1.0)
        + g_b / np.where(zero >= 2, group, 1.0)
        + o_b / np.where(zero >= 1, group, 1.0)
    )


def _expert_shard(st: _Step) -> Any:
    """Ranks holding the same routed experts: the expert-data-parallel group, dp x cp / ep."""
    return np.maximum(st.shard / st.ep, 1.0)


#: The MLP's share of the 34 s·b·h activation bytes (a 4h GELU MLP: its input 2, the FC1 output
#: 8, the GELU output 8, the dropout mask 1; Korthikanti et al. 2022, s4.1).
_MLP_ACT_PER_ELEM = 19.0


def _moe_activation_bytes(st: _Step, moe_share: Any) -> Any:
    """Activation bytes an MoE layer keeps beyond the dense formula's MLP share, one micro-batch
    per GPU: the router input (2 h) and, for each of the top-k routed copies, its permuted input
    (2 h) and the expert's FC1 outputs and activation output (2 x ffn_matrices x expert ffn), in
    bf16, in place of the 19 s·b·h of a 4h dense MLP."""
    a = st.a
    h, k = a.hidden, a.experts_per_token
    per_token = 2 * h + k * (2 * h + 2 * a.ffn_matrices * a.ffn) - _MLP_ACT_PER_ELEM * h
    return st.tokens * moe_share * per_token / st.tp


def _memory(st: _Step, ly: Mapping[str, Any], micro: Any, v: Any) -> dict[str, Any]:
    """Memory of the first stage: ZeRO-sharded state, then activations of the micro-batches in
    flight (p for 1F1B; p + (p-1)/v stage-loads for the interleaved schedule), and the share of
    its layers recomputed to make them fit."""
    d, a, tp, pp, n_l = st.d, st.a, st.tp, st.pp, st.n_l
    zero, shard, local_layer = st.opt["zero_stage"], st.shard, ly["local_layer"]
    params_gpu = (n_l * local_layer + a.embedding_params) / tp
    w_b = tech(d, "train_weight_grad_bytes_per_param") - tech(d, "train_grad_bytes_per_param")
    state = params_gpu * _zero_bytes_per_param(st, shard) + np.where(
        zero >= 3, local_layer / tp * w_b, 0.0
    )
    if st.moe:  # the routed experts shard over their expert-data-parallel group only
        experts_gpu = n_l * ly["expert_layer"] / tp
        extra = _zero_bytes_per_param(st, _expert_shard(st)) - _zero_bytes_per_param(st, shard)
        state = state + experts_gpu * extra
    in_flight = np.minimum(np.where(v > 1, pp + (pp - 1) / v, pp), micro) * n_l
    consts = {
        "per_elem": tech(d, "train_activation_bytes_per_elem"),
        "per_score": tech(d, "train_activation_bytes_per_score"),
        "full_per_elem": tech(d, "train_full_recompute_bytes_per_elem"),
    }
    kept_mode = "none" if st.opt["recompute"] == "none" else "selective"
    kept = activation_bytes_per_layer(
        st.tokens, a.hidden, a.heads, tp, kept_mode, context=st.seq / st.cp, **consts
    )
    full = activation_bytes_per_layer(st.tokens, a.hidden, a.heads, tp, "full", **consts)
    if st.moe:
        kept = kept + _moe_activation_bytes(st, ly["moe_share"])
    frac = _recompute_fraction(st, state, in_flight, kept, full)
    # A recomputed layer's full activations exist again while its backward runs.
    act = in_flight * ((1 - frac) * kept + frac * full) + np.where(frac > 0, kept, 0.0)
    return {"params_gpu": params_gpu, "state": state, "act": act, "frac": frac}


def _comm(st: _Step, ly: Mapping[str, Any], frac: Any, v: Any) -> tuple[Any, Any, Any, Any]:
    """Exposed communication of one micro-batch on one GPU: (tensor-, context-, expert-parallel,
    pipeline sends) seconds."""
    a, hw, tp, cp, ep, alpha = st.a, st.hw, st.tp, st.cp, st.ep, st.alpha
    n_l, tokens = st.n_l, st.tokens
    ar = allreduce_s(tokens * a.hidden * _BF16, tp, hw["net_bytes_per_s"], alpha, hw)
    t_tp_layer = (4 + 2 * frac) * (ar + st.launch)
    if st.opt["tp_comm_overlap"]:
        t_tp_layer = np.maximum(t_tp_layer - ly["t_gemm"], 0.0) + t_tp_layer / np.maximum(tp, 1.0)
    t_tp = n_l * t_tp_layer
    kv_bytes = tokens * a.kv_elems_per_token_layer * _BF16 / tp
    t_ring = 3 * (cp - 1) * (kv_bytes / _bytes_per_s(st, tp * cp) + alpha)
    t_cp = n_l * np.maximum(t_ring - ly["t_attn"], 0.0)
    t_ep: Any = 0.0
    if st.moe:  # dispatch + combine, forward and backward: 4 all-to-alls of the routed copies
        routed = tokens * a.experts_per_token * a.hidden * _BF16 / tp
        a2a = (ep - 1) / ep * routed / _bytes_per_s(st, tp * ep) + (ep - 1) * alpha
        t_ep = n_l * ly["moe_share"] * 4 * np.where(ep > 1, a2a, 0.0)
    send = p2p_s(tokens * a.hidden * _BF16 / tp, hw["p2p_bytes_per_s"], alpha, hw)
    t_p2p = np.where(st.pp > 1, 2 * v * send, 0.0)
    return t_tp, t_cp, t_ep, t_p2p


def _bytes_per_s(st: _Step, group: Any) -> Any:
    """Per-GPU bandwidth of a group of ``group`` GPUs: the scale-up fabric's, or the scale-out
    NIC's once the group leaves the scale-up domain."""
    return np.where(group > st.hw["domain_gpus"], _scaleout_bytes_per_s(st.d, st.hw),
                    st.hw["net_bytes_per_s"])  # fmt: skip


def _data_parallel(
    st: _Step, params_gpu: Any, experts_gpu: Any, t_micro: Any, micro: Any
) -> tuple[Any, Any]:
    """(exposed gradient / weight collectives, optimizer step) seconds per step.

    Reduce-scatter of the bf16 gradients behind one micro-batch's backward (every micro-batch
    from ZeRO-2 on), all-gather of the updated bf16 weights behind the next step's first forward
    (and every forward and backward with ZeRO-3); then the optimizer step streams its (sharded)
    state through HBM. The routed experts' gradients reduce over their own expert-data-parallel
    group (dp x cp / ep ranks, ``ep`` apart: Megatron-Core places EP inside DP), a second
    collective after the dense weights' one; its members leave the scale-up domain as soon as
    tp x ep fills it."""
    zero, shard = st.opt["zero_stage"], st.shard
    grads = params_gpu * _BF16
    t_rs = _dp_gather_s(st.d, st.hw, grads, shard, st.tp, st.alpha)  # reduce-scatter: same
    opt_params = params_gpu / np.where(zero >= 1, shard, 1.0)
    if st.moe:
        edp = _expert_shard(st)
        dense = (params_gpu - experts_gpu) * _BF16
        t_rs = _dp_gather_s(st.d, st.hw, dense, shard, st.tp, st.alpha) + _dp_gather_s(
            st.d, st.hw, experts_gpu * _BF16, edp, st.tp * st.ep, st.alpha
        )
        opt_params = (params_gpu - experts_gpu) / np.where(
            zero >= 1, shard, 1.0
        ) + experts_gpu / np.where(zero >= 1, edp, 1.0)
    t_fwd = t_micro / 3
    t_bwd = 2 * t_fwd
    rs_x, ag_fwd_x = np.maximum(t_rs - t_bwd, 0.0), np.maximum(t_rs - t_fwd, 0.0)
    t_dp = np.where(zero >= 2, micro, 1.0) * rs_x + np.where(
        zero >= 3, micro * (ag_fwd_x + rs_x), ag_fwd_x
    )
    t_opt = tech(st.d, "train_optimizer_step_bytes_per_param") * opt_params / st.hbm_rate
    return t_dp, t_opt


def train(
    d: Mapping[str, Any],
    hw: Mapping[str, np.ndarray],
    a: Arch,
    s: Serving,
    model_parallel: tuple[np.ndarray, np.ndarray],
    batch: np.ndarray,
    replicas: np.ndarray,
) -> dict[str, np.ndarray]:
    """Step time and memory of one data-parallel replica (tp x pp x cp GPUs, ``model_parallel``
    = (tp, pp)); ``batch`` sequences per replica and step, ``micro_batch`` of them per
    micro-batch."""
    tp, pp = model_parallel
    st = _step(d, hw, a, s, (tp, pp, replicas))
    micro = np.maximum(batch / st.mbs, 1.0)  # micro-batches per step
    n_l, seq, tokens = st.n_l, st.seq, st.tokens

    # Slowest stage: ceil(L/p) layers, or the last stage's layers plus the LM head when there
    # are too few spare layers to make room for it.
    spare = np.minimum(pp * n_l - a.layers, n_l)
    v = np.minimum(st.opt["pp_interleave"], n_l)  # at least one layer per virtual stage
    ly = _layer(st)
    t_layer = ly["t_layer"]
    head_gemm = 3 * 2 * tokens * a.embedding_params / tp / st.gemm_rate
    head_mem = tokens * a.vocab / tp * tech(d, "train_logit_bytes_per_vocab") / st.hbm_rate
    t_head = head_gemm + head_mem
    t_stage = np.maximum(n_l * t_layer, (n_l - spare) * t_layer + t_head)
    mem = _memory(st, ly, micro, v)
    frac, params_gpu = mem["frac"], mem["params_gpu"]

    # Per micro-batch: compute (with the recomputed forwards), TP, CP and EP traffic, stage
    # sends; the pipeline's bubble; then data parallelism and the optimizer.
    t_compute = t_stage + frac * n_l * t_layer / 3
    t_tp, t_cp, t_ep, t_p2p = _comm(st, ly, frac, v)
    t_micro = t_compute + t_tp + t_cp + t_ep + t_p2p
    t_pipe = micro * t_micro * (1 + bubble_fraction(pp, micro, v))
    experts_gpu = n_l * ly["expert_layer"] / tp
    t_dp, t_opt = _data_parallel(st, params_gpu, experts_gpu, t_micro, micro)
    t_step = t_pipe + t_dp + t_opt

    model_flops = batch * (
        6 * seq * (a.layers * a.layer_active_params + a.embedding_params)
        + 3 * a.layers * a.attn_flops_per_query(seq * (seq + 1) / 2)
    )
    util = model_flops / (t_step * (tp * pp * st.cp) * st.peak)
    # HBM traffic per GPU: weights read fwd, bwd-data, bwd-weight, plus the streamed work
    streamed = n_l * (tokens * ly["elem"] / tp + ly["grad_acc"])
    hbm = micro * (3 * params_gpu * s.bytes_per_elem + streamed)
    return {
        "replica_tokens_per_s": batch * seq / t_step,
        "ttft_s": t_step,
        "tpot_s": np.zeros_like(t_step),
        "step_s": t_step,
        "compute_utilization": util,
        "hbm_bytes_per_s": hbm / t_step,
        "mem_need_bytes": mem["state"] + mem["act"],
        "kv_bytes": np.zeros_like(t_step),
        "batch": batch + np.zeros_like(t_step),
    }
