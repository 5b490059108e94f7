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
beside the running batch; with ``workload.dispatch: shortest_queue`` the requests join the
shortest of the n replicas' queues, taken as one central queue: M/G/(n x slots) for the slots,
M/G/n for the prefill, at n times one replica's load); ``ttft_s`` adds both waits at the SLO
percentile (:mod:`objectives.perf.queueing`), and ``tpot_s`` is the same percentile over
requests of the mean step each lives through (the running batch fluctuates, prompts arrive step
by step, short answers average over few steps). The batch solved is then the mean running
batch, and throughput the arrival rate whose percentiles meet the SLOs: an open system runs
below the saturated capacity by the margin its queues need. It needs a TTFT SLO (without one it
would run at the edge of stability, at an unbounded wait), or a given load: with
``workload.arrival_rate_per_s`` each replica receives that many requests per second, its mean
running batch follows from Little's law (a request holds a slot for its decode: B = rate x
output_tokens x round time at B, bisected), and ``ttft_s``/``tpot_s`` are the latencies at that
load; a replica that cannot keep up serves its saturated capacity (its queue grows without
bound: the saturated figures, counted as a missed SLO, and ``load_served_fraction`` < 1).
``workload.latency_statistic: mean`` reports (and bounds) the means over requests instead of
the SLO percentile, as serving benchmarks report them.

Disaggregated (Splitwise, Isca'24; DistServe, OSDI'24): a prefill pool runs prompts in
token-budget chunks, a decode pool runs decode-only steps, both of the same parallelism, their
sizes in the ratio that balances them (a fluid pool split): the per-group output rate is
out / (1/P + 1/D) with P, D the request rates of one prefill and one decode group.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from objectives.perf.context import prefill_stage
from objectives.perf.network import p2p_s
from objectives.perf.queueing import (
    admission_wait_mean_s,
    admission_wait_s,
    batch_at_rate,
    fcfs_wait_mean_s,
    fcfs_wait_s,
    pooled_fcfs_wait_s,
    solve_batch,
    tpot_quantile_s,
)
from objectives.perf.rounds import (
    _alpha,
    _bound,
    _chunk,
    _memory,
    _prefill_one,
    _round,
    prefill_step,
    step_tokens,
)
from objectives.perf.serving import Replica, stage_step


def _open_system_s(
    r: Replica,
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
    d, hw, a, s, tp, pp = r
    S, out, q = s.input_tokens, s.output_tokens, s.slo_quantile
    hold = out * t_round
    # the prompt-token rate: rounds that fill their token budget beside the running batch, or
    # (prefill_batching: separate) prefill-only steps of the whole budget
    if s.separate_prefill:
        t_full, _ = prefill_step(r)
        tokens = step_tokens(d, hw) + 0.0 * t_full
    else:
        t_full, _, n_micro = _round(r, batch, True, full_budget=True)
        tokens = n_micro * _chunk(d, hw, batch / n_micro)
    with np.errstate(divide="ignore"):
        service = S * t_full / tokens  # inf: no budget left beside the batch
    if s.pooled:  # join the shortest queue: one queue for the n replicas (docstring)
        n = hw["dispatch_replicas"]
        q_or_mean = None if s.latency_mean else q
        admit = (
            admission_wait_mean_s(n * slots, n * batch, hold, s.output_tokens_cv)
            if s.latency_mean
            else admission_wait_s(n * slots, n * batch, hold, s.output_tokens_cv, q)
        )
        wait = admit + pooled_fcfs_wait_s(n, n * batch / hold, service, s.input_tokens_cv,
                                          q_or_mean)  # fmt: skip
        if s.latency_mean:
            return wait, t_round
    elif s.latency_mean:  # means over requests: the mean step is the round time
        admit = admission_wait_mean_s(slots, batch, hold, s.output_tokens_cv)
        return admit + fcfs_wait_mean_s(batch / hold, service, s.input_tokens_cv), t_round
    else:
        admit = admission_wait_s(slots, batch, hold, s.output_tokens_cv, q)
        wait = admit + fcfs_wait_s(batch / hold, service, s.input_tokens_cv, q)
    if not tpot:
        return wait, t_round

    with np.errstate(divide="ignore", invalid="ignore"):
        # the step time one prompt token adds (separate: a share of a prefill-only step)
        extra = t_full if s.separate_prefill else t_full - _round(r, batch, False)[0]
        per_token = np.where(tokens > 0, np.maximum(extra, 0.0) / tokens, 0.0)
    t_more = _round(r, batch * 1.01, True)[0]
    elasticity = np.log(t_more / t_round) / np.log(1.01)
    common = t_round * elasticity / np.sqrt(np.maximum(batch, 1.0))
    step = per_token * S * np.sqrt(batch / out * (1 + np.square(s.input_tokens_cv)))
    return wait, tpot_quantile_s(t_round, common, step, out, s.output_tokens_cv, q)


@dataclass
class _Served:
    """The operating point of one replica, before it becomes ``serve``'s figures."""

    batch: Any
    tokens: Any  # output (or prompt) tokens of one cycle
    cycle: Any  # seconds of that cycle
    flops: Any
    nbytes: Any
    ttft: Any
    tpot: Any
    mem: dict[str, Any]
    load: dict[str, Any] = field(default_factory=dict)


def serve_continuous(r: Replica, cap: Any, slo: tuple[Any, Any]) -> dict[str, np.ndarray]:
    """``serve``'s figures for the continuous scheduler (see the module docstring)."""
    d, hw, a, s, tp, pp = r
    peak = hw["tflops_per_gpu"] * 1e12
    # ``cap`` is +inf where the batch is auto (solved); a finite value is a pinned batch
    pinned = bool(np.all(np.isfinite(cap)))
    t_one = _prefill_one(r)
    if s.phase == "prefill":
        o = _prefill_phase(r, cap, pinned, t_one)
    else:
        o = _running(r, cap, slo, pinned, t_one, peak)
    need = o.mem["fixed"] + np.maximum(o.batch, 1.0) * (o.mem["kv_seq"] / o.mem["frac"])
    return {
        **o.load,
        "replica_tokens_per_s": o.tokens / o.cycle,
        "ttft_s": o.ttft,
        "tpot_s": o.tpot,
        "step_s": o.cycle,
        "compute_utilization": o.flops / (o.cycle * peak),
        "hbm_bytes_per_s": o.nbytes / o.cycle,
        "mem_need_bytes": need,
        # need / supply, on a supply of at least one byte (no HBM: finite, far above 1)
        "mem_ratio": need / np.maximum(o.mem["capacity"], 1.0),
        "kv_bytes": o.batch * o.mem["kv_seq"],
        "batch": o.batch,
    }


def _prefill_phase(
    r: Replica,
    cap: Any,
    pinned: bool,
    t_one: Any,
) -> _Served:
    """Prompts in token-budget chunks; tokens/s counts prompt tokens."""
    d, hw, a, s, tp, pp = r
    S = s.input_tokens
    bmax, mem = _bound(r, cap, False)
    per_step = np.maximum(np.floor(step_tokens(d, hw) / S), 1.0)
    batch = cap if pinned else np.minimum(bmax, per_step)
    bt = np.maximum(batch, 1.0)
    n_micro = np.minimum(pp, bt)
    b = bt / n_micro
    pre = prefill_stage(d, hw, a, s, tp, pp, b, S)  # context-parallel when cp > 1
    e = 2.0
    hop = np.where(pp > 1, p2p_s(b * S * a.hidden * e, hw["p2p_bytes_per_s"], _alpha(d), hw), 0)
    cycle = (n_micro + pp - 1) * (pre.time_s + hop)
    # TPOT as the static model reports it in this phase: a decode step of this batch
    tpot = _round(r, bt, False)[0]
    return _Served(batch, bt * S, cycle, n_micro * pre.flops, n_micro * pre.hbm_bytes, t_one,
                   tpot, mem)  # fmt: skip


def _running(
    r: Replica,
    cap: Any,
    slo: tuple[Any, Any],
    pinned: bool,
    t_one: Any,
    peak: Any,
) -> _Served:
    """Decode (or serve) with a running batch: solve the batch, then time its round."""
    d, hw, a, s, tp, pp = r
    disagg = s.disaggregated and s.phase == "serve"
    mixed = s.phase == "serve" and not disagg
    kv_move: Any = 0.0
    if disagg:  # the prompt's KV cache moves from the prefill to the decode group
        mem0 = _memory(r)
        kv_move = s.input_tokens * mem0["kv_token"] / hw["p2p_bytes_per_s"] + _alpha(d)
    poisson = s.arrivals == "poisson"
    if pinned:  # a pinned running batch is served as given; it must fit the KV cache
        mem = _memory(r)
        bmax = cap
    else:
        bmax, mem = _bound(r, cap, mixed)
    # An open system's batch slots are the KV cache's and the caps' (a pinned batch is its
    # mean occupancy); the token budget is the prefill queue's to bound.
    slots = _bound(r, np.inf if pinned else cap, False)[0] if poisson else bmax
    ok = _meets_slos(r, slo, mixed, slots, t_one, kv_move if disagg else None)
    rate = s.arrival_rate_per_s if poisson else None
    if rate is not None:  # the load is given: Little's law sets the mean batch

        def round_s(bb: Any) -> Any:
            return _round(r, bb, mixed)[0]

        batch = batch_at_rate(round_s, slots, rate, s.output_tokens)
    else:
        solve = not pinned and (slo[1] is not None or slo[0] is not None or poisson)
        batch = solve_batch(slots if poisson else bmax, ok) if solve else bmax
    bt = batch if pinned else np.maximum(batch, 1.0)
    t_round, st, n_micro = _round(r, bt, mixed)
    # (not disaggregated: t_one + t_round, the same as t_one + 0.0 + 1.0 x t_round)
    ttft = t_one + kv_move + 0.0 * t_round if disagg else t_one + t_round
    o = _Served(batch, bt, t_round, n_micro * st.flops, n_micro * st.hbm_bytes, ttft, t_round,
                mem)  # fmt: skip
    wait = None
    if poisson:  # the SLO percentiles (or means), as the SLOs bound them
        wait, o.tpot = _open_system_s(r, bt, t_round, slots)
        # No stable queue at any batch (no slot fits, say): the TTFT without waits, and
        # the candidate counts as missing the SLOs (every metric stays finite).
        stable = np.isfinite(wait)
        o.ttft = o.ttft + np.where(stable, wait, 0.0)
        if rate is None and not np.all(stable):
            o.load["excess_load"] = np.where(stable, 0.0, 1.0)
    if rate is not None:
        assert wait is not None  # a given rate is a poisson workload's
        _at_rate(r, o, rate, bmax, slots, wait, t_one, mixed)
    if disagg:
        _disaggregated(r, o, t_round, bt, peak)
    return o


def _meets_slos(
    r: Replica,
    slo: tuple[Any, Any],
    mixed: bool,
    slots: Any,
    t_one: Any,
    kv_move: Any,
) -> Callable[[Any], Any]:
    """ok(B): the running batch B meets the SLOs (and, under poisson arrivals, its queues are
    stable); ``kv_move`` is None unless disaggregated."""
    d, hw, a, s, tp, pp = r
    ttft_slo, tpot_slo = slo
    poisson = s.arrivals == "poisson"

    def ok(bb: Any) -> Any:
        t = _round(r, bb, mixed)[0]
        good = np.ones(np.shape(t), dtype=bool)
        if poisson:  # stable queues, and the SLO percentiles within the SLOs
            wait, tpot_q = _open_system_s(r, bb, t, slots, tpot=tpot_slo is not None)
            good = good & np.isfinite(wait)
            if tpot_slo is not None:
                good = good & (tpot_q <= tpot_slo)
            if ttft_slo is not None:
                good = good & (t_one + t + wait <= ttft_slo)
            return good
        if tpot_slo is not None:
            good &= t <= tpot_slo
        if ttft_slo is not None:
            good &= (t_one + kv_move + 0.0 * t if kv_move is not None else t_one + t) <= ttft_slo
        return good

    return ok


def _at_rate(
    r: Replica,
    o: _Served,
    rate: Any,
    bmax: Any,
    slots: Any,
    wait: Any,
    t_one: Any,
    mixed: bool,
) -> None:
    """At a given arrival rate: the replica's rate is the offered one where it keeps up."""
    d, hw, a, s, tp, pp = r
    # Below one request on average the engine idles between them: a mean batch of
    # B < 1 runs one-sequence steps a fraction B of the time.
    duty = np.minimum(o.batch, 1.0)
    o.tokens, o.flops, o.nbytes = rate * s.output_tokens * o.cycle, duty * o.flops, duty * o.nbytes
    # A replica that cannot keep up (no mean batch below the slots holds the load, or
    # its prompts arrive faster than it prefills them) serves its saturated capacity
    # while its queue grows without bound: it gets the saturated figures and an
    # ``excess_load`` (offered / served - 1) that ranks and counts as a missed SLO.
    over = ~(o.batch < slots) | ~np.isfinite(wait)
    excess = np.zeros(np.shape(over))
    if np.any(over):
        sat, st_s, nm_s = _round(r, np.maximum(bmax, 1.0), mixed)
        o.batch = np.where(over, np.maximum(bmax, 1.0), o.batch)
        o.tokens, o.cycle = np.where(over, o.batch, o.tokens), np.where(over, sat, o.cycle)
        o.flops = np.where(over, nm_s * st_s.flops, o.flops)
        o.nbytes = np.where(over, nm_s * st_s.hbm_bytes, o.nbytes)
        o.ttft, o.tpot = np.where(over, t_one + sat, o.ttft), np.where(over, sat, o.tpot)
        excess = np.where(over, rate * s.output_tokens * o.cycle / o.tokens - 1.0, 0.0)
        excess = np.maximum(excess, np.where(over, 1e-9, 0.0))
    o.load["excess_load"] = excess


def _disaggregated(
    r: Replica,
    o: _Served,
    t_round: Any,
    bt: Any,
    peak: Any,
) -> None:
    """One prefill group runs budget-sized chunks back to back, pipelined over pp."""
    d, hw, a, s, tp, pp = r
    S, out = s.input_tokens, s.output_tokens
    bp = np.maximum(step_tokens(d, hw) / S, 1.0)
    pre = stage_step(d, hw, a, s, tp, pp, bp, S, S * (S + 1) / 2, S)
    hop = np.where(
        pp > 1, p2p_s(bp * S * a.hidden * 2.0, hw["p2p_bytes_per_s"], _alpha(d), hw), 0.0
    )
    t_p = pre.time_s + hop  # per chunk of bp requests, pipeline full
    per_req_p = t_p / bp  # group-seconds of prefill per request
    per_req_d = t_round * out / bt  # group-seconds of decode per request
    share = per_req_p / (per_req_p + per_req_d)  # fraction of groups prefilling
    o.tokens, o.cycle = out, per_req_p + per_req_d  # out tokens per request-time
    util_p = pre.flops / (t_p * peak)
    util_d = o.flops / (t_round * peak)
    bw_p, bw_d = pre.hbm_bytes / t_p, o.nbytes / t_round
    o.flops = (share * util_p + (1 - share) * util_d) * o.cycle * peak
    o.nbytes = (share * bw_p + (1 - share) * bw_d) * o.cycle
