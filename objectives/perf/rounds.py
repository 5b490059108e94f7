"""One round of the continuous scheduler: memory per GPU, the round's step, the batch bounds.

The building blocks :mod:`objectives.perf.continuous` solves the running batch with: the bytes
of the bottleneck stage (weights, activations, the KV cache per sequence), one decode round of
the whole batch (with the prompts that replace finishing requests, or with a full token budget
of prompt chunks; with multi-token prediction), one request's prefill, and the largest batch the
KV cache, the step budget and the caps allow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import tech
from objectives.perf import pool
from objectives.perf.context import prefill_stage
from objectives.perf.network import p2p_s, plus_where
from objectives.perf.serving import Replica, Step, mixed_step, weights_and_kv_token


def _memory(r: Replica) -> dict[str, Any]:
    """Per-GPU bytes of the bottleneck stage (``_kv_batch``: the batch the KV cache holds)."""
    d, hw, a, s, tp, pp = r
    e = s.bytes_per_elem
    weights, kv_token = weights_and_kv_token(
        a, s, tp, pp, hw.get("ep"), hw.get("cp"), hw.get("attn_dp")
    )
    kv_seq = (s.input_tokens + s.output_tokens) * kv_token
    act = tech(d, "cb_max_num_tokens") * (a.hidden + 2 * a.mlp_active_ffn / tp) * e
    capacity = hw["hbm_gb_per_gpu"] * tech(d, "hbm_bytes_per_gb")
    if "pool_weights" in hw:  # weights staged from / KV room in a memory pool
        weights, capacity = pool.memory(r, weights, capacity)
    fixed = weights + act + tech(d, "cb_runtime_reserve_gb") * 1e9
    frac = tech(d, "kv_cache_free_fraction")
    return {"kv_token": kv_token, "kv_seq": kv_seq, "fixed": fixed, "frac": frac,
            "capacity": capacity}  # fmt: skip


def _kv_batch(mem: Mapping[str, Any]) -> Any:
    """The batch the KV cache holds: whole sequences in the free fraction of what is left."""
    return np.floor(np.maximum(mem["capacity"] - mem["fixed"], 0.0) * mem["frac"] / mem["kv_seq"])


def _prefill_one(r: Replica) -> Any:
    """Latency of one request's prompt through all pipeline stages."""
    d, hw, a, s, tp, pp = r
    S, e = s.input_tokens, 2.0  # 16-bit activations between stages
    one = prefill_stage(d, hw, a, s, tp, pp, 1.0, S)
    hop = p2p_s(S * a.hidden * e, hw["p2p_bytes_per_s"], _alpha(d), hw)
    return pp * plus_where(one.time_s, pp > 1, hop)  # a send between stages


def running_context(s: Any) -> Any:
    """Mean context (prompt + tokens so far) of a sequence in the running batch: S + E[L^2] /
    (2 E[L]) = S + L (1 + cv^2) / 2 for answers of mean L and coefficient of variation cv.

    A sequence holds its slot for its whole answer, so the batch a step sees samples answers in
    proportion to their length (the inspection paradox of renewal theory; Kleinrock, Queueing
    Systems I, 1975, sec. 5.2: the mean interval seen is E[L^2] / E[L]), half-way through on
    average. With every answer L long (cv 0, the perf-overview rows the cb_* factors are fitted
    on) this is S + L / 2; MLPerf's DeepSeek-R1 answers (cv 1.25) make it S + 1.28 L. Prompt
    lengths are taken independent of answer lengths, so the prompt part is their mean."""
    return s.input_tokens + s.output_tokens * (1.0 + np.square(s.output_tokens_cv)) / 2.0


def _alpha(d: Mapping[str, Any]) -> Any:
    return tech(d, "collective_step_latency_s")


def _round(
    r: Replica,
    batch: Any,
    mixed: bool,
    full_budget: bool = False,
) -> tuple[Any, Step, Any]:
    """(time of one decode round of the whole batch, the stage's step, micro-batches).

    ``mixed``: each step also prefills the prompts of the requests that replace the finishing
    ones (with ``workload.prefill_batching: separate``, in prefill-only steps of their own:
    ``_separate_round``); ``full_budget``: each step fills its token budget with prompt chunks
    instead (the engine while prompts are queued)."""
    d, hw, a, s, tp, pp = r
    if mixed and s.separate_prefill and not full_budget:
        return _separate_round(r, batch)
    if s.mtp_tokens:
        return _mtp_round(r, batch, mixed, full_budget)
    S, out, e = s.input_tokens, s.output_tokens, 2.0
    n_micro = np.minimum(pp, batch)
    b = batch / n_micro
    ctx = running_context(s)
    parts = [(b * ctx, b * ctx)]
    tokens, seqs = b, b
    if full_budget:  # chunk / S prompts of S tokens
        chunk = _chunk(d, hw, b)
        parts.append((chunk * (S + 1) / 2, chunk))
        tokens, seqs = b + chunk, b + chunk / S
    elif mixed:  # the prompts of the requests that replace the finishing ones, in chunks
        bp = b / out
        parts.append((bp * S * (S + 1) / 2, bp * S))
        tokens, seqs = b + bp * S, b + bp
    st = mixed_step(d, hw, a, s, tp, pp, tokens, seqs, parts)
    hop = p2p_s(tokens * a.hidden * e, hw["p2p_bytes_per_s"], _alpha(d), hw)
    return pp * plus_where(st.time_s, pp > 1, hop), st, n_micro


def prefill_step(r: Replica) -> tuple[Any, Step]:
    """(time, work) of one prefill-only step of ``cb_max_num_tokens`` prompt tokens through
    the pipeline: how an engine that keeps prompts out of its decode steps prefills them."""
    d, hw, a, s, tp, pp = r
    S, chunk = s.input_tokens, step_tokens(d, hw)
    pre = mixed_step(d, hw, a, s, tp, pp, chunk, chunk / S, [(chunk * (S + 1) / 2, chunk)])
    hop = p2p_s(chunk * a.hidden * 2.0, hw["p2p_bytes_per_s"], _alpha(d), hw)
    return pp * plus_where(pre.time_s, pp > 1, hop), pre


def _separate_round(r: Replica, batch: Any) -> tuple[Any, Step, Any]:
    """``_round`` of an engine that does not mix prompts into decode steps (SGLang's default):
    a decode-only round of the batch, plus the prompts of the b / out requests that replace the
    finishing ones, prefilled in steps of ``cb_max_num_tokens`` prompt tokens of their own:
    (b S / out) / budget such steps per round, amortized. A decode step of a mixture of experts
    then reads only the experts its b tokens route to; a prefill step reads all it routes to
    once per budget of prompt tokens."""
    d, hw, a, s, tp, pp = r
    S, out = s.input_tokens, s.output_tokens
    t_dec, dec, n_micro = _round(r, batch, False)  # (MTP: per output token, as _mtp_round)
    b = batch / n_micro
    chunk = step_tokens(d, hw)
    t_pre, pre = prefill_step(r)
    # prefill steps per output token: b g / out prompts per round of g tokens (MTP), so g cancels
    per = b * S / (out * chunk)
    st = Step(dec.time_s + per * pre.time_s, dec.flops + per * pre.flops,
              dec.hbm_bytes + per * pre.hbm_bytes)  # fmt: skip
    return t_dec + per * t_pre, st, n_micro


def _mtp_round(
    r: Replica,
    batch: Any,
    mixed: bool,
    full_budget: bool,
) -> tuple[Any, Step, Any]:
    """``_round`` with multi-token prediction (DeepSeek-V3 MTP; speculative decoding): each
    step verifies 1 + n tokens of every sequence (their queries attend the context, the KV cache
    is read once) after n draft passes of a one-layer module, and yields g = 1 + p + ... + p^n
    tokens per sequence in expectation (each draft accepted with probability p given the one
    before). Returned per g: the time, work and prompts of one output token per sequence, so
    every caller's rates, latencies and Little's law hold as without MTP."""
    d, hw, a, s, tp, pp = r
    S, out, e = s.input_tokens, s.output_tokens, 2.0
    n, g = s.mtp_tokens, s.tokens_per_step
    n_micro = np.minimum(pp, batch)
    b = batch / n_micro
    ctx = running_context(s)
    parts = [(b * (1 + n) * ctx, b * ctx)]
    tokens, seqs = b * (1 + n), b
    if full_budget:
        chunk = _chunk(d, hw, tokens)
        parts.append((chunk * (S + 1) / 2, chunk))
        tokens, seqs = tokens + chunk, b + chunk / S
    elif mixed:  # sequences finish g times as fast: g times the replacing prompts per step
        bp = b * g / out
        parts.append((bp * S * (S + 1) / 2, bp * S))
        tokens, seqs = tokens + bp * S, b + bp
    st = mixed_step(d, hw, a, s, tp, pp, tokens, seqs, parts)
    layers = np.ceil(a.layers / pp)
    draft = mixed_step(d, hw, a, s, tp, pp, b, b, [(b * ctx, b * ctx)])  # one decode pass
    draft_s = n * draft.time_s / layers  # n passes of a one-layer module
    hop = p2p_s(tokens * a.hidden * e, hw["p2p_bytes_per_s"], _alpha(d), hw)
    t = pp * plus_where(st.time_s, pp > 1, hop) + draft_s
    per = Step(st.time_s / g, st.flops / g, st.hbm_bytes / g)
    return t / g, per, n_micro


def engine_ranks(hw: Mapping[str, Any]) -> Any:
    """Batching ranks of a replica: the engine schedules each attention data-parallel rank
    with its own max_batch_size and max_num_tokens (TensorRT-LLM and SGLang with attention
    DP: DeepSeek-R1 on 8 x B200 runs max_batch 896 and max_num_tokens 2048 per rank, 7,168
    concurrent requests in all, NVIDIA/TensorRT-LLM docs/source/blogs/
    Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md @ 01c4ece9); 1 otherwise."""
    dp = hw.get("attn_dp")
    return 1.0 if dp is None else dp


def step_tokens(d: Mapping[str, Any], hw: Mapping[str, Any]) -> Any:
    """The replica's token budget per step: ``cb_max_num_tokens`` per batching rank."""
    return tech(d, "cb_max_num_tokens") * engine_ranks(hw)


def _chunk(d: Mapping[str, Any], hw: Mapping[str, Any], b: Any) -> Any:
    """Prompt tokens a step takes beside ``b`` decode tokens when prompts are queued."""
    return np.maximum(step_tokens(d, hw) - b, 0.0)


def _bound(
    r: Replica,
    cap: Any,
    mixed: bool,
) -> tuple[Any, dict[str, Any]]:
    """The largest batch the KV cache, the step budget and the caps allow (0: nothing fits)."""
    d, hw, a, s, tp, pp = r
    mem = _memory(r)
    # a decode step holds the batch and, mixed, its share of the replacing prompts' tokens
    per_seq = 1 + s.input_tokens / s.output_tokens if mixed and not s.separate_prefill else 1.0
    # a prompt longer than the budget is chunked over several steps: at least one sequence
    ranks = engine_ranks(hw)  # the engine's limits hold per batching rank
    budget = np.maximum(np.floor(step_tokens(d, hw) / per_seq), 1.0)
    b = np.minimum(_kv_batch(mem), budget)
    b = np.minimum(b, tech(d, "cb_max_batch") * ranks)
    b = np.minimum(b, cap)
    if s.max_batch is not None:
        b = np.minimum(b, s.max_batch * ranks)
    return np.floor(np.maximum(b, 0.0)), mem
