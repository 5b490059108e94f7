"""Memory of a training step's first pipeline stage (objectives/perf/training.py): ZeRO-sharded
weights, gradients and optimizer state (the routed experts over their expert-data-parallel
group), and activations per Korthikanti et al. 2022 with whole layers recomputed to fit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import tech
from objectives.perf.train_step import Step


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


def recompute_fraction(st: Step, state: Any, in_flight: Any, kept: Any, full: Any) -> Any:
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


def zero_bytes_per_param(st: Step, group: Any) -> Any:
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


def expert_shard(st: Step) -> Any:
    """Ranks holding the same routed experts: the expert-data-parallel group, dp x cp / ep."""
    return np.maximum(st.shard / st.ep, 1.0)


#: The MLP's share of the 34 s·b·h activation bytes (a 4h GELU MLP: its input 2, the FC1 output
#: 8, the GELU output 8, the dropout mask 1; Korthikanti et al. 2022, s4.1).
MLP_ACT_PER_ELEM = 19.0


def moe_activation_bytes(st: Step, moe_share: Any) -> Any:
    """Activation bytes an MoE layer keeps beyond the dense formula's MLP share, one micro-batch
    per GPU: the router input (2 h) and, for each of the top-k routed copies, its permuted input
    (2 h) and the expert's FC1 outputs and activation output (2 x ffn_matrices x expert ffn), in
    bf16, in place of the 19 s·b·h of a 4h dense MLP."""
    a = st.a
    h, k = a.hidden, a.experts_per_token
    per_token = 2 * h + k * (2 * h + 2 * a.ffn_matrices * a.ffn) - MLP_ACT_PER_ELEM * h
    return st.tokens * moe_share * per_token / st.tp


def memory(st: Step, ly: Mapping[str, Any], micro: Any, v: Any) -> dict[str, Any]:
    """Memory of the first stage: ZeRO-sharded state, then activations of the micro-batches in
    flight (p for 1F1B; p + (p-1)/v stage-loads for the interleaved schedule), and the share of
    its layers recomputed to make them fit."""
    d, a, tp, pp, n_l = st.d, st.a, st.tp, st.pp, st.n_l
    zero, shard, local_layer = st.opt["zero_stage"], st.shard, ly["local_layer"]
    params_gpu = (n_l * local_layer + a.embedding_params) / tp
    w_b = tech(d, "train_weight_grad_bytes_per_param") - tech(d, "train_grad_bytes_per_param")
    state = params_gpu * zero_bytes_per_param(st, shard) + np.where(
        zero >= 3, local_layer / tp * w_b, 0.0
    )
    if np.any(ly["frozen"]):  # LoRA: the frozen weights keep their bf16 copy only; the
        # adapters carry the whole state
        adapters_gpu = n_l * ly["adapters"] / tp
        frozen_state = params_gpu * w_b / np.where(zero >= 3, shard, 1.0) + np.where(
            zero >= 3, local_layer / tp * w_b, 0.0
        )
        lora_state = frozen_state + adapters_gpu * zero_bytes_per_param(st, shard)
        state = np.where(ly["frozen"], lora_state, state)
    if st.moe:  # the routed experts shard over their expert-data-parallel group only
        experts_gpu = n_l * ly["expert_layer"] / tp
        extra = zero_bytes_per_param(st, expert_shard(st)) - zero_bytes_per_param(st, shard)
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
        kept = kept + moe_activation_bytes(st, ly["moe_share"])
    frac = recompute_fraction(st, state, in_flight, kept, full)
    # A recomputed layer's full activations exist again while its backward runs.
    act = in_flight * ((1 - frac) * kept + frac * full) + np.where(frac > 0, kept, 0.0)
    return {"params_gpu": params_gpu, "state": state, "act": act, "frac": frac}
