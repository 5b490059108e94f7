"""Continuous (in-flight) batching at saturation, optionally with disaggregated prefill.

Steady state of an engine with chunked prefill (TensorRT-LLM >= 0.10 in-flight batching,
vLLM, SGLang) with every request queued: each step decodes the running batch of B sequences
and prefills the B/out requests that replace those finishing, so one step carries B decode
tokens and B*S/out prompt tokens, bounded by the engine's token budget per step.

With ``workload.batch: auto`` the batch is solved, not searched: the largest B that

* fits the paged KV cache: the engine keeps ``kv_cache_free_fraction`` of the HBM left after
  weights, one step's activations and the runtime reserve, and reserves input + output tokens
  per sequence (TensorRT-LLM's guaranteed-no-evict scheduler);
* keeps a step within ``cb_max_num_tokens`` and at most ``cb_max_batch`` sequences (or the
  workload's ``batch``/``max_batch`` when set);
* meets the TPOT and TTFT SLOs when they are set (an integer bisection, both grow with B).

A number in ``workload.batch`` is the running batch itself, served as given: it must fit the
KV cache (``model_fits``) and is checked against the SLOs, as the static scheduler does.

``ttft_s`` is one request's prefill plus one step of waiting for the running step (the
queueing estimate at the operating point), never the prefill of the whole batch.

Poisson arrivals (``workload.arrivals: poisson``, MLPerf's Server scenario): requests arrive at
random, so a request may also wait for a batch slot (M/G/c: the running batch's slots, each
held for the request's decode) and for the prefill of the prompts ahead of it (M/G/1: prompts
served first come, first served at the prompt-token rate of a step that fills its token budget
beside the running batch); ``ttft_s`` adds both waits at the SLO percentile
(:mod:`objectives.perf.queueing`), and ``tpot_s`` is the same percentile over requests of the
mean step each lives through (the running batch fluctuates, prompts arrive step by step, short
answers average over few steps). The batch solved is then the mean running batch, and
throughput the arrival rate whose percentiles meet the SLOs: an open system runs below the
saturated capacity by the margin its queues need. It needs a TTFT SLO (without one it would
run at the edge of stability, at an unbounded wait), or a given load: with
``workload.arrival_rate_per_s`` each replica receives that many requests per second, its mean
running batch follows from Little's law (a request holds a slot for its decode:
B = rate x output_tokens x round time at B, bisected), and ``ttft_s``/``tpot_s`` are the
latencies at that load; a replica that cannot keep up serves its saturated capacity (its
queue grows without bound: the saturated figures, counted as a missed SLO, and
``load_served_fraction`` < 1). ``workload.latency_statistic: mean`` reports (and bounds) the
means over requests instead of the SLO percentile, as serving benchmarks report them.

Disaggregated (Splitwise, Isca'24; DistServe, OSDI'24): a prefill pool runs prompts in
token-budget chunks, a decode pool runs decode-only steps, both of the same parallelism, their
sizes in the ratio that balances them (a fluid pool split): the per-group output rate is
out / (1/P + 1/D) with P, D the request rates of one prefill and one decode group.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from objectives._evaluator import tech
from objectives.perf import moe
from objectives.perf.context import prefill_stage
from objectives.perf.model import Arch
from objectives.perf.network import p2p_s, plus_where
from objectives.perf.queueing import (
    admission_wait_mean_s,
    admission_wait_s,
    fcfs_wait_mean_s,
    fcfs_wait_s,
    tpot_quantile_s,
)
from objectives.perf.serving import Serving, Step, mixed_step, stage_step

_RATE_STEPS = 24  # regula falsi steps for the mean batch at a given arrival rate
_RATE_BISECT = 40  # then halvings of the bracket of a row those did not pin down


def _memory(
    d: Mapping[str, Any], hw: Mapping[str, np.ndarray], a: Arch, s: Serving, tp: Any, pp: Any
) -> dict[str, Any]:
    """Per-GPU bytes of the bottleneck stage (``_kv_batch``: the batch the KV cache holds)."""
    e = s.bytes_per_elem
    layers_stage = np.ceil(a.layers / pp)
    emb_copies = np.where(pp > 1, 1.0, 2.0)
    ep = hw.get("ep")
    if ep is None and a.legacy:
        weights = (layers_stage * a.layer_params + emb_copies * a.embedding_params) * e / tp
        kv_heads_gpu = np.maximum(a.kv_heads / tp, 1.0)
        kv_token = layers_stage * 2 * kv_heads_gpu * a.head_dim * s.kv_elem
    else:  # expert and attention data parallelism (objectives.perf.moe): each attention
        # group keeps only its own sequences, so a replica-wide sequence costs 1/ep of a KV row
        ep = 1.0 if ep is None else ep
        weights = moe.weight_elems_per_gpu(a, tp, ep, layers_stage, emb_copies) * e
        per_gpu = moe.kv_elems_per_gpu(a, moe.attention_group(tp, ep)) / ep
        kv_token = layers_stage * per_gpu * s.kv_elem
    if "cp" in hw:  # context parallelism: each group keeps its 1/cp of every prompt
        kv_token = kv_token / hw["cp"]
    kv_seq = (s.input_tokens + s.output_tokens) * kv_token
    act = tech(d, "cb_max_num_tokens") * (a.hidden + 2 * a.mlp_active_ffn / tp) * e
    capacity = hw["hbm_gb_per_gpu"] * tech(d, "hbm_bytes_per_gb")
    fixed = weights + act + tech(d, "cb_runtime_reserve_gb") * 1e9
    frac = tech(d, "kv_cache_free_fraction")
    return {"kv_token": kv_token, "kv_seq": kv_seq, "fixed": fixed, "frac": frac,
            "capacity": capacity}  # fmt: skip


def _kv_batch(mem: Mapping[str, Any]) -> Any:
    """The batch the KV cache holds: whole sequences in the free fraction of what is left."""
    return np.floor(np.maximum(mem["capacity"] - mem["fixed"], 0.0) * mem["frac"] / mem["kv_seq"])


def _prefill_one(
    d: Mapping[str, Any], hw: Mapping[str, np.ndarray], a: Arch, s: Serving, tp: Any, pp: Any
) -> Any:
    """Latency of one request's prompt through all pipeline stages."""
    S, e = s.input_tokens, 2.0  # 16-bit activations between stages
    one = prefill_stage(d, hw, a, s, tp, pp, 1.0, S)
    hop = p2p_s(S * a.hidden * e, hw["p2p_bytes_per_s"], _alpha(d), hw)
    return pp * plus_where(one.time_s, pp > 1, hop)  # a send between stages


def _alpha(d: Mapping[str, Any]) -> Any:
    return tech(d, "collective_step_latency_s")


def _round(
    d: Mapping[str, Any],
    hw: Mapping[str, np.ndarray],
    a: Arch,
    s: Serving,
    tp: Any,
    pp: Any,
    batch: Any,
    mixed: bool,
    full_budget: bool = False,
) -> tuple[Any, Step, Any]:
    """(time of one decode round of the whole batch, the stage's step, micro-batches).

    ``mixed``: each step also prefills the prompts of the requests that replace the finishing
    ones; ``full_budget``: each step fills its token budget with prompt chunks instead (the
    engine while prompts are queued)."""
    if s.mtp_tokens:
        return _mtp_round(d, hw, a, s, tp, pp, batch, mixed, full_budget)
    S, out, e = s.input_tokens, s.output_tokens, 2.0
    n_micro = np.minimum(pp, batch)
    b = batch / n_micro
    ctx = S + out / 2  # mean context of a running sequence
    parts = [(b * ctx, b * ctx)]
    tokens, seqs = b, b
    if full_budget:  # chunk / S prompts of S tokens
        chunk = _chunk(d, b)
        parts.append((chunk * (S + 1) / 2, chunk))
        tokens, seqs = b + chunk, b + chunk / S
    elif mixed:  # the prompts of the requests that replace the finishing ones, in chunks
        bp = b / out
        parts.append((bp * S * (S + 1) / 2, bp * S))
        tokens, seqs = b + bp * S, b + bp
    st = mixed_step(d, hw, a, s, tp, pp, tokens, seqs, parts)
    hop = p2p_s(tokens * a.hidden * e, hw["p2p_bytes_per_s"], _alpha(d), hw)
    return pp * plus_where(st.time_s, pp > 1, hop), st, n_micro


def _mtp_round(
    d: Mapping[str, Any],
    hw: Mapping[str, np.ndarray],
    a: Arch,
    s: Serving,
    tp: Any,
    pp: Any,
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
    S, out, e = s.input_tokens, s.output_tokens, 2.0
    n, g = s.mtp_tokens, s.tokens_per_step
    n_micro = np.minimum(pp, batch)
    b = batch / n_micro
    ctx = S + out / 2
    parts = [(b * (1 + n) * ctx, b * ctx)]
    tokens, seqs = b * (1 + n), b
    if full_budget:
        chunk = _chunk(d, tokens)
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


def _chunk(d: Mapping[str, Any], b: Any) -> Any:
    """Prompt tokens a step takes beside ``b`` decode tokens when prompts are queued."""
    return np.maximum(tech(d, "cb_max_num_tokens") - b, 0.0)


def _open_system_s(
    d: Mapping[str, Any],
    hw: Mapping[str, np.ndarray],
    a: Arch,
    s: Serving,
    tp: Any,
    pp: Any,
    batch: Any,
    t_round: Any,
    slots: Any,
    *,
    tpot: bool = True,
) -> tuple[Any, Any]:
    """Poisson arrivals at a mean running batch ``batch`` (Little: the arrival rate is
    batch / (output_tokens x t_round)): (the SLO-percentile waits for a batch slot and for
    prefill, the SLO percentile over requests of TPOT; without ``tpot``, the mean step), or
    with ``latency_statistic: mean`` (the mean waits, the mean step).

    Two things move a request's steps off the mean: the running batch, Poisson-like around
    its mean (sd sqrt(batch)), for its whole life, through the round time's elasticity to the
    batch; and the prompts arriving step by step (batch / output_tokens a round, each its
    prompt-token time at the full-budget rate), independent from round to round
    (:func:`objectives.perf.queueing.tpot_quantile_s`).
    """
    S, out, q = s.input_tokens, s.output_tokens, s.slo_quantile
    hold = out * t_round
    # the prompt-token rate: rounds that fill their token budget beside the running batch
    t_full, _, n_micro = _round(d, hw, a, s, tp, pp, batch, True, full_budget=True)
    tokens = n_micro * _chunk(d, batch / n_micro)
    with np.errstate(divide="ignore"):
        service = S * t_full / tokens  # inf: no budget left beside the batch
    if s.latency_mean:  # means over requests: the mean step is the round time
        admit = admission_wait_mean_s(slots, batch, hold, s.output_tokens_cv)
        return admit + fcfs_wait_mean_s(batch / hold, service, s.input_tokens_cv), t_round
    admit = admission_wait_s(slots, batch, hold, s.output_tokens_cv, q)
    wait = admit + fcfs_wait_s(batch / hold, service, s.input_tokens_cv, q)
    if not tpot:
        return wait, t_round

    with np.errstate(divide="ignore", invalid="ignore"):
        per_token = np.maximum(t_full - _round(d, hw, a, s, tp, pp, batch, False)[0], 0.0)
        per_token = np.where(tokens > 0, per_token / tokens, 0.0)
    t_more = _round(d, hw, a, s, tp, pp, batch * 1.01, True)[0]
    elasticity = np.log(t_more / t_round) / np.log(1.01)
    common = t_round * elasticity / np.sqrt(np.maximum(batch, 1.0))
    step = per_token * S * np.sqrt(batch / out * (1 + np.square(s.input_tokens_cv)))
    return wait, tpot_quantile_s(t_round, common, step, out, s.output_tokens_cv, q)


def _bound(
    d: Mapping[str, Any],
    hw: Mapping[str, np.ndarray],
    a: Arch,
    s: Serving,
    tp: Any,
    pp: Any,
    cap: Any,
    mixed: bool,
) -> tuple[Any, dict[str, Any]]:
    """The largest batch the KV cache, the step budget and the caps allow (0: nothing fits)."""
    mem = _memory(d, hw, a, s, tp, pp)
    per_seq = 1 + s.input_tokens / s.output_tokens if mixed else 1.0
    # a prompt longer than the budget is chunked over several steps: at least one sequence
    budget = np.maximum(np.floor(tech(d, "cb_max_num_tokens") / per_seq), 1.0)
    b = np.minimum(_kv_batch(mem), budget)
    b = np.minimum(b, tech(d, "cb_max_batch"))
    b = np.minimum(b, cap)
    if s.max_batch is not None:
        b = np.minimum(b, s.max_batch)
    return np.floor(np.maximum(b, 0.0)), mem


def _batch_at_rate(round_s: Callable[[Any], Any], slots: Any, rate: Any, out: Any) -> Any:
    """The mean running batch at ``rate`` requests/s: each request holds a slot for its
    decode, so (Little) B = rate x output_tokens x t_round(B), solved on [0, slots]; ``slots``
    where no B below it holds the load (the round time grows with B, so the excess
    rate x out x t_round(B) - B changes sign once where the replica keeps up).

    The round time is nearly affine in B, with kinks where a roofline changes sides, so the
    Illinois variant of regula falsi (Dowell & Jarratt, BIT 11, 1971) finds the root in a dozen
    steps where bisection takes 40; it keeps the root bracketed, and a row it has not pinned
    to 1e-12 after ``_RATE_STEPS`` steps is bisected on its bracket. ``round_s(B)``: the
    round time at a running batch of B (at least one sequence)."""

    def excess(b: Any) -> Any:
        return rate * out * round_s(np.maximum(b, 1.0)) - b

    top = np.maximum(np.asarray(slots, dtype=float), 0.0)
    fb = excess(top)
    b = top + np.zeros_like(fb)
    over = fb >= 0
    lo = np.zeros_like(b)
    fa = excess(lo)  # > 0: a request's decode takes time
    x = lo
    for _ in range(_RATE_STEPS):
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(fb != fa, b - fb * (b - x) / (fb - fa), b)
        c = np.clip(c, np.minimum(x, b), np.maximum(x, b))
        fc = excess(c)
        flip = fc * fb < 0  # the root lies between c and b: b becomes the other end
        x, fa = np.where(flip, b, x), np.where(flip, fb, fa / 2)
        b, fb = c, fc
    done = over | (np.abs(fb) <= 1e-12 * np.maximum(b, 1.0))
    if not np.all(done):  # bisect what is left on its bracket [x, b]
        lo, hi = np.minimum(x, b), np.maximum(x, b)
        for _ in range(_RATE_BISECT):
            mid = (lo + hi) / 2
            up = excess(mid) > 0
            lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
        b = np.where(done, b, (lo + hi) / 2)
    return np.where(over, top, b)


def _solve(bmax: Any, ok: Any) -> Any:
    """Largest whole B in [1, bmax] with ok(B) (ok grows false with B); 1 if none."""
    lo = np.ones_like(bmax)
    good = ok(np.maximum(bmax, 1.0))
    hi = np.where(good, lo, np.maximum(bmax, 1.0))
    lo = np.where(good, np.maximum(bmax, 1.0), lo)
    top = float(np.max(hi)) if hi.size else 1.0
    for _ in range(int(np.ceil(np.log2(max(top, 1.0)))) + 1):
        if not (hi > lo).any():
            break  # every interval is one batch: further halvings change nothing
        mid = np.floor((lo + hi + 1) / 2)
        m_ok = ok(mid) & (mid <= hi)
        lo = np.where(m_ok, mid, lo)
        hi = np.where(m_ok, hi, np.minimum(hi, mid - 1))
        hi = np.maximum(hi, lo)
    return lo


def serve_continuous(
    d: Mapping[str, Any],
    hw: Mapping[str, np.ndarray],
    a: Arch,
    s: Serving,
    tp: np.ndarray,
    pp: np.ndarray,
    cap: Any,
    slo: tuple[Any, Any],
) -> dict[str, np.ndarray]:
    """``serve``'s figures for the continuous scheduler (see the module docstring)."""
    S, out = s.input_tokens, s.output_tokens
    peak = hw["tflops_per_gpu"] * 1e12
    disagg = s.disaggregated and s.phase == "serve"
    mixed = s.phase == "serve" and not disagg
    ttft_slo, tpot_slo = slo
    # ``cap`` is +inf where the batch is auto (solved); a finite value is a pinned batch
    pinned = bool(np.all(np.isfinite(cap)))
    t_one = _prefill_one(d, hw, a, s, tp, pp)
    load: dict[str, Any] = {}  # at a given arrival rate: the load beyond the capacity
    kv_move: Any = 0.0
    if disagg:  # the prompt's KV cache moves from the prefill to the decode group
        mem0 = _memory(d, hw, a, s, tp, pp)
        kv_move = S * mem0["kv_token"] / hw["p2p_bytes_per_s"] + _alpha(d)

    if s.phase == "prefill":
        # Prompts in token-budget chunks; tokens/s counts prompt tokens.
        bmax, mem = _bound(d, hw, a, s, tp, pp, cap, False)
        per_step = np.maximum(np.floor(tech(d, "cb_max_num_tokens") / S), 1.0)
        batch = cap if pinned else np.minimum(bmax, per_step)
        bt = np.maximum(batch, 1.0)
        n_micro = np.minimum(pp, bt)
        b = bt / n_micro
        pre = prefill_stage(d, hw, a, s, tp, pp, b, S)  # context-parallel when cp > 1
        e = 2.0
        hop = np.where(
            pp > 1, p2p_s(b * S * a.hidden * e, hw["p2p_bytes_per_s"], _alpha(d), hw), 0
        )
        cycle = (n_micro + pp - 1) * (pre.time_s + hop)
        tokens, flops, nbytes = bt * S, n_micro * pre.flops, n_micro * pre.hbm_bytes
        # TPOT as the static model reports it in this phase: a decode step of this batch
        ttft, tpot = t_one, _round(d, hw, a, s, tp, pp, bt, False)[0]
    else:
        queue = 0.0 if disagg else 1.0
        poisson = s.arrivals == "poisson"
        if pinned:  # a pinned running batch is served as given; it must fit the KV cache
            mem = _memory(d, hw, a, s, tp, pp)
            bmax = cap
        else:
            bmax, mem = _bound(d, hw, a, s, tp, pp, cap, mixed)
        # An open system's batch slots are the KV cache's and the caps' (a pinned batch is its
        # mean occupancy); the token budget is the prefill queue's to bound.
        slots = (
            _bound(d, hw, a, s, tp, pp, np.inf if pinned else cap, False)[0] if poisson else bmax
        )

        def ok(bb: Any) -> Any:
            t = _round(d, hw, a, s, tp, pp, bb, mixed)[0]
            good = np.ones(np.shape(t), dtype=bool)
            if poisson:  # stable queues, and the SLO percentiles within the SLOs
                wait, tpot_q = _open_system_s(
                    d, hw, a, s, tp, pp, bb, t, slots, tpot=tpot_slo is not None
                )
                good = good & np.isfinite(wait)
                if tpot_slo is not None:
                    good = good & (tpot_q <= tpot_slo)
                if ttft_slo is not None:
                    good = good & (t_one + t + wait <= ttft_slo)
                return good
            if tpot_slo is not None:
                good &= t <= tpot_slo
            if ttft_slo is not None:
                good &= (t_one + kv_move + queue * t if disagg else t_one + t) <= ttft_slo
            return good

        rate = s.arrival_rate_per_s if poisson else None
        if rate is not None:  # the load is given: Little's law sets the mean batch

            def round_s(bb: Any) -> Any:
                return _round(d, hw, a, s, tp, pp, bb, mixed)[0]

            batch = _batch_at_rate(round_s, slots, rate, out)
        else:
            solve = not pinned and (tpot_slo is not None or ttft_slo is not None or poisson)
            batch = _solve(slots if poisson else bmax, ok) if solve else bmax
        bt = batch if pinned else np.maximum(batch, 1.0)
        t_round, st, n_micro = _round(d, hw, a, s, tp, pp, bt, mixed)
        tokens, cycle = bt, t_round
        flops, nbytes = n_micro * st.flops, n_micro * st.hbm_bytes
        # (not disaggregated: t_one + t_round, the same as t_one + 0.0 + 1.0 x t_round)
        ttft = t_one + kv_move + queue * t_round if disagg else t_one + t_round
        tpot = t_round
        if poisson:  # the SLO percentiles (or means), as the SLOs bound them
            wait, tpot = _open_system_s(d, hw, a, s, tp, pp, bt, t_round, slots)
            # No stable queue at any batch (no slot fits, say): the TTFT without waits, and
            # the candidate counts as missing the SLOs (every metric stays finite).
            stable = np.isfinite(wait)
            ttft = ttft + np.where(stable, wait, 0.0)
            if rate is None and not np.all(stable):
                load["excess_load"] = np.where(stable, 0.0, 1.0)
        if rate is not None:
            # Below one request on average the engine idles between them: a mean batch of
            # B < 1 runs one-sequence steps a fraction B of the time.
            duty = np.minimum(batch, 1.0)
            tokens, flops, nbytes = rate * out * cycle, duty * flops, duty * nbytes
            # A replica that cannot keep up (no mean batch below the slots holds the load, or
            # its prompts arrive faster than it prefills them) serves its saturated capacity
            # while its queue grows without bound: it gets the saturated figures and an
            # ``excess_load`` (offered / served - 1) that ranks and counts as a missed SLO.
            over = ~(batch < slots) | ~np.isfinite(wait)
            excess = np.zeros(np.shape(over))
            if np.any(over):
                sat, st_s, nm_s = _round(d, hw, a, s, tp, pp, np.maximum(bmax, 1.0), mixed)
                batch = np.where(over, np.maximum(bmax, 1.0), batch)
                tokens, cycle = np.where(over, batch, tokens), np.where(over, sat, cycle)
                flops = np.where(over, nm_s * st_s.flops, flops)
                nbytes = np.where(over, nm_s * st_s.hbm_bytes, nbytes)
                ttft, tpot = np.where(over, t_one + sat, ttft), np.where(over, sat, tpot)
                excess = np.where(over, rate * out * cycle / tokens - 1.0, 0.0)
                excess = np.maximum(excess, np.where(over, 1e-9, 0.0))
            load["excess_load"] = excess
        if disagg:
            # One prefill group runs budget-sized chunks back to back, pipelined over pp.
            bp = np.maximum(tech(d, "cb_max_num_tokens") / S, 1.0)
            pre = stage_step(d, hw, a, s, tp, pp, bp, S, S * (S + 1) / 2, S)
            hop = np.where(
                pp > 1,
                p2p_s(bp * S * a.hidden * 2.0, hw["p2p_bytes_per_s"], _alpha(d), hw),
                0.0,
            )
            t_p = pre.time_s + hop  # per chunk of bp requests, pipeline full
            per_req_p = t_p / bp  # group-seconds of prefill per request
            per_req_d = t_round * out / bt  # group-seconds of decode per request
            share = per_req_p / (per_req_p + per_req_d)  # fraction of groups prefilling
            tokens, cycle = out, per_req_p + per_req_d  # out tokens per request-time
            util_p = pre.flops / (t_p * peak)
            util_d = flops / (t_round * peak)
            bw_p, bw_d = pre.hbm_bytes / t_p, nbytes / t_round
            flops = (share * util_p + (1 - share) * util_d) * cycle * peak
            nbytes = (share * bw_p + (1 - share) * bw_d) * cycle
    need = mem["fixed"] + np.maximum(batch, 1.0) * (mem["kv_seq"] / mem["frac"])
    return {
        **load,
        "replica_tokens_per_s": tokens / cycle,
        "ttft_s": ttft,
        "tpot_s": tpot,
        "step_s": cycle,
        "compute_utilization": flops / (cycle * peak),
        "hbm_bytes_per_s": nbytes / cycle,
        "mem_need_bytes": need,
        "mem_ratio": need / mem["capacity"],
        "kv_bytes": batch * mem["kv_seq"],
        "batch": batch,
    }
