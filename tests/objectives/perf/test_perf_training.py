"""Training-step model: hand-computed activation memory, pipeline bubble and micro-batch costs,
the options (context parallelism, micro-batches, recompute, TP overlap), and the Llama 3 405B
pre-training runs (the 8,192-GPU run is a fit row of benchmarks/train_measurements.yaml, the
16,384-GPU run a validation row)."""

from __future__ import annotations

import numpy as np
import pytest

from objectives.errors import ContextError
from objectives.perf import evaluate_perf
from objectives.perf.training import activation_bytes_per_layer, bubble_fraction
from objectives.presets import resolve_context

# --- hand computations ---------------------------------------------------------------------


def test_activation_bytes_per_layer_match_korthikanti_by_hand():
    # GPT-3 175B layer (Korthikanti et al. 2022): s = 2048, h = 12288, a = 96, b = 1, t = 8.
    s, h, a, t = 2048, 12288, 96, 8
    sbh = s * h  # 25,165,824
    # No recomputation: s b h (34 + 5 a s / h) / t = 25,165,824 x (34 + 80) / 8
    assert activation_bytes_per_layer(s, h, a, t, "none") == pytest.approx(sbh * 114 / 8)
    assert activation_bytes_per_layer(s, h, a, t, "none") == pytest.approx(358_612_992)
    # Selective: the 5as/h attention-score term is gone: 34 s b h / t = 106,954,752 bytes
    assert activation_bytes_per_layer(s, h, a, t, "selective") == pytest.approx(106_954_752)
    # Full: only the layer input, 2 s b h / t = 6,291,456 bytes
    assert activation_bytes_per_layer(s, h, a, t, "full") == pytest.approx(6_291_456)
    # Without tensor parallelism nothing is divided
    assert activation_bytes_per_layer(s, h, a, 1, "selective") == pytest.approx(34 * sbh)


def test_activation_bytes_vectorize_over_designs():
    got = activation_bytes_per_layer(
        np.array([1024.0, 2048.0]), 4096, 32, np.array([1.0, 4.0]), "none"
    )
    want = [
        1024 * 4096 * (34 + 5 * 32 * 1024 / 4096),
        2048 * 4096 * (34 + 5 * 32 * 2048 / 4096) / 4,
    ]
    np.testing.assert_allclose(got, want)


def test_bubble_fraction_by_hand():
    assert bubble_fraction(16, 16) == pytest.approx(15 / 16)  # plain 1F1B
    assert bubble_fraction(16, 16, 4) == pytest.approx(15 / 64)  # interleaved, v = 4
    assert bubble_fraction(4, 32, 2) == pytest.approx(3 / 64)
    assert bubble_fraction(1, 8) == 0.0
    np.testing.assert_allclose(
        bubble_fraction(np.array([2, 8]), 8, np.array([1, 2])), [1 / 8, 7 / 16]
    )


# --- behaviour -----------------------------------------------------------------------------


def _train(cluster: int = 64, gpu: str = "h100-sxm", **wl) -> dict[str, float]:
    base = {"model": "llama3-8b", "phase": "train", "precision": "bf16", "input_tokens": 4096,
            "tp": 8, "pp": 4, "batch": 16}  # fmt: skip
    d = resolve_context({"gpu": gpu, "cluster_size": cluster, "workload": {**base, **wl}})
    return {k: float(v) for k, v in evaluate_perf(d).items()}


def test_step_time_follows_the_bubble_formula():
    # The only difference between these is the bubble: (m + (p-1)/v) micro-batch times, and
    # the p2p sends (2v per micro-batch), small next to a micro-batch inside one NVLink node.
    one, two = (_train(8, tp=2, pp_interleave=v) for v in (1, 2))
    ratio = (16 + 3 / 1) / (16 + 3 / 2)
    assert one["step_s"] / two["step_s"] == pytest.approx(ratio, rel=0.01)


def test_interleaving_is_capped_at_one_layer_per_virtual_stage():
    # llama3-8b: 32 layers over pp 4 = 8 per stage, so v = 64 behaves as v = 8
    assert _train(pp_interleave=64)["step_s"] == pytest.approx(_train(pp_interleave=8)["step_s"])


def test_software_stack_picks_its_own_rates():
    """workload.software: pytorch-fsdp runs the step at the train_fsdp_* rates, nothing else
    changes: it equals the Megatron step with those values put in the Megatron constants."""
    fsdp = {"train_fsdp_gemm_compute_efficiency": 0.5, "train_fsdp_attention_compute_efficiency":
            0.15, "train_fsdp_fp8_gemm_speedup": 1.2}  # fmt: skip
    same = dict(zip(("train_gemm_compute_efficiency", "train_attention_compute_efficiency",
                     "train_fp8_gemm_speedup"), fsdp.values(), strict=True))  # fmt: skip
    for precision in ("bf16", "fp8"):
        wl = {"model": "llama3-8b", "phase": "train", "precision": precision, "tp": 1, "pp": 1,
              "input_tokens": 4096, "batch": 16, "zero_stage": 3}  # fmt: skip

        def step(software: str, tech: dict[str, float], wl: dict = wl) -> float:
            spec = {"gpu": "h100-sxm", "cluster_size": 8, "technology": tech,
                    "workload": {**wl, "software": software}}  # fmt: skip
            return float(evaluate_perf(resolve_context(spec))["step_s"])

        assert step("pytorch-fsdp", fsdp) == pytest.approx(step("megatron", same), rel=1e-12)
        assert step("pytorch-fsdp", fsdp) > 1.2 * step("megatron", fsdp)  # 0.5 vs 0.775 GEMMs


def test_recompute_modes_order_memory_and_speed():
    sel, full, auto = (_train(recompute=r) for r in ("selective", "full", "auto"))
    assert full["memory_used_fraction"] < sel["memory_used_fraction"]
    assert full["mfu"] < sel["mfu"]  # one more forward pass: about 3/4 of the MFU
    assert full["mfu"] / sel["mfu"] == pytest.approx(0.75, abs=0.05)
    assert auto["mfu"] == pytest.approx(sel["mfu"])  # fits without recomputing layers


def test_zero_stages_shard_memory():
    mem = [_train(zero_stage=z, recompute="selective")["memory_used_fraction"] for z in range(4)]
    assert mem[0] > mem[1] > mem[2] > mem[3]


def test_bad_training_options_raise_context_errors():
    with pytest.raises(ContextError) as e:
        _train(recompute="sometimes")
    assert e.value.path == "workload.recompute"
    with pytest.raises(ContextError) as e:
        _train(zero_stage=4)
    assert e.value.path == "workload.zero_stage"
    with pytest.raises(ContextError) as e:
        _train(pp_interleave=0)
    assert e.value.path == "workload.pp_interleave"


def test_training_options_vary_per_design():
    d = resolve_context({"gpu": "h100-sxm", "cluster_size": 64, "workload": {
        "model": "llama3-8b", "phase": "train", "precision": "bf16", "input_tokens": 4096,
        "tp": 8, "pp": 4, "batch": 16, "pp_interleave": np.array([1.0, 2.0]),
        "zero_stage": np.array([1.0, 1.0])}})  # fmt: skip
    both = evaluate_perf(d)["step_s"]
    assert both[0] == pytest.approx(_train(pp_interleave=1)["step_s"])
    assert both[1] == pytest.approx(_train(pp_interleave=2)["step_s"])


def test_micro_batches_amortize_the_fixed_cost_of_a_layer_by_hand():
    """One GPU (no TP, PP or DP traffic), batch 4: two micro-batches of 2 instead of four of 1
    save 2 x L x (the fp32 gradient accumulation, 8 B per parameter through HBM at 80 % of
    3.35 TB/s, + 20 us per layer): 2 x 32 x (8 x 218,103,808 / 2.68e12 + 2e-5) s = 42.9 ms."""
    one, two = (
        _train(1, tp=1, pp=1, batch=4, micro_batch=m, recompute="selective") for m in (1, 2)
    )
    layer_params = 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336
    fixed = 32 * (8 * layer_params / (3.35e12 * 0.8) + 2e-5)
    assert one["step_s"] - two["step_s"] == pytest.approx(2 * fixed, rel=1e-6)


def test_data_parallel_gathers_go_hierarchically_across_domains_by_hand():
    """64 ranks holding the same weights, TP 1, 8-GPU NVLink domains: 8 GB gathered first over
    the 8 members of a domain at 360 GB/s, then across the 8 domains with each member's NIC
    (400 Gb/s x network_efficiency) carrying its 1/8: 7/8 x 8e9 / 360e9 + 7/8 x 1e9 / bw."""
    from objectives._evaluator import tech
    from objectives.perf.training import _dp_gather_s

    d = resolve_context({"gpu": "h100-sxm", "cluster_size": 64})
    nic = 400e9 / 8 * tech(d, "network_efficiency")
    hw = {"fabric_code": np.array(0.0), "domain_gpus": np.array(8.0),
          "net_bytes_per_s": np.array(360e9), "dp_bytes_per_s": np.array(nic),
          "scaleout_gbps_per_gpu": np.array(400.0)}  # fmt: skip
    got = _dp_gather_s(d, hw, 8e9, np.array(64.0), np.array(1.0), 0.0)
    assert float(got) == pytest.approx(7 / 8 * 8e9 / 360e9 + 7 / 8 * 1e9 / nic, rel=1e-12)
    # the flat ring over the NICs would take 63/64 x 8e9 / bw: ~5x longer
    assert float(got) < 63 / 64 * 8e9 / nic / 4
    # inside one domain nothing changes: the flat collective on the fabric's DP bandwidth
    hw_in = {**hw, "dp_bytes_per_s": np.array(360e9)}
    inside = _dp_gather_s(d, hw_in, 8e9, np.array(8.0), np.array(1.0), 0.0)
    assert float(inside) == pytest.approx(7 / 8 * 8e9 / 360e9, rel=1e-12)


def test_zero3_backward_gather_and_reduce_scatter_share_the_backward_by_hand():
    """8 ranks in one NVLink domain at 360 GB/s; bf16 weights of 360e9 / (7/8) / 2 parameters
    per GPU, so one all-gather (or reduce-scatter) takes 7/8 x bytes / 360e9 = 1 s. A
    micro-batch of 2.4 s: forward 0.8 s, backward 1.6 s. ZeRO-3, 4 micro-batches: each exposes
    1 - 0.8 s of its forward gather and 2 x 1 - 1.6 s of its backward gather + reduce-scatter,
    4 x (0.2 + 0.4) = 2.4 s; ZeRO-1 exposes the one weight gather's 0.2 s (its gradient
    reduce-scatter hides under the last backward)."""
    from types import SimpleNamespace

    from objectives.perf.training import _data_parallel

    d = resolve_context({"gpu": "h100-sxm", "cluster_size": 8})
    hw = {"fabric_code": np.array(0.0), "domain_gpus": np.array(8.0),
          "net_bytes_per_s": np.array(360e9), "dp_bytes_per_s": np.array(360e9),
          "scaleout_gbps_per_gpu": np.array(400.0)}  # fmt: skip
    params = 360e9 / (7 / 8) / 2

    def t_dp(zero: int) -> float:
        st = SimpleNamespace(d=d, hw=hw, opt={"zero_stage": np.array(float(zero))}, moe=False,
                             shard=np.array(8.0), tp=np.array(1.0), alpha=0.0,
                             hbm_rate=np.array(1e12))  # fmt: skip
        return float(_data_parallel(st, params, 0.0, np.array(2.4), np.array(4.0))[0])

    assert t_dp(3) == pytest.approx(4 * (0.2 + 0.4), rel=1e-9)
    assert t_dp(1) == pytest.approx(0.2, rel=1e-9)


def test_context_parallelism_splits_the_sequence_over_the_replica():
    base = {"tp": 2, "pp": 1, "batch": 4, "input_tokens": 16384, "recompute": "selective"}
    one, two = _train(16, cp=1, **base), _train(16, cp=2, **base)
    assert one["gpus_per_replica"] == 2 and two["gpus_per_replica"] == 4
    assert two["replicas"] == one["replicas"] / 2
    # each GPU keeps half the activations of a sequence (and the same sharded state)
    assert two["memory_used_fraction"] < one["memory_used_fraction"]
    # inside the NVLink domain the ring's KV exchange hides behind attention: per-GPU work and
    # hence tokens/s per GPU barely move (the replica has twice the GPUs, half the replicas)
    assert two["tokens_per_s"] == pytest.approx(one["tokens_per_s"], rel=0.05)


def test_fp8_speeds_up_only_the_linear_layers():
    bf16, fp8 = (_train(precision=p, recompute="selective") for p in ("bf16", "fp8"))
    ratio = bf16["step_s"] / fp8["step_s"]
    assert 1.0 < ratio < 1.7359  # attention, the LM head and the memory-bound work stay bf16
    assert fp8["mfu"] < bf16["mfu"]  # MFU counts the FP8 peak, twice the BF16 one


def test_tp_overlap_hides_collectives_behind_the_gemms():
    plain, hidden = (_train(tp_comm_overlap=o, recompute="selective") for o in (False, True))
    assert hidden["step_s"] < plain["step_s"]
    one = {"tp": 1, "pp": 4, "recompute": "selective"}  # TP 1: nothing to hide
    assert _train(8, tp_comm_overlap=True, **one)["step_s"] == _train(8, **one)["step_s"]


def test_recompute_layers_pins_the_recomputed_layers():
    sel, full = _train(recompute="selective"), _train(recompute="full")
    assert _train(recompute="selective", recompute_layers=0)["step_s"] == pytest.approx(
        sel["step_s"]
    )
    assert _train(recompute="auto", recompute_layers=8)["step_s"] == pytest.approx(full["step_s"])
    some = _train(recompute="selective", recompute_layers=3)
    assert sel["step_s"] < some["step_s"] < full["step_s"]
    assert (
        full["memory_used_fraction"] < some["memory_used_fraction"] < sel["memory_used_fraction"]
    )


def _moe(ep: int, **wl) -> dict[str, float]:
    base = {"model": "mixtral-8x7b", "input_tokens": 4096, "batch": 4, "micro_batch": 2,
            "tp": 1, "pp": 1, "ep": ep, "recompute": "selective"}  # fmt: skip
    return _train(64, **{**base, **wl})


def test_new_training_options_vary_per_design():
    cp, mb = np.array([1.0, 2.0, 4.0]), np.array([1.0, 2.0, 1.0])
    d = resolve_context({"gpu": "h100-sxm", "cluster_size": 64, "workload": {
        "model": "mixtral-8x7b", "phase": "train", "precision": "bf16", "input_tokens": 4096,
        "batch": 8, "tp": 2, "pp": 1, "recompute": "selective", "cp": cp, "micro_batch": mb,
        "ep": np.array([1.0, 4.0, 8.0])}})  # fmt: skip
    got = evaluate_perf(d)
    for i, ep in enumerate((1, 4, 8)):
        one = _moe(ep, tp=2, batch=8, micro_batch=int(mb[i]), cp=int(cp[i]), precision="bf16")
        for k in ("step_s", "tokens_per_s", "gpus_per_replica", "memory_used_fraction", "ep"):
            assert float(got[k][i]) == pytest.approx(one[k], rel=1e-12), (k, i)


def test_expert_parallelism_spreads_the_experts_and_pays_all_to_alls():
    one, eight = _moe(1), _moe(8)
    assert eight["ep"] == 8 and one["ep"] == 1
    assert eight["gpus_per_replica"] == one["gpus_per_replica"] == 1  # EP lives inside DP
    # Mixtral keeps 8 x 176M expert weights per layer: 1/8 of them per GPU with EP 8
    assert eight["memory_used_fraction"] < 0.5 * one["memory_used_fraction"]
    assert _moe(16)["step_s"] == pytest.approx(eight["step_s"])  # capped at the 8 experts
    dense = {"model": "llama3-8b", "tp": 2, "pp": 1, "recompute": "selective"}
    assert _train(8, ep=4, **dense)["step_s"] == _train(8, **dense)["step_s"]
    assert _train(8, ep=4, **dense)["ep"] == 1


def test_moe_layers_pay_their_grouped_gemm_and_fixed_overhead_by_hand():
    """Mixtral (32 MoE layers, top-2 of 8 experts of 3 x 4096 x 14336) on 64 H100s, EP 8:
    halving the grouped-GEMM efficiency from 1 adds, per layer and micro-batch, the routed
    experts' forward + backward FLOPs 6 x 8192 tokens x 2 x 176,160,768 at the BF16 GEMM rate
    (989.4 TFLOPS x 0.775) once more; each millisecond of layer overhead adds 32 ms per
    micro-batch. Two micro-batches per step."""
    tech = {"train_moe_gemm_efficiency": 1.0, "train_moe_layer_overhead_s": 0.0}

    def step(**t: float) -> float:
        d = resolve_context({"gpu": "h100-sxm", "cluster_size": 64, "technology": {**tech, **t},
                             "workload": {"model": "mixtral-8x7b", "phase": "train",
                                          "precision": "bf16", "input_tokens": 4096, "batch": 4,
                                          "micro_batch": 2, "tp": 1, "pp": 1, "ep": 8,
                                          "recompute": "selective"}})  # fmt: skip
        return float(evaluate_perf(d)["step_s"])

    base = step()
    routed = 6 * 8192 * 2 * (3 * 4096 * 14336) / (989.4e12 * 0.775)
    assert step(train_moe_gemm_efficiency=0.5) - base == pytest.approx(2 * 32 * routed, rel=1e-3)
    assert step(train_moe_layer_overhead_s=1e-3) - base == pytest.approx(2 * 32 * 1e-3, rel=1e-6)


def test_expert_state_shards_over_the_expert_data_parallel_group_by_hand():
    """Mixtral on 64 GPUs (TP = PP = 1: DP 64) with EP 8: ZeRO-1 shards the dense weights'
    fp32 optimizer state (12 B per parameter; attention 41,943,040 + router 32,768 per layer x
    32, + the 131,072,000 embedding) over all 64 ranks, but each GPU's 8 / 8 experts only over
    the 64 / 8 = 8 ranks that hold the same experts (Megatron-Core's expert-data-parallel
    group), so against ZeRO-0 it saves 12 x (1 - 1/64) and 12 x (1 - 1/8) bytes of them."""
    z0, z1 = (_moe(8, batch=2, zero_stage=z)["memory_used_fraction"] for z in (0, 1))
    d = resolve_context({"gpu": "h100-sxm", "workload": {"model": "mixtral-8x7b"}})
    usable = 80e9 * float(d["technology"]["hbm_usable_fraction"])
    dense = 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 4096 * 8) + 32000 * 4096
    saved = (z0 - z1) * usable
    experts = 32 * 8 / 8 * 3 * 4096 * 14336
    want = dense * 12 * (1 - 1 / 64) + experts * 12 * (1 - 1 / 8)
    assert saved == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("cp", 0),
        ("micro_batch", 1.5),
        ("ep", 0),
        ("recompute_layers", -1),
        ("tp_comm_overlap", "yes"),
        ("software", "deepspeed"),
    ],
)
def test_bad_new_training_options_name_their_field(field, bad):
    with pytest.raises(ContextError) as e:
        _train(**{field: bad})
    assert e.value.path == f"workload.{field}"


# --- prediction: Llama 3 405B pre-training -------------------------------------------------
# "The Llama 3 Herd of Models" (Meta, 2024), Table 4: 16,384 H100, TP 8, CP 1, PP 16, DP 128,
# sequence 8,192, 16 sequences per DP group (16M tokens per batch), BF16: 400 TFLOPs/GPU,
# 41 % MFU; 8,192 H100 with DP 64 and 32 sequences per group: 430 TFLOPs/GPU, 43 % MFU.
# Meta uses an interleaved pipeline schedule (s3.3.2) but does not publish the number of
# virtual stages v; every v from 2 to 8 must land within 15 % (plain 1F1B, v = 1, does not).
# The 8,192-GPU run (with v = 4) is one of the four rows the two fitted training constants were
# fitted on; the 16,384-GPU run is not.
# Meta counts MFU as in Chowdhery et al. (PaLM); ours counts causal attention FLOPs, which
# differ by a few percent at this sequence length.


def _llama3(gpus: int, per_dp: int, v: int, **wl) -> dict[str, float]:
    base = {"model": "llama3-405b", "phase": "train", "precision": "bf16", "input_tokens": 8192,
            "batch": per_dp, "tp": 8, "pp": 16, "pp_interleave": v}  # fmt: skip
    d = resolve_context({"gpu": "h100-sxm", "cluster_size": gpus, "workload": {**base, **wl}})
    return {k: float(x) for k, x in evaluate_perf(d).items()}


@pytest.mark.parametrize("v", [2, 4, 8])
@pytest.mark.parametrize(("gpus", "per_dp", "published"), [(16384, 16, 0.41), (8192, 32, 0.43)])
def test_llama3_405b_mfu_within_15_percent_of_published(gpus, per_dp, published, v):
    r = _llama3(gpus, per_dp, v)
    assert r["model_fits"] == 1 and r["memory_used_fraction"] <= 1
    assert r["replicas"] == gpus // 128 and r["tp"] == 8 and r["pp"] == 16
    assert r["mfu"] == pytest.approx(published, rel=0.15)
    tokens_per_step = r["replicas"] * per_dp * 8192
    assert tokens_per_step == 16 * 1024 * 1024


def test_llama3_405b_trends_match_meta():
    # Halving the per-group batch (8k -> 16k GPUs at 16M tokens) costs MFU, as Meta reports.
    for v in (2, 4, 8):
        assert _llama3(8192, 32, v)["mfu"] > _llama3(16384, 16, v)["mfu"]
    # Plain 1F1B with 16 micro-batches on 16 stages idles ~half the time: well below Meta.
    assert _llama3(16384, 16, 1)["mfu"] < 0.85 * 0.41
    # Selective recomputation alone does not fit 80 GB; full recomputation fits but is slow.
    assert _llama3(16384, 16, 4, recompute="selective")["model_fits"] == 0
    full = _llama3(16384, 16, 4, recompute="full")
    assert full["model_fits"] == 1 and full["mfu"] < _llama3(16384, 16, 4)["mfu"]
