"""Workload fields (validated) and the parallelism / batch candidates to search over."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import tech
from objectives.errors import ContextError, unknown_name
from objectives.perf.model import Arch
from objectives.perf.serving import (
    ARRIVALS,
    DISPATCH,
    LATENCY_STATISTICS,
    PREFILL_BATCHING,
    SCHEDULERS,
    Serving,
)

#: Bytes per weight / activation / KV element. fp4 is NVFP4: 4-bit E2M1 values with one FP8
#: E4M3 scale per 16 (4.5 bits; NVIDIA Blackwell NVFP4, TensorRT Model Optimizer docs, M);
#: MXFP4 (one E8M0 scale per 32, OCP Microscaling Formats v1.0) is 4.25 bits.
PRECISION_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5625}
PHASES = ("serve", "prefill", "decode", "train")
KV_PRECISIONS = ("auto", *PRECISION_BYTES)


def _number(wl: Mapping[str, Any], key: str, *, zero_ok: bool) -> Any:
    """A positive (or, ``zero_ok``, non-negative) float, or a float array (a value per
    design) when the field is one."""
    raw: Any = wl.get(key)
    what = "a number >= 0" if zero_ok else "a positive number"
    try:
        if isinstance(raw, str | bytes) or np.ndim(raw) == 0:
            v: Any = float(raw)  # type: ignore[arg-type]
        else:
            v = np.asarray(raw, dtype=float)
    except (TypeError, ValueError):
        raise ContextError(f"workload.{key}", f"expected {what}, got {raw!r}") from None
    good = v >= 0 if zero_ok else v > 0
    if not np.all(good):
        bad = v if isinstance(v, float) else v[~good].flat[0]
        raise ContextError(f"workload.{key}", f"must be {'>=' if zero_ok else '>'} 0, got {bad}")
    return v


def _positive(wl: Mapping[str, Any], key: str) -> Any:
    return _number(wl, key, zero_ok=False)


def _non_negative(wl: Mapping[str, Any], key: str) -> Any:
    """0 when unset."""
    return 0.0 if wl.get(key) is None else _number(wl, key, zero_ok=True)


def _percentile(wl: Mapping[str, Any]) -> float:
    raw = wl.get("slo_percentile", 99)
    try:
        p = float(99 if raw is None else raw)
    except (TypeError, ValueError):
        p = float("nan")
    if not 0 < p < 100:
        msg = f"expected a percentile between 0 and 100 (exclusive), got {raw!r}"
        raise ContextError("workload.slo_percentile", msg)
    return p / 100.0


def _optional_slo(wl: Mapping[str, Any], key: str) -> Any:
    v = wl.get(key)
    return None if v is None else _positive(wl, key)


def _weight_precision(wl: Mapping[str, Any], precision: str, phase: str) -> str:
    """The stored width of the layers' linear weights: ``precision`` itself, or a narrower
    weight-only format (read and held at its width, computed at ``precision``'s rate)."""
    w = str(wl.get("weight_precision", "auto") or "auto")
    if w not in KV_PRECISIONS:
        raise unknown_name("workload.weight_precision", w, KV_PRECISIONS, what="weight precision")
    w = precision if w == "auto" else w
    if PRECISION_BYTES[w] > PRECISION_BYTES[precision]:
        narrower = [p for p in PRECISION_BYTES if PRECISION_BYTES[p] <= PRECISION_BYTES[precision]]
        msg = (
            f"weights are never wider than the {precision} the GEMMs run at: expected auto or "
            f"one of {', '.join(narrower)}, got {w!r}"
        )
        raise ContextError("workload.weight_precision", msg)
    if phase == "train" and w != precision:
        msg = (
            "weight-only quantization is a serving format (training updates the weights at "
            f"precision): use weight_precision: auto with phase: train, got {w!r}"
        )
        raise ContextError("workload.weight_precision", msg)
    return w


def _quantized_scope(wl: Mapping[str, Any]) -> str:
    """Which layer weights ``weight_precision`` narrows: all, or the MoE experts only."""
    scope = str(wl.get("quantized_weights", "all") or "all")
    if scope not in ("all", "experts"):
        raise unknown_name(
            "workload.quantized_weights", scope, ("all", "experts"), what="quantized weights"
        )
    return scope


def serving_of(wl: Mapping[str, Any]) -> tuple[Serving, tuple[Any, Any], str]:
    """The validated workload; numeric fields are floats, or arrays that vary per design."""
    precision = str(wl.get("precision"))
    if precision not in PRECISION_BYTES:
        raise unknown_name("workload.precision", precision, PRECISION_BYTES, what="precision")
    phase = str(wl.get("phase"))
    if phase not in PHASES:
        raise unknown_name("workload.phase", phase, PHASES, what="phase")
    lora = wl.get("lora_rank")
    if phase != "train" and lora is not None and np.any(np.asarray(lora, dtype=float) > 0):
        msg = f"LoRA is a way to train: set phase: train with it, or lora_rank: 0 (got {phase!r})"
        raise ContextError("workload.lora_rank", msg)
    software = str(wl.get("software", "megatron"))
    if phase == "train" and precision == "fp4" and software != "megatron":
        msg = (
            "fp4 training is modelled as NVIDIA's NVFP4 recipe in Transformer Engine "
            "(software: megatron); train this stack in bf16 or fp8"
        )
        raise ContextError("workload.precision", msg)
    scheduler = str(wl.get("scheduler", "continuous"))
    if scheduler not in SCHEDULERS:
        raise unknown_name("workload.scheduler", scheduler, SCHEDULERS, what="scheduler")
    kv = str(wl.get("kv_precision", "auto") or "auto")
    if kv not in KV_PRECISIONS:
        raise unknown_name("workload.kv_precision", kv, KV_PRECISIONS, what="KV precision")
    # auto: an FP8 KV cache with FP8 or FP4 weights (TensorRT-LLM's FP8 recipes; NVIDIA's
    # MLPerf v5.0 Blackwell configs run FP4 weights with an FP8 KV cache), else the weights'
    auto_kv = "fp8" if precision == "fp4" else precision
    weights = _weight_precision(wl, precision, phase)
    kv_bytes = PRECISION_BYTES[auto_kv if kv == "auto" else kv]
    disagg = wl.get("disaggregated", False)
    if disagg not in (True, False, None, 0, 1):
        raise ContextError("workload.disaggregated", f"expected true or false, got {disagg!r}")
    arrivals = str(wl.get("arrivals", "saturated") or "saturated")
    if arrivals not in ARRIVALS:
        raise unknown_name("workload.arrivals", arrivals, ARRIVALS, what="arrival process")
    if arrivals == "poisson" and (scheduler != "continuous" or phase != "serve" or disagg):
        msg = (
            "poisson arrivals are modelled for scheduler: continuous, phase: serve, "
            "disaggregated: false (or with prefill_pool/decode_pool: disaggregated pools); "
            "use arrivals: saturated otherwise"
        )
        raise ContextError("workload.arrivals", msg)
    rate = wl.get("arrival_rate_per_s")
    if rate is not None and arrivals != "poisson":
        msg = "an arrival rate is the rate of poisson arrivals: set arrivals: poisson with it"
        raise ContextError("workload.arrival_rate_per_s", msg)
    if rate is not None and not (isinstance(wl.get("batch"), str) and wl["batch"] == "auto"):
        msg = (
            f"expected 'auto' with an arrival_rate_per_s (the rate sets the running batch), "
            f"got {wl.get('batch')!r}"
        )
        raise ContextError("workload.batch", msg)
    if arrivals == "poisson" and rate is None and wl.get("ttft_slo_s") is None:
        msg = (
            "poisson arrivals need a TTFT SLO or an arrival_rate_per_s: an open system's "
            "throughput is the arrival rate whose TTFT percentile meets the SLO (without "
            "either, the saturated capacity at an unbounded wait)"
        )
        raise ContextError("workload.ttft_slo_s", msg)
    graphs = wl.get("cuda_graphs", True)
    if graphs not in (True, False, None, 0, 1) or isinstance(graphs, float):
        raise ContextError("workload.cuda_graphs", f"expected true or false, got {graphs!r}")
    dispatch = str(wl.get("dispatch", "random") or "random")
    if dispatch not in DISPATCH:
        raise unknown_name("workload.dispatch", dispatch, DISPATCH, what="dispatch policy")
    if dispatch != "random" and arrivals != "poisson":
        msg = (
            f"dispatch decides how poisson arrivals reach the replicas: set arrivals: poisson "
            f"with dispatch: {dispatch}, or dispatch: random"
        )
        raise ContextError("workload.dispatch", msg)
    batching = str(wl.get("prefill_batching", "mixed") or "mixed")
    if batching not in PREFILL_BATCHING:
        raise unknown_name(
            "workload.prefill_batching", batching, PREFILL_BATCHING, what="prefill batching"
        )
    if batching == "separate" and scheduler != "continuous":
        msg = (
            "prefill_batching: separate is a continuous-batching engine's choice; the static "
            "scheduler prefills the whole batch first (use prefill_batching: mixed)"
        )
        raise ContextError("workload.prefill_batching", msg)
    stat = str(wl.get("latency_statistic", "percentile") or "percentile")
    if stat not in LATENCY_STATISTICS:
        raise unknown_name(
            "workload.latency_statistic", stat, LATENCY_STATISTICS, what="latency statistic"
        )
    s = Serving(
        bytes_per_elem=PRECISION_BYTES[precision],
        input_tokens=_positive(wl, "input_tokens"),
        output_tokens=_positive(wl, "output_tokens"),
        phase=phase,
        kv_bytes_per_elem=kv_bytes,
        weight_bytes_per_elem=PRECISION_BYTES[weights],
        experts_only=_quantized_scope(wl) == "experts",
        scheduler=scheduler,
        disaggregated=bool(disagg),
        max_batch=None if wl.get("max_batch") is None else _positive(wl, "max_batch"),
        arrivals=arrivals,
        slo_quantile=_percentile(wl),
        input_tokens_cv=_non_negative(wl, "input_tokens_cv"),
        output_tokens_cv=_non_negative(wl, "output_tokens_cv"),
        arrival_rate_per_s=None if rate is None else _positive(wl, "arrival_rate_per_s"),
        latency_mean=stat == "mean",
        pooled=arrivals == "poisson" and dispatch == "shortest_queue",
        separate_prefill=batching == "separate",
        fp4=precision == "fp4",
        cuda_graphs=graphs is None or bool(graphs),
        **_mtp(wl, scheduler),
    )
    return s, (_optional_slo(wl, "ttft_slo_s"), _optional_slo(wl, "tpot_slo_s")), precision


def _mtp(wl: Mapping[str, Any], scheduler: str) -> dict[str, Any]:
    """Multi-token prediction: draft tokens per step and their acceptance (continuous only)."""
    raw = wl.get("mtp_tokens", 0) or 0
    try:
        n = float(raw)
    except (TypeError, ValueError):
        n = -1.0
    if n < 0 or n != int(n):
        raise ContextError("workload.mtp_tokens", f"expected a whole number >= 0, got {raw!r}")
    if n and scheduler != "continuous":
        msg = "multi-token prediction is modelled for the continuous scheduler"
        raise ContextError("workload.mtp_tokens", msg)
    p = wl.get("mtp_acceptance", 0.85)
    try:
        p = float(0.85 if p is None else p)
    except (TypeError, ValueError):
        p = -1.0
    if not 0 <= p <= 1:
        raise ContextError("workload.mtp_acceptance", f"expected a probability, got {p!r}")
    return {"mtp_tokens": int(n), "mtp_acceptance": p}


def _degrees(wl: Mapping[str, Any], key: str, choices: np.ndarray) -> np.ndarray:
    """``auto`` searches the preset's choices; an integer pins the degree."""
    v = wl.get(key, "auto")
    if v is None or (isinstance(v, str) and v == "auto"):
        return choices
    try:
        pinned = float(v)
    except (TypeError, ValueError):
        pinned = 0.0
    if pinned < 1 or pinned != int(pinned):
        raise ContextError(f"workload.{key}", f"expected 'auto' or a positive integer, got {v!r}")
    return np.array([pinned])


def ep_auto(wl: Mapping[str, Any]) -> bool:
    """``workload.ep`` is ``auto`` (the default): the search picks the expert parallelism."""
    v = wl.get("ep", "auto")
    return v is None or (isinstance(v, str) and v == "auto")


def candidates(d: Mapping[str, Any], wl: Mapping[str, Any], a: Arch) -> dict[str, np.ndarray]:
    """The (tp, pp, ep, batch) grid, flattened to one small candidate axis (ep: expert
    parallelism within the tp group, objectives.perf.moe; 1 for a dense model)."""
    tp = _degrees(wl, "tp", np.asarray(tech(d, "tp_choices"), dtype=float).reshape(-1))
    tp = tp[tp <= a.heads]  # a head is the smallest unit of attention work to split
    if tp.size == 0:
        raise ContextError("workload.tp", f"must not exceed the model's {a.heads} heads")
    pp = _degrees(wl, "pp", np.asarray(tech(d, "pp_choices"), dtype=float).reshape(-1))
    pp = pp[pp <= a.layers]
    if pp.size == 0:
        raise ContextError("workload.pp", f"must not exceed the model's {a.layers} layers")
    training = str(wl.get("phase")) == "train"
    # auto tries 1 (no expert parallelism) and every tensor-parallel degree tried
    ep_choices = np.union1d([1.0], np.asarray(tech(d, "tp_choices"), dtype=float).reshape(-1))
    if training:  # training spreads experts over the data-parallel group: searched when auto
        # (the candidate axis), else training.py reads workload.ep, which may vary per design
        auto = ep_auto(wl) and a.experts > 1
        ep = ep_choices[ep_choices <= a.experts] if auto else np.array([1.0])
    else:
        ep = _degrees(wl, "ep", ep_choices)
    if not training and a.experts <= 1:
        if not ep_auto(wl) and np.all(ep > 1):
            msg = "expert parallelism needs a mixture-of-experts model (this one is dense)"
            raise ContextError("workload.ep", msg)
        ep = np.array([1.0])
    ep = ep[ep <= a.experts]
    if ep.size == 0:
        raise ContextError("workload.ep", f"must not exceed the model's {a.experts} experts")
    b = wl.get("batch", "auto")
    continuous = str(wl.get("scheduler", "continuous")) == "continuous"
    continuous = continuous and str(wl.get("phase")) != "train"
    if isinstance(b, str) and b == "auto" and continuous:
        batch = np.array([np.inf])  # solved per design and candidate (no cap)
    elif isinstance(b, str) and b == "auto":
        batch = np.asarray(tech(d, "batch_choices"), dtype=float).reshape(-1)
    else:
        pinned = _positive(wl, "batch")
        # A batch that varies per design is no candidate axis: the evaluator reads it per design.
        batch = np.array([1.0 if np.ndim(pinned) else pinned])
    adp = _attention_dp(wl) if not training and a.experts > 1 else np.array([1.0])
    grid = np.meshgrid(tp, pp, ep, batch, adp, indexing="ij")
    names = ("tp", "pp", "ep", "batch", "adp")
    out = {k: g.reshape(-1) for k, g in zip(names, grid, strict=True)}
    if not training and (ep.size > 1 or ep[0] != 1):  # ep divides tp: experts over the TP group
        keep = out["tp"] % out["ep"] == 0
        if not keep.any():
            raise ContextError("workload.ep", "must divide a tensor-parallel degree tried (tp)")
        out = {k: v[keep] for k, v in out.items()}
    if adp.size > 1:  # with ep 1 there is no attention DP to choose: one candidate, not two
        keep = (out["ep"] > 1) | (out["adp"] == 1)
        out = {k: v[keep] for k, v in out.items()}
    # a replica's GPUs: tp x pp, times the context-parallel groups of a long-prompt prefill
    cp = 1.0 if training else _context_parallel(wl)
    out["group"] = out["tp"] * out["pp"] if cp == 1 else out["tp"] * out["pp"] * cp
    if cp != 1:
        out["cp"] = np.full(out["tp"].shape, cp)
    return out


ATTENTION_DP = ("auto", True, False)


def _attention_dp(wl: Mapping[str, Any]) -> np.ndarray:
    """Attention data parallelism with expert parallelism (1: each of the ep groups of tp / ep
    GPUs runs attention on its own sequences, tokens dispatched to their experts and back; 0:
    attention tensor-parallel over all tp GPUs, MoE outputs all-reduced): ``auto`` searches
    both, as TensorRT-LLM and SGLang serve DeepSeek either way (enable_attention_dp)."""
    v = wl.get("attention_dp", "auto")
    if v is None or (isinstance(v, str) and v == "auto"):
        return np.array([1.0, 0.0])
    if v in (True, False, 0, 1) and not isinstance(v, float):
        return np.array([1.0 if v else 0.0])
    raise ContextError("workload.attention_dp", f"expected auto, true or false, got {v!r}")


def _context_parallel(wl: Mapping[str, Any]) -> float:
    """Serving's context-parallel degree (objectives.perf.context): prefill only."""
    v = wl.get("cp", 1)
    try:
        cp = float(1 if v is None else v)
    except (TypeError, ValueError):
        cp = 0.0
    if cp < 1 or cp != int(cp):
        raise ContextError("workload.cp", f"expected a positive integer, got {v!r}")
    if cp > 1 and str(wl.get("phase")) != "prefill":
        msg = (
            "context parallelism is modelled for long-prompt prefill (phase: prefill) and "
            f"training; phase {wl.get('phase')!r} serves with cp 1"
        )
        raise ContextError("workload.cp", msg)
    return cp
