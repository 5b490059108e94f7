"""One replica's throughput and latency: the scheduler's figures for every candidate.

``serve`` dispatches on ``workload.scheduler``: the continuous scheduler
(:mod:`objectives.perf.continuous`) or the static one here, where the whole batch is prefilled,
then decoded (TensorRT-LLM 0.5 gptSessionBenchmark), with the step timing of
:mod:`objectives.perf.serving`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from objectives._evaluator import tech
from objectives.perf import pool
from objectives.perf.context import prefill_stage
from objectives.perf.continuous import serve_continuous
from objectives.perf.network import p2p_s, plus_where
from objectives.perf.serving import Replica, memory_need_bytes, stage_step


def serve(
    r: Replica, batch: np.ndarray, slo: tuple[Any, Any] = (None, None)
) -> dict[str, np.ndarray]:
    """Throughput and latency of one replica for every (design, candidate) pair.

    Besides the figures, ``mem_ratio`` (HBM need / what the engine may use; > 1 does not fit)
    and ``batch`` (the batch served: ``batch`` itself when static, the solved one otherwise).
    """
    d, hw, a, s, tp, pp = r
    if s.scheduler == "continuous":
        return serve_continuous(r, batch, slo)
    n_micro = np.minimum(pp, batch)  # micro-batches in flight through the pipeline
    b = batch / n_micro
    e = s.bytes_per_elem
    S, out = s.input_tokens, s.output_tokens
    net_bw, alpha = hw["p2p_bytes_per_s"], tech(d, "collective_step_latency_s")

    pre = prefill_stage(d, hw, a, s, tp, pp, b, S)
    hop_pre = p2p_s(b * S * a.hidden * e, net_bw, alpha, hw)
    t_prefill = (n_micro + pp - 1) * plus_where(pre.time_s, pp > 1, hop_pre)

    # Decode: the context grows by one per step, attention cost is linear in it, so the mean
    # step is the step at the mean context.
    ctx = S + out / 2
    dec = stage_step(d, hw, a, s, tp, pp, b, 1.0, ctx, ctx)
    hop_dec = p2p_s(b * a.hidden * e, net_bw, alpha, hw)
    t_round = pp * plus_where(dec.time_s, pp > 1, hop_dec)
    steps = np.maximum(out - 1.0, 0.0)

    if s.phase == "prefill":
        cycle, tokens = t_prefill, batch * S
        flops, nbytes = n_micro * pre.flops, n_micro * pre.hbm_bytes
    elif s.phase == "decode":
        cycle, tokens = t_round, batch
        flops, nbytes = n_micro * dec.flops, n_micro * dec.hbm_bytes
    else:  # serve: static batch, prefill then all decode steps (TensorRT-LLM benchmark style)
        cycle = t_prefill + steps * t_round
        tokens = batch * out
        flops = n_micro * (pre.flops + steps * dec.flops)
        nbytes = n_micro * (pre.hbm_bytes + steps * dec.hbm_bytes)
    mem = memory_need_bytes(a, s, tp, pp, batch, b, hw.get("ep"), hw.get("cp"), hw.get("attn_dp"))
    usable = hw["hbm_gb_per_gpu"] * 1e9 * tech(d, "hbm_usable_fraction")
    if "pool_weights" in hw:  # weights staged from / KV room in a memory pool
        mem, usable = pool.static_memory(r, mem, usable)
    return {
        "replica_tokens_per_s": tokens / cycle,
        "ttft_s": t_prefill,
        "tpot_s": t_round,
        "step_s": cycle,
        "compute_utilization": flops / (cycle * hw["tflops_per_gpu"] * 1e12),
        "hbm_bytes_per_s": nbytes / cycle,
        "mem_need_bytes": mem["total"],
        "mem_ratio": mem["total"] / usable,
        "kv_bytes": mem["kv"],
        "batch": batch + 0.0 * cycle,
    }
