"""LoRA fine-tuning (``workload.lora_rank`` > 0 with ``phase: train``; Hu et al., ICLR 2022):
frozen base weights, rank-r adapters on every linear projection, gradients and optimizer state
for the adapters only. Checked against PEFT's published trainable-parameter count, by hand
against full training's memory, and as properties (faster than full training by at most the
frozen weight-gradient GEMMs, monotone in the rank, vectorized = scalar); refused in one line
where it is not modelled."""

from __future__ import annotations

import numpy as np
import pytest

from objectives._evaluator import tech
from objectives.errors import ContextError
from objectives.perf import evaluate_perf
from objectives.perf.model import arch_of
from objectives.presets import resolve_context
from tests.conftest import run_dse

WL = {
    "model": "llama3-8b",
    "phase": "train",
    "precision": "bf16",
    "batch": 64,
    "input_tokens": 2048,
    "tp": 1,
    "pp": 1,
    "zero_stage": 0,
    "recompute": "selective",
}


def _ctx(gpu: str = "b200", **wl: object) -> dict:
    return resolve_context({"gpu": gpu, "cluster_size": 8, "workload": {**WL, **wl}})


def _train(gpu: str = "b200", **wl: object) -> dict[str, np.ndarray]:
    d = _ctx(gpu, **wl)
    out = dict(evaluate_perf(d))
    usable = out["hbm_gb_per_gpu"] * 1e9 * tech(d, "hbm_usable_fraction")
    out["mem_need_bytes"] = out["memory_used_fraction"] * usable
    return out


def test_adapter_count_is_peft_all_linear_for_llama3_8b():
    """PEFT reports 41,943,040 trainable parameters for Llama-3-8B with r = 16 on all linear
    layers (target_modules="all-linear", the QLoRA recipe). By hand per layer and rank: q
    (4,096 + 4,096) + k and v (2 x (4,096 + 1,024)) + o (4,096 + 4,096) + gate, up, down
    (3 x (4,096 + 14,336)) = 81,920; x 16 x 32 layers."""
    a = arch_of(_ctx()["workload"]["model"])
    per_layer = (4096 + 4096) + 2 * (4096 + 8 * 128) + (4096 + 4096) + 3 * (4096 + 14336)
    assert a.lora_params_per_rank == per_layer == 81_920
    assert 16 * a.layers * a.lora_params_per_rank == 41_943_040


def test_memory_saved_is_the_frozen_state_by_hand():
    """ZeRO 0, one GPU, selective recomputation (the same activations): full training keeps
    weights, gradients and Adam state for every parameter; LoRA keeps the weights' bf16 copy
    and the whole state for the adapters only. The difference is N x (g + o) - A x (w + g + o)
    bytes, with N all parameters (embeddings included) and A the adapters."""
    d = _ctx()
    a = arch_of(d["workload"]["model"])
    w_b = tech(d, "train_weight_grad_bytes_per_param") - tech(d, "train_grad_bytes_per_param")
    g_b, o_b = tech(d, "train_grad_bytes_per_param"), tech(d, "train_optimizer_bytes_per_param")
    n = a.layers * a.layer_params + a.embedding_params
    adapters = 16 * a.layers * a.lora_params_per_rank
    full, lora = _train(), _train(lora_rank=16)
    assert float(full["model_fits"]) == float(lora["model_fits"]) == 1.0
    want = n * (g_b + o_b) - adapters * (w_b + g_b + o_b)
    got = float(full["mem_need_bytes"] - lora["mem_need_bytes"])
    assert got == pytest.approx(want, rel=1e-9)


def test_lora_is_faster_than_full_training_by_at_most_the_weight_gradients():
    """The frozen weights drop one of three GEMM passes and the optimizer and gradient traffic
    of all but the adapters; attention's backward stays. So LoRA is faster, by less than the
    3/2 of the GEMMs alone plus what the saved state traffic adds (bound 1.6x)."""
    full, lora = _train(), _train(lora_rank=16)
    ratio = float(lora["tokens_per_s"] / full["tokens_per_s"])
    assert 1.05 < ratio < 1.6


def test_a_larger_rank_costs_time_and_memory():
    ranks = [8, 64, 512]
    runs = [_train(lora_rank=r) for r in ranks]
    tps = [float(r["tokens_per_s"]) for r in runs]
    mem = [float(r["mem_need_bytes"]) for r in runs]
    assert tps[0] > tps[1] > tps[2]
    assert mem[0] < mem[1] < mem[2]


def test_zero3_still_gathers_the_frozen_weights():
    """With ZeRO-3 over 8 GPUs the frozen weights are sharded and gathered for every forward and
    backward: LoRA's step then keeps those all-gathers, and is no faster than with ZeRO-0
    replication of the same weights plus its saved gradient traffic (a property, not a figure)."""
    kw = {"zero_stage": 3, "lora_rank": 16}
    out = _train(**kw)
    assert float(out["model_fits"]) == 1.0
    z0 = _train(lora_rank=16)
    assert float(out["mem_need_bytes"]) < float(z0["mem_need_bytes"])


def test_zero3_lora_exposes_the_weight_gathers_by_hand():
    """As tests/objectives/perf/test_perf_training.py's ZeRO-3 case: 8 ranks at 360 GB/s, bf16
    weights whose all-gather takes 1 s. LoRA's micro-batch of 1.6 s is half forward, half
    backward (no weight gradients): each of 4 micro-batches exposes 1 - 0.8 s of its forward
    gather and 1 + 0 - 0.8 s of its backward gather + the adapters' (empty) reduce-scatter:
    4 x (0.2 + 0.2) = 1.6 s; the optimizer step streams the adapters only (none here)."""
    from types import SimpleNamespace

    from objectives.perf.training import _data_parallel

    d = resolve_context({"gpu": "h100-sxm", "cluster_size": 8})
    hw = {"fabric_code": np.array(0.0), "domain_gpus": np.array(8.0),
          "net_bytes_per_s": np.array(360e9), "dp_bytes_per_s": np.array(360e9),
          "scaleout_gbps_per_gpu": np.array(400.0)}  # fmt: skip
    params = 360e9 / (7 / 8) / 2
    st = SimpleNamespace(d=d, hw=hw, opt={"zero_stage": np.array(3.0)}, moe=False,
                         shard=np.array(8.0), tp=np.array(1.0), alpha=0.0,
                         hbm_rate=np.array(1e12))  # fmt: skip
    lora = (np.array(0.0), np.array(True))
    t_dp, t_opt = _data_parallel(st, params, 0.0, np.array(1.6), np.array(4.0), lora=lora)
    assert float(t_dp) == pytest.approx(4 * (0.2 + 0.2), rel=1e-9)
    assert float(t_opt) == 0.0


def test_vectorized_equals_scalar_over_ranks():
    ranks = np.array([0.0, 8.0, 64.0])
    d = resolve_context(
        {"gpu": "b200", "cluster_size": np.full(3, 8.0), "workload": {**WL, "lora_rank": ranks}}
    )
    vec = dict(evaluate_perf(d))
    vec["mem_need_bytes"] = vec["memory_used_fraction"]
    for i, r in enumerate(ranks):
        one = _train(lora_rank=int(r))
        one["mem_need_bytes"] = one["memory_used_fraction"]
        for k in ("tokens_per_s", "mem_need_bytes", "compute_utilization"):
            assert float(np.broadcast_to(vec[k], ranks.shape)[i]) == pytest.approx(
                float(one[k]), rel=1e-12
            ), k


def test_rank_zero_is_full_training():
    full, zero = _train(), _train(lora_rank=0)
    for k in ("tokens_per_s", "mem_need_bytes", "compute_utilization"):
        assert float(zero[k]) == float(full[k])


def test_refused_outside_training_and_on_moe_models():
    with pytest.raises(ContextError, match="LoRA is a way to train"):
        evaluate_perf(_ctx(phase="serve", lora_rank=16))
    with pytest.raises(ContextError, match="not for mixture-of-experts"):
        evaluate_perf(_ctx(model="mixtral-8x7b", tp=2, lora_rank=16))


@pytest.mark.slow
def test_cli_lora_while_serving_is_one_line():
    r = run_dse("evaluate", "spaces/h100.yaml", "--set", "workload.lora_rank=16")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "LoRA is a way to train" in lines[0], r.stderr
