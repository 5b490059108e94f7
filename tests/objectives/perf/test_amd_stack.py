"""vLLM on ROCm as its own serving stack: one factor on the GEMM efficiencies
(cb_stack_gemm_efficiency_rocm_vllm), fitted on the one declared AMD FIT row (MLPerf v5.1
MI300X llama2-70b Offline), the other AMD rows validation (benchmarks/validate_perf.py)."""

from __future__ import annotations

import pytest

from benchmarks import validate_perf as vp
from objectives.perf import evaluate_perf
from objectives.presets import resolve_context


def test_the_amd_split_is_one_fit_row_per_new_constant():
    amd = [r for r in vp.ROWS if r.section == "amd"]
    assert [(r.row, r.src) for r in amd if r.split == "fit"] == list(vp.AMD_FIT) == [(301, "M51A")]
    assert all(r.src in vp.ROCM_SOURCES for r in amd)


def test_fit_row_reproduced_and_the_factor_is_below_tensorrt_llm():
    (row,) = (r for r in vp.ROWS if (r.row, r.src) in vp.AMD_FIT)
    assert vp.predicted(row, vp.evaluate(row)) == pytest.approx(row.value, rel=0.01)
    t = resolve_context({})["technology"]
    assert t["cb_stack_gemm_efficiency"] == 1.0  # TensorRT-LLM, where cb_* are fitted
    assert 0.3 < t["cb_stack_gemm_efficiency_rocm_vllm"] < 1.0


def test_the_stack_factor_scales_gemm_bound_throughput():
    def tps(stack: float) -> float:
        wl = {"model": "llama2-70b", "batch": "auto", "tp": 1}
        d = resolve_context({"gpu": "mi300x", "cluster_size": 8, "workload": wl})
        d["technology"]["cb_stack_gemm_efficiency"] = stack
        return float(evaluate_perf(d)["tokens_per_s"])

    base, slow = tps(1.0), tps(0.5)
    assert slow < base
    assert slow > 0.5 * base  # attention and overheads do not scale with it
