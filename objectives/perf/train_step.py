"""The context of one training step (objectives/perf/training.py): the validated training
options of the workload and, per design, the parallel layout and the achieved rates every part of
the step (compute, memory, communication) reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from objectives._evaluator import tech
from objectives.errors import ContextError, unknown_name
from objectives.perf.model import Arch
from objectives.perf.serving import Serving

BF16 = 2.0  # activations, gradients and collectives stay in bf16 even with FP8 GEMMs
RECOMPUTE = ("auto", "selective", "full", "none")
#: Software stacks and the technology constants of their achieved rates: (BF16 GEMM efficiency,
#: attention efficiency, FP8 / BF16 GEMM speedup).
SOFTWARE = {
    "megatron": (
        "train_gemm_compute_efficiency",
        "train_attention_compute_efficiency",
        "train_fp8_gemm_speedup",
    ),
    "pytorch-fsdp": (
        "train_fsdp_gemm_compute_efficiency",
        "train_fsdp_attention_compute_efficiency",
        "train_fsdp_fp8_gemm_speedup",
    ),
}
#: Integer training options: (workload key, lowest, highest or None, default).
_INTEGERS = (
    ("zero_stage", 0, 3, 1),
    ("pp_interleave", 1, None, 1),
    ("cp", 1, None, 1),
    ("micro_batch", 1, None, 1),
    ("ep", 1, None, 1),
    ("lora_rank", 0, None, 0),
)


def options(wl: Mapping[str, Any]) -> dict[str, Any]:
    """The training options, validated: recompute mode, recompute_layers (None: by the mode),
    tp_comm_overlap, the software stack, and the integers of ``_INTEGERS`` (which may be per
    design)."""
    recompute = str(wl.get("recompute", "auto"))
    if recompute not in RECOMPUTE:
        raise unknown_name("workload.recompute", recompute, RECOMPUTE, what="recompute mode")
    software = str(wl.get("software", "megatron"))
    if software not in SOFTWARE:
        raise unknown_name("workload.software", software, tuple(SOFTWARE), what="software stack")
    out: dict[str, Any] = {"recompute": recompute, "software": software}
    for key, lo, hi, default in _INTEGERS:
        raw = wl.get(key, default)
        if key == "ep" and (raw is None or (isinstance(raw, str) and raw == "auto")):
            raw = default  # auto: searched, the candidate's degree (Step.ep) replaces this
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


@dataclass(frozen=True)
class Step:
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


def nvfp4_block_rate(d: Mapping[str, Any], bf16_rate: Any, fp8_rate: Any) -> Any:
    """Achieved rate of a transformer block's linear layers under NVIDIA's NVFP4 training
    recipe (Pretraining Large Language Models with NVFP4, arXiv 2509.25149; Transformer
    Engine's NVFP4BlockScaling): fprop, dgrad and wgrad GEMMs in NVFP4 at
    ``train_fp4_gemm_speedup`` x the FP8 rate, except the ``train_fp4_bf16_linear_fraction``
    of linear layers kept in BF16 (most of them the last blocks'). Attention's batched GEMMs,
    embeddings and the output head stay BF16 elsewhere in the step, as the recipe keeps them.
    The FLOPs split, so the times add: a harmonic blend of the two rates."""
    h = tech(d, "train_fp4_bf16_linear_fraction")
    fp4_rate = fp8_rate * tech(d, "train_fp4_gemm_speedup")
    return 1.0 / ((1.0 - h) / fp4_rate + h / bf16_rate)


def make_step(
    d: Mapping[str, Any], hw: Mapping[str, np.ndarray], a: Arch, s: Serving, layout: Any
) -> Step:
    """The step's context; ``layout`` = (tp, pp, data-parallel replicas)."""
    tp, pp, replicas = layout
    opt = options(d["workload"])
    cp, mbs = opt["cp"], opt["micro_batch"]
    moe = a.experts > 1
    fp8 = s.bytes_per_elem < BF16  # FP8 or FP4 linear layers (both cast their inputs)
    peak = hw["tflops_per_gpu"] * 1e12
    if s.fp4:  # the GPU's own dense BF16 rate (objectives.perf.hardware)
        bf16_peak = hw["bf16_tflops_per_gpu"] * 1e12
    else:
        bf16_peak = peak / tech(d, "fp8_flops_multiplier") if fp8 else peak
    gemm_eff, attn_eff, fp8_speedup = SOFTWARE[opt["software"]]
    gemm_rate = bf16_peak * tech(d, gemm_eff)
    block_rate = gemm_rate * (tech(d, fp8_speedup) if fp8 else 1.0)
    if s.fp4:
        block_rate = nvfp4_block_rate(d, gemm_rate, block_rate)
    return Step(
        d=d,
        hw=hw,
        a=a,
        opt=opt,
        tp=tp,
        pp=pp,
        cp=cp,
        mbs=mbs,
        ep=np.minimum(hw["ep"] if "ep" in hw else opt["ep"], a.experts) if moe else np.ones(1),
        shard=np.maximum(replicas, 1.0) * cp,
        moe=moe,
        fp8=fp8,
        seq=s.input_tokens,
        tokens=mbs * s.input_tokens / cp,
        n_l=np.ceil(a.layers / pp),
        peak=peak,
        gemm_rate=gemm_rate,
        block_rate=block_rate,
        attn_rate=bf16_peak * tech(d, attn_eff),
        hbm_rate=hw["hbm_tbps_per_gpu"] * 1e12 * tech(d, "train_elementwise_memory_efficiency"),
        alpha=tech(d, "collective_step_latency_s"),
        launch=np.where(tp > 1, tech(d, "collective_launch_s"), 0.0),
    )
