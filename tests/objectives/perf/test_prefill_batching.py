"""``workload.prefill_batching``: prompts mixed into the decode steps (TensorRT-LLM, vLLM) or
prefilled in steps of their own (SGLang's default), and what that does to a mixture of
experts, whose prompt tokens route to most experts."""

from __future__ import annotations

import pytest

from objectives.errors import ContextError
from objectives.perf import evaluate_perf
from objectives.presets import resolve_context


def perf(model: str = "deepseek-v3", **wl: object) -> dict[str, float]:
    w = {"model": model, "precision": "fp8", "phase": "serve", "batch": 4, "tp": 8, "pp": 1,
         "input_tokens": 8192, "output_tokens": 1024, **wl}  # fmt: skip
    if model == "deepseek-v3":
        w.setdefault("ep", 8)
        w.setdefault("attention_dp", False)
    d = resolve_context({"gpu": "b200", "cluster_size": 8, "workload": w})
    return {k: float(v) for k, v in evaluate_perf(d).items()}


def _extra(batch: int, out: int = 1024, **wl: object) -> float:
    """TPOT of separate prefill steps beyond the decode-only step at the same batch."""
    sep = perf(batch=batch, output_tokens=out, prefill_batching="separate", **wl)["tpot_s"]
    return sep - perf(batch=batch, output_tokens=out, phase="decode", **wl)["tpot_s"]


def test_separate_steps_add_the_prompts_prefill_steps_by_hand():
    """A round of B decode tokens is followed, amortized, by B S / (L budget) prefill steps of
    one budget of prompt tokens each: the TPOT beyond the decode-only step is B x S / L x
    (time of one budget step) / budget, so it grows as B and falls as 1 / L."""
    per_seq = [_extra(b) / b for b in (2, 4, 16, 64)]
    for x in per_seq[1:]:
        assert x == pytest.approx(per_seq[0], rel=1e-9)
    assert _extra(8, out=2048) == pytest.approx(_extra(8, out=1024) / 2, rel=1e-9)


def test_a_moe_decode_step_reads_fewer_experts_when_prompts_are_apart():
    """DeepSeek-V3 at 4 sequences, 8k prompts: mixed, each step's ~32 prompt tokens route to
    most of the 256 experts; apart, the decode step reads the ~31 its 4 tokens reach."""
    mixed, sep = perf(), perf(prefill_batching="separate")
    dec = perf(phase="decode")["tpot_s"]
    assert sep["tpot_s"] < 0.5 * mixed["tpot_s"]
    assert dec < sep["tpot_s"] < 1.1 * dec


def test_a_dense_model_gains_nothing_from_separate_steps():
    """A dense model reads all its weights in every step either way; a prefill step of its own
    reads them once more, so separate steps are no faster."""
    mixed = perf("llama3-70b", batch=32)
    sep = perf("llama3-70b", batch=32, prefill_batching="separate")
    assert sep["tpot_s"] >= mixed["tpot_s"]


def test_unknown_prefill_batching_is_refused_with_the_choices():
    with pytest.raises(ContextError, match="mixed.*separate|separate.*mixed"):
        perf(prefill_batching="interleaved")


def test_separate_prefill_with_the_static_scheduler_is_refused():
    with pytest.raises(ContextError, match="static scheduler") as e:
        perf("llama3-70b", scheduler="static", prefill_batching="separate")
    assert e.value.path == "workload.prefill_batching"


def test_poisson_arrivals_prefill_in_budget_sized_steps_when_separate():
    """With prompts in steps of their own, a decode step carries only the batch, so the step
    budget (400 tokens here) no longer caps the batch at 400 / (1 + S / L) = 80 as it does a
    mixed step; the open system's prompts are served by budget-sized prefill-only steps."""

    def run(pb: str) -> dict[str, float]:
        d = resolve_context({"gpu": "h100-sxm", "cluster_size": 8,
                             "technology": {"cb_max_num_tokens": 400},
                             "workload": {"model": "llama3-70b", "precision": "fp8",
                                          "phase": "serve", "batch": "auto", "tp": 8, "pp": 1,
                                          "input_tokens": 1024, "output_tokens": 256,
                                          "arrivals": "poisson", "ttft_slo_s": 2.0,
                                          "prefill_batching": pb}})  # fmt: skip
        return {k: float(v) for k, v in evaluate_perf(d).items()}

    mixed, sep = run("mixed"), run("separate")
    assert mixed["batch"] <= 80 < sep["batch"]
    assert sep["slo_met"] == 1 and sep["ttft_s"] <= 2.0 + 1e-9
