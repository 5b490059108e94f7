"""NVFP4 training (``precision: fp4`` with ``phase: train``): the linear layers of the blocks in
NVFP4 except the recipe's BF16 share, attention, embeddings and head in BF16 (NVIDIA,
Pretraining Large Language Models with NVFP4, arXiv 2509.25149); refused in one line on a GPU
without FP4 tensor cores."""

from __future__ import annotations

import pytest

from objectives.errors import ContextError
from objectives.perf import evaluate_perf
from objectives.perf.train_step import nvfp4_block_rate
from objectives.presets import resolve_context
from tests.conftest import run_dse

WL = {
    "model": "llama3-70b",
    "phase": "train",
    "batch": 256,
    "input_tokens": 8192,
    "tp": 2,
    "pp": 4,
}  # fmt: skip  (Megatron-Bridge's B200 NVFP4 70B recipe: TP 2, PP 4)


def _train(gpu: str, precision: str, **tech: float) -> dict:
    d = resolve_context(
        {"gpu": gpu, "cluster_size": 64, "workload": {**WL, "precision": precision}}
    )
    d["technology"].update(tech)
    return {k: float(v) for k, v in evaluate_perf(d).items()}


def test_b200_trains_in_fp4_between_fp8_and_its_ideal():
    fp8, fp4 = _train("b200", "fp8"), _train("b200", "fp4")
    assert fp4["model_fits"] == 1.0
    assert fp4["tflops_per_gpu"] == pytest.approx(9000, rel=5e-3)  # dense NVFP4 peak
    assert fp8["tokens_per_s"] < fp4["tokens_per_s"] < 1.5 * fp8["tokens_per_s"]


def test_block_rate_by_hand():
    t = resolve_context({})["technology"]
    bf16, fp8 = 1000.0, 1736.0
    h, k = t["train_fp4_bf16_linear_fraction"], t["train_fp4_gemm_speedup"]
    want = 1 / ((1 - h) / (fp8 * k) + h / bf16)
    assert float(nvfp4_block_rate({"technology": t}, bf16, fp8)) == pytest.approx(want)
    # every linear layer in BF16: the BF16 rate; none: the NVFP4 rate
    t0 = {**t, "train_fp4_bf16_linear_fraction": 1.0}
    assert float(nvfp4_block_rate({"technology": t0}, bf16, fp8)) == pytest.approx(bf16)
    t1 = {**t, "train_fp4_bf16_linear_fraction": 0.0}
    assert float(nvfp4_block_rate({"technology": t1}, bf16, fp8)) == pytest.approx(fp8 * k)


def test_more_bf16_layers_train_slower():
    fast = _train("b200", "fp4", train_fp4_bf16_linear_fraction=0.0)
    slow = _train("b200", "fp4", train_fp4_bf16_linear_fraction=0.5)
    assert slow["tokens_per_s"] < fast["tokens_per_s"]


def test_fp4_training_refused_without_fp4_tensor_cores():
    with pytest.raises(ContextError, match="fp4 needs FP4 tensor cores.*'h100-sxm'"):
        _train("h100-sxm", "fp4")


def test_fp4_training_refused_on_the_fsdp_stack():
    wl = {**WL, "precision": "fp4", "software": "pytorch-fsdp"}
    with pytest.raises(ContextError, match="NVFP4 recipe"):
        evaluate_perf(resolve_context({"gpu": "b200", "workload": wl}))


@pytest.mark.slow
def test_cli_fp4_training_on_h100_is_one_line():
    r = run_dse(
        "evaluate", "spaces/h100.yaml", "--set", "workload.phase=train",
        "--set", "workload.precision=fp4", "--set", "workload.batch=256",
    )  # fmt: skip
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "fp4 needs FP4 tensor cores" in lines[0], r.stderr
