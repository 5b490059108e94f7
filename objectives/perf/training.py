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
* LoRA (``lora_rank`` r > 0, Hu et al., ICLR 2022): the base weights are frozen, so their
  backward computes activation gradients only (forward + backward = 2x forward for the base
  GEMMs and the LM head, still 3x for attention and the adapters); the adapters' r x (in + out)
  weights per projection are the only trainable ones: their gradients alone are accumulated,
  reduced over data parallelism and updated, and only they carry gradients and optimizer state
  (the frozen weights keep their bf16 copy, sharded with ZeRO-3, whose all-gathers stay).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import tech
from objectives.errors import ContextError
from objectives.fabric.topology import SWITCHED
from objectives.perf.model import Arch
from objectives.perf.network import allgather_s, allreduce_s, p2p_s
from objectives.perf.serving import Serving
from objectives.perf.train_memory import activation_bytes_per_layer, expert_shard, memory
from objectives.perf.train_step import BF16, RECOMPUTE, Step, cp_of, make_step, options

__all__ = [
    "RECOMPUTE",
    "activation_bytes_per_layer",
    "bubble_fraction",
    "cp_of",
    "options",
    "train",
]


def bubble_fraction(pp: Any, microbatches: Any, interleave: Any = 1) -> Any:
    """Idle time of (interleaved) 1F1B relative to the ideal m micro-batch times:
    (p - 1) / (m · v) (Narayanan et al., SC21, §2.2)."""
    return (np.asarray(pp, dtype=float) - 1) / (np.asarray(microbatches) * interleave)


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


def _moe_extra_s(st: Step, moe_share: Any) -> Any:
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


def _layer(st: Step) -> dict[str, Any]:
    """One layer, forward + backward, one micro-batch (seconds); the bytes per token it streams
    through HBM; and the weights one GPU holds of it (experts / ep of the routed experts, all of
    the rest)."""
    d, a, tp, tokens = st.d, st.a, st.tp, st.tokens
    ffn = a.mlp_active_ffn  # the MLP width one token runs through (mean layer)
    # MoE layers' share of the layers, and the routed experts' weights of the mean layer
    moe_share = (1.0 if a.legacy else a.moe_fraction) if st.moe else 0.0
    routed_params = moe_share * a.experts * a.expert_params if st.moe else 0.0
    adapters = st.opt["lora_rank"] * (a.lora_params_per_rank if not a.lora_refusal else 0.0)
    frozen = adapters > 0  # LoRA: the base weights get no weight-gradient GEMM
    passes = np.where(frozen, 2.0, 3.0) * a.layer_active_params + 3.0 * adapters
    t_gemm = passes * 2 * tokens / tp / st.block_rate
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
    trainable = np.where(frozen, adapters, local_layer)
    grad_acc = tech(d, "train_grad_accum_bytes_per_param") * trainable / tp
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
        "adapters": adapters,  # LoRA weights of one layer (0: full training)
        "frozen": frozen,
    }


def _comm(st: Step, ly: Mapping[str, Any], frac: Any, v: Any) -> tuple[Any, Any, Any, Any]:
    """Exposed communication of one micro-batch on one GPU: (tensor-, context-, expert-parallel,
    pipeline sends) seconds."""
    a, hw, tp, cp, ep, alpha = st.a, st.hw, st.tp, st.cp, st.ep, st.alpha
    n_l, tokens = st.n_l, st.tokens
    ar = allreduce_s(tokens * a.hidden * BF16, tp, hw["net_bytes_per_s"], alpha, hw)
    t_tp_layer = (4 + 2 * frac) * (ar + st.launch)
    if st.opt["tp_comm_overlap"]:
        t_tp_layer = np.maximum(t_tp_layer - ly["t_gemm"], 0.0) + t_tp_layer / np.maximum(tp, 1.0)
    t_tp = n_l * t_tp_layer
    kv_bytes = tokens * a.kv_elems_per_token_layer * BF16 / tp
    t_ring = 3 * (cp - 1) * (kv_bytes / _bytes_per_s(st, tp * cp) + alpha)
    t_cp = n_l * np.maximum(t_ring - ly["t_attn"], 0.0)
    t_ep: Any = 0.0
    if st.moe:  # dispatch + combine, forward and backward: 4 all-to-alls of the routed copies
        routed = tokens * a.experts_per_token * a.hidden * BF16 / tp
        a2a = (ep - 1) / ep * routed / _bytes_per_s(st, tp * ep) + (ep - 1) * alpha
        t_ep = n_l * ly["moe_share"] * 4 * np.where(ep > 1, a2a, 0.0)
    send = p2p_s(tokens * a.hidden * BF16 / tp, hw["p2p_bytes_per_s"], alpha, hw)
    t_p2p = np.where(st.pp > 1, 2 * v * send, 0.0)
    return t_tp, t_cp, t_ep, t_p2p


def _bytes_per_s(st: Step, group: Any) -> Any:
    """Per-GPU bandwidth of a group of ``group`` GPUs: the scale-up fabric's, or the scale-out
    NIC's once the group leaves the scale-up domain."""
    return np.where(group > st.hw["domain_gpus"], _scaleout_bytes_per_s(st.d, st.hw),
                    st.hw["net_bytes_per_s"])  # fmt: skip


def _data_parallel(
    st: Step,
    params_gpu: Any,
    experts_gpu: Any,
    t_micro: Any,
    micro: Any,
    *,
    lora: tuple[Any, Any] = (0.0, False),
) -> tuple[Any, Any]:
    """(exposed gradient / weight collectives, optimizer step) seconds per step.

    Reduce-scatter of the bf16 gradients behind one micro-batch's backward (every micro-batch
    from ZeRO-2 on), all-gather of the updated bf16 weights behind the next step's first forward
    (and every forward and backward with ZeRO-3); then the optimizer step streams its (sharded)
    state through HBM. The routed experts' gradients reduce over their own expert-data-parallel
    group (dp x cp / ep ranks, ``ep`` apart: Megatron-Core places EP inside DP), a second
    collective after the dense weights' one; its members leave the scale-up domain as soon as
    tp x ep fills it. With LoRA (``lora`` = (adapter weights per GPU, frozen)) only the
    adapters' gradients reduce and only they are updated and re-gathered; ZeRO-3 still gathers
    the frozen weights for every forward and backward."""
    zero, shard = st.opt["zero_stage"], st.shard
    adapters_gpu, frozen = lora
    trainable = np.where(frozen, adapters_gpu, params_gpu)
    t_rs = _dp_gather_s(st.d, st.hw, trainable * BF16, shard, st.tp, st.alpha)  # RS: same
    opt_params = trainable / np.where(zero >= 1, shard, 1.0)
    if st.moe:
        edp = expert_shard(st)
        dense = (params_gpu - experts_gpu) * BF16
        t_rs = _dp_gather_s(st.d, st.hw, dense, shard, st.tp, st.alpha) + _dp_gather_s(
            st.d, st.hw, experts_gpu * BF16, edp, st.tp * st.ep, st.alpha
        )
        opt_params = (params_gpu - experts_gpu) / np.where(
            zero >= 1, shard, 1.0
        ) + experts_gpu / np.where(zero >= 1, edp, 1.0)
    t_ag = t_rs  # the updated weights gather as their gradients reduced
    if np.any(frozen):  # LoRA with ZeRO-3 gathers the frozen weights it computes with
        t_w = _dp_gather_s(st.d, st.hw, params_gpu * BF16, shard, st.tp, st.alpha)
        t_ag = np.where(frozen & (zero >= 3), t_w, t_rs)
    t_fwd = t_micro / np.where(frozen, 2.0, 3.0)
    t_bwd = np.where(frozen, 1.0, 2.0) * t_fwd
    rs_x, ag_fwd_x = np.maximum(t_rs - t_bwd, 0.0), np.maximum(t_ag - t_fwd, 0.0)
    # ZeRO-3 gathers the weights again for the backward, on the same links as the gradients'
    # reduce-scatter: both share the backward (PyTorch FSDP FULL_SHARD prefetches the next
    # layer's all-gather while the previous layer's reduce-scatter runs).
    bwd_x = np.maximum(t_ag + t_rs - t_bwd, 0.0)
    t_dp = np.where(
        zero >= 3, micro * (ag_fwd_x + bwd_x), np.where(zero >= 2, micro, 1.0) * rs_x + ag_fwd_x
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
    st = make_step(d, hw, a, s, (tp, pp, replicas))
    if a.lora_refusal and np.any(st.opt["lora_rank"] > 0):
        msg = f"LoRA is modelled for dense models, not for {a.lora_refusal}; set lora_rank: 0"
        raise ContextError("workload.lora_rank", msg)
    micro = np.maximum(batch / st.mbs, 1.0)  # micro-batches per step
    n_l, seq, tokens = st.n_l, st.seq, st.tokens

    # Slowest stage: ceil(L/p) layers, or the last stage's layers plus the LM head when there
    # are too few spare layers to make room for it.
    spare = np.minimum(pp * n_l - a.layers, n_l)
    v = np.minimum(st.opt["pp_interleave"], n_l)  # at least one layer per virtual stage
    ly = _layer(st)
    t_layer = ly["t_layer"]
    passes = np.where(ly["frozen"], 2.0, 3.0)  # a frozen LM head: no weight gradient
    head_gemm = passes * 2 * tokens * a.embedding_params / tp / st.gemm_rate
    head_mem = tokens * a.vocab / tp * tech(d, "train_logit_bytes_per_vocab") / st.hbm_rate
    t_head = head_gemm + head_mem
    t_stage = np.maximum(n_l * t_layer, (n_l - spare) * t_layer + t_head)
    mem = memory(st, ly, micro, v)
    frac, params_gpu = mem["frac"], mem["params_gpu"]

    # Per micro-batch: compute (with the recomputed forwards), TP, CP and EP traffic, stage
    # sends; the pipeline's bubble; then data parallelism and the optimizer.
    t_compute = t_stage + frac * n_l * t_layer / np.where(ly["frozen"], 2.0, 3.0)
    t_tp, t_cp, t_ep, t_p2p = _comm(st, ly, frac, v)
    t_micro = t_compute + t_tp + t_cp + t_ep + t_p2p
    t_pipe = micro * t_micro * (1 + bubble_fraction(pp, micro, v))
    experts_gpu = n_l * ly["expert_layer"] / tp
    lora = (n_l * ly["adapters"] / tp, ly["frozen"])
    t_dp, t_opt = _data_parallel(st, params_gpu, experts_gpu, t_micro, micro, lora=lora)
    t_step = t_pipe + t_dp + t_opt

    model_flops = batch * (
        2 * passes * seq * (a.layers * a.layer_active_params + a.embedding_params)
        + 6 * seq * a.layers * ly["adapters"]
        + 3 * a.layers * a.attn_flops_per_query(seq * (seq + 1) / 2)
    )
    util = model_flops / (t_step * (tp * pp * st.cp) * st.peak)
    # HBM traffic per GPU: weights read fwd, bwd-data, bwd-weight, plus the streamed work
    streamed = n_l * (tokens * ly["elem"] / tp + ly["grad_acc"])
    hbm = micro * (passes * params_gpu * s.bytes_per_elem + streamed)
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
