"""Context parallelism for long-prompt prefill (``workload.cp``; serving with phase: prefill).

A replica of tp x pp x cp GPUs splits every prompt of S tokens over cp groups of tp x pp GPUs
by sequence, load-balanced for the causal mask (ring attention: Liu, Zaharia and Abbeel, "Ring
Attention with Blockwise Transformers", ICLR 2024; Megatron-Core context parallelism): each
group runs the GEMMs of S / cp tokens and the attention of its queries against all earlier keys,
S (S + 1) / (2 cp) query-key pairs, while the groups pass their KV chunks around a ring, cp - 1
steps per layer. The ring's transfers overlap the attention they feed; only the part longer
than that attention is exposed. Each group keeps the KV cache of its own S / cp tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import tech
from objectives.perf import moe
from objectives.perf.model import Arch
from objectives.perf.serving import Serving, Step, stage_step


def prefill_stage(
    d: Mapping[str, Any],
    hw: Mapping[str, Any],
    a: Arch,
    s: Serving,
    tp: Any,
    pp: Any,
    b: Any,
    S: Any,
) -> Step:
    """One pipeline stage prefilling ``b`` prompts of ``S`` tokens, split over ``hw['cp']``
    context-parallel groups when it is given (else exactly ``stage_step``'s prefill)."""
    cp = hw.get("cp")
    if cp is None:
        return stage_step(d, hw, a, s, tp, pp, b, S, S * (S + 1) / 2, S)
    st = stage_step(d, hw, a, s, tp, pp, b, S / cp, S * (S + 1) / 2 / cp, S / cp)
    return Step(st.time_s + ring_exposed_s(d, hw, a, s, tp, pp, b, S, cp), st.flops, st.hbm_bytes)


def ring_exposed_s(
    d: Mapping[str, Any],
    hw: Mapping[str, Any],
    a: Arch,
    s: Serving,
    tp: Any,
    pp: Any,
    b: Any,
    S: Any,
    cp: Any,
) -> Any:
    """The ring's KV transfer time of one stage not hidden behind its attention: per layer,
    cp - 1 sends of a group's KV chunk (b S / cp tokens) against the attention compute of the
    group's queries (b S (S + 1) / (2 cp) query-key pairs)."""
    layers = np.ceil(a.layers / pp)
    chunk = b * S / cp * moe.kv_elems_per_gpu(a, tp) * s.kv_elem
    alpha = tech(d, "collective_step_latency_s")
    ring = (cp - 1) * (chunk / hw["p2p_bytes_per_s"] + alpha)
    peak = hw.get("attn_tflops_per_gpu", hw["tflops_per_gpu"]) * 1e12
    eff = tech(d, "cb_attention_compute_efficiency" if s.scheduler == "continuous" else
               "attention_compute_efficiency")  # fmt: skip
    heads = a.heads / tp
    attn = b * S * (S + 1) / (2 * cp) * a.attn_flops_per_key_head * heads / (peak * eff)
    return layers * np.maximum(ring - attn, 0.0)
