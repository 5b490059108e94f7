"""Expert parallelism with and without attention data parallelism as separate choices, and the
engine limits held per batching rank under attention DP (TensorRT-LLM and SGLang schedule each
attention-DP rank alone: DeepSeek-R1 on 8 x B200 ran max_batch 896 per rank, 7,168 requests in
all, NVIDIA/TensorRT-LLM docs/source/blogs/Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md
@ 01c4ece9)."""

from __future__ import annotations

import pytest

from objectives.errors import ContextError
from objectives.perf import evaluate_perf
from objectives.presets import resolve_context

BASE = {"model": "deepseek-v3", "precision": "fp4", "batch": "auto", "input_tokens": 1024,
        "output_tokens": 2048, "tp": 8, "ep": 8}  # fmt: skip


def _run(tech: dict | None = None, **wl: object) -> dict:
    d = resolve_context({"gpu": "b200", "cluster_size": 8, "workload": {**BASE, **wl}})
    d["technology"].update(tech or {})
    return {k: float(v) for k, v in evaluate_perf(d).items()}


def test_auto_is_the_better_of_with_and_without():
    on, off, auto = _run(attention_dp=True), _run(attention_dp=False), _run()
    assert on["attention_dp"] == 1.0 and off["attention_dp"] == 0.0
    best = max(on["tokens_per_s"], off["tokens_per_s"])
    assert auto["tokens_per_s"] == pytest.approx(best, rel=1e-12)
    assert on["tokens_per_s"] != off["tokens_per_s"]


def test_the_batch_cap_holds_per_rank_with_attention_dp():
    cap = {"cb_max_batch": 64.0}
    on = _run(cap, attention_dp=True)
    off = _run(cap, attention_dp=False)
    assert off["batch"] <= 64.0
    assert 64.0 < on["batch"] <= 8 * 64.0  # 8 ranks of 64 each
    # the workload's max_batch is the engine's per-rank max_batch_size too
    assert _run(max_batch=32, attention_dp=True)["batch"] <= 8 * 32.0
    assert _run(max_batch=32, attention_dp=False)["batch"] <= 32.0


def test_without_attention_dp_the_kv_cache_is_not_split():
    """MLA's latent is replicated over the attention group (tp GPUs without DP, tp / ep with):
    at a pinned batch the KV part of memory is ep times larger without attention DP."""
    on = _run(attention_dp=True, batch=256)
    off = _run(attention_dp=False, batch=256)
    assert off["memory_used_fraction"] > on["memory_used_fraction"]


def test_dense_model_has_no_attention_dp_choice():
    d = resolve_context({"gpu": "h100-sxm", "workload": {"model": "llama3-70b", "batch": 64}})
    assert float(evaluate_perf(d)["attention_dp"]) == 0.0


def test_a_bad_value_is_refused():
    with pytest.raises(ContextError, match="attention_dp"):
        d = resolve_context({"gpu": "b200", "workload": BASE})
        d["workload"]["attention_dp"] = "sometimes"
        evaluate_perf(d)
