"""Perf model: hand-computed counts, published figures, behaviour and vectorization."""

from __future__ import annotations

import math

import numpy as np
import pytest

from objectives.errors import ContextError
from objectives.perf import METRICS, evaluate_perf
from objectives.perf.model import arch_of
from objectives.perf.network import allreduce_s
from objectives.perf.serving import Serving, stage_step
from objectives.presets import model_presets, resolve_context

TINY = {
    "layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "ffn": 128, "vocab": 100,
    "ffn_matrices": 3, "experts": 1, "experts_per_token": 1,
}  # fmt: skip


def ctx(gpu: str = "h100-sxm", **kw) -> dict:
    wl = kw.pop("workload", {})
    return resolve_context({"gpu": gpu, "workload": wl, **kw})


def perf(gpu: str = "h100-sxm", **kw) -> dict[str, float]:
    return {k: float(v) for k, v in evaluate_perf(ctx(gpu, **kw)).items()}


# --- architecture arithmetic ---------------------------------------------------------------


def test_tiny_model_parameter_count_by_hand():
    a = arch_of(TINY)
    # head_dim 16; Q,O 64x64 each; K,V 64x(2x16) each; SwiGLU 3 x 64 x 128
    assert a.attn_params == 2 * 4096 + 2 * 2048 == 12288
    assert a.layer_params == 12288 + 24576 == 36864
    assert a.total_params == 2 * 36864 + 2 * 6400 == 86528


@pytest.mark.parametrize(
    ("name", "published_b"),
    [("llama3-8b", 8.03), ("llama3-70b", 70.6), ("llama2-70b", 68.98), ("llama3-405b", 405.9),
     ("gpt3-175b", 175.0), ("mixtral-8x7b", 46.7)],
)  # fmt: skip
def test_parameter_counts_match_published(name, published_b):
    total = arch_of(model_presets()[name]).total_params / 1e9
    assert total == pytest.approx(published_b, rel=0.01)


def test_mixtral_active_parameters_match_published():
    a = arch_of(model_presets()["mixtral-8x7b"])
    active = a.layers * a.layer_active_params + 2 * a.embedding_params
    assert active / 1e9 == pytest.approx(12.9, rel=0.02)  # Mixtral paper: 12.9B active


def test_decode_layer_flops_and_bytes_by_hand():
    d = ctx()
    a = arch_of(TINY)
    s = Serving(bytes_per_elem=1.0, input_tokens=10, output_tokens=1, phase="decode")
    hw = {"tflops_per_gpu": np.array(1.0), "hbm_tbps_per_gpu": np.array(1.0),
          "net_bytes_per_s": np.array(1e9)}  # fmt: skip
    st = stage_step(d, hw, a, s, np.array(1.0), np.array(1.0), np.array(2.0), 1.0, 10.0, 10.0)
    # per layer: GEMMs 2 x 2 tokens x 36864 = 147456; attention 4 x 16 x 4 heads x 2 seq x 10
    # = 5120; LM head 2 x 2 x 64 x 100 = 25600
    assert float(st.flops) == 2 * (147456 + 5120) + 25600
    # bytes per layer: weights 36864 + activations 2 x (8x64 + 3x128) = 1792;
    # KV read 2 seq x 10 x 2 (K,V) x 2 heads x 16 = 1280; q,k,v,o 2 x (2x4 + 2x2) x 16 = 384;
    # LM head 6400
    assert float(st.hbm_bytes) == 2 * (36864 + 1792 + 1280 + 384) + 6400


def test_prefill_attention_grows_quadratically_with_context():
    d = ctx()
    a = arch_of(TINY)
    s = Serving(1.0, 100, 1, "prefill")
    hw = {"tflops_per_gpu": np.array(1.0), "hbm_tbps_per_gpu": np.array(1.0),
          "net_bytes_per_s": np.array(1e9)}  # fmt: skip
    one = np.array(1.0)

    def attn(n):
        st = stage_step(d, hw, a, s, one, one, one, n, n * (n + 1) / 2, n)
        gemm_and_head = 2 * (2 * n * 36864) + 2 * 64 * 100
        return float(st.flops) - gemm_and_head

    assert attn(200) / attn(100) == pytest.approx(200 * 201 / (100 * 101))


def test_moe_streams_only_routed_experts():
    mix = arch_of(model_presets()["mixtral-8x7b"])
    d = ctx()
    s = Serving(1.0, 10, 1, "decode")
    hw = {"tflops_per_gpu": np.array(1e3), "hbm_tbps_per_gpu": np.array(1.0),
          "net_bytes_per_s": np.array(1e11)}  # fmt: skip
    one = np.array(1.0)
    st = stage_step(d, hw, mix, s, one, one, one, 1.0, 0.0, 0.0)
    # one token routed to top-2 of 8: expected distinct experts 8 x (1 - 6/8) = 2
    per_layer_w = mix.attn_params + mix.router_params + 2 * mix.expert_params
    head = mix.embedding_params
    act = 8 * mix.hidden + 3 * 2 * mix.ffn
    qkvo = (2 * 32 + 2 * 8) * 128
    assert float(st.hbm_bytes) == pytest.approx(mix.layers * (per_layer_w + act + qkvo) + head)


# --- hardware ------------------------------------------------------------------------------


def test_h100_peak_figures_reproduce_datasheet():
    bf16 = perf(workload={"precision": "bf16"})
    fp8 = perf(workload={"precision": "fp8"})
    assert bf16["tflops_per_gpu"] == pytest.approx(989.4, rel=1e-3)
    assert fp8["tflops_per_gpu"] == pytest.approx(1978.9, rel=1e-3)
    assert fp8["hbm_tbps_per_gpu"] == pytest.approx(3.35)
    assert fp8["hbm_gb_per_gpu"] == pytest.approx(80)
    assert fp8["net_gbps_per_gpu"] == 18 * 2 * 100  # 450 GB/s per direction
    assert fp8["package_power_w"] == pytest.approx(700, rel=0.01)  # H100 SXM TDP


def test_h100_shoreline_by_hand():
    r = perf()
    # aspect 1.21: short edge sqrt(814 / 1.21) = 25.94 mm, long edge 1.21 x that = 31.38 mm
    short = math.sqrt(814 / 1.21)
    perimeter = 2 * (short + 1.21 * short)
    used = 5 * 11 + 2 * 3600 / 250  # HBM beachfront + both directions of NVLink at 250 Gb/s/mm
    assert r["die_perimeter_mm"] == pytest.approx(perimeter)
    assert r["shoreline_used_fraction"] == pytest.approx(used / perimeter)
    assert r["shoreline_used_fraction"] < 1


def test_too_many_stacks_on_small_die_oversubscribe_shoreline():
    r = perf(die_area_mm2=100, hbm_stacks_per_die=8)
    assert r["shoreline_used_fraction"] > 1  # 88 mm of HBM alone > 40 mm perimeter
    cpo = perf(die_area_mm2=200, hbm_stacks_per_die=2, link_type="cpo")
    elec = perf(die_area_mm2=200, hbm_stacks_per_die=2, link_type="electrical")
    assert cpo["shoreline_used_fraction"] < elec["shoreline_used_fraction"]


def test_elongated_die_has_more_edge():
    assert perf(die_aspect_ratio=2.0)["die_perimeter_mm"] > perf()["die_perimeter_mm"]


def test_cooling_limits_clock_by_dvfs():
    air = perf(clock_ghz=2.4, cooling="air")
    liquid = perf(clock_ghz=2.4, cooling="liquid")
    assert air["clock_eff_ghz"] < 2.4
    assert air["power_density_w_per_mm2"] == pytest.approx(0.75, rel=1e-6)  # air limit
    assert liquid["clock_eff_ghz"] > air["clock_eff_ghz"]
    assert perf(clock_ghz=1.83)["clock_eff_ghz"] == pytest.approx(1.83)  # H100 not throttled


def test_power_rises_superlinearly_with_clock():
    lo, hi = perf(clock_ghz=1.4, cooling="liquid"), perf(clock_ghz=2.0, cooling="liquid")
    ratio_p = (hi["power_density_w_per_mm2"]) / lo["power_density_w_per_mm2"]
    assert ratio_p > 2.0 / 1.4  # V rises with f, so P grows faster than f


# --- network -------------------------------------------------------------------------------


def test_allreduce_ring_and_tree_by_hand():
    bw, alpha = np.array(100e9), np.array(1e-6)
    # large message: ring 2 x 7/8 x 1 GB / 100 GB/s + 14 us = 17.514 ms; tree 20 ms + 6 us
    assert float(allreduce_s(np.array(1e9), np.array(8.0), bw, alpha)) == pytest.approx(
        2 * 7 / 8 * 1e9 / 100e9 + 14e-6
    )
    # small message: tree 2 x 1 kB / bw + 2 x 3 x 1 us wins over ring's 14 us
    assert float(allreduce_s(np.array(1e3), np.array(8.0), bw, alpha)) == pytest.approx(
        2 * 1e3 / 100e9 + 6e-6
    )
    assert float(allreduce_s(np.array(1e9), np.array(1.0), bw, alpha)) == 0.0


def test_electrical_groups_beyond_the_node_are_slower_than_optical():
    wl = {"model": "llama3-405b", "precision": "bf16", "tp": 16, "pp": 1}
    elec = perf(cluster_size=16, workload=wl)
    cpo = perf(cluster_size=16, link_type="cpo", workload=wl)
    assert cpo["tokens_per_s"] > elec["tokens_per_s"]


# --- serving behaviour ---------------------------------------------------------------------


def test_decode_throughput_rises_with_hbm_bandwidth():
    wl = {"phase": "decode", "tp": 4, "pp": 1, "batch": 16}
    lo = perf(cluster_size=4, hbm_tbps_per_stack=0.67, workload=wl)
    hi = perf(cluster_size=4, hbm_tbps_per_stack=1.2, workload=wl)
    assert hi["tokens_per_s"] > 1.3 * lo["tokens_per_s"]


def test_prefill_throughput_rises_with_flops_not_bandwidth():
    wl = {"phase": "prefill", "tp": 4, "pp": 1, "batch": 16}
    base = perf(cluster_size=4, workload=wl)
    more_flops = perf(cluster_size=4, clock_ghz=2.1, cooling="liquid", workload=wl)
    more_bw = perf(cluster_size=4, hbm_tbps_per_stack=1.2, workload=wl)
    assert more_flops["tokens_per_s"] > 1.08 * base["tokens_per_s"]
    assert more_bw["tokens_per_s"] == pytest.approx(base["tokens_per_s"], rel=0.02)


def test_model_that_does_not_fit_reports_zero_not_nan():
    r = perf(cluster_size=4, workload={"model": "llama3-405b", "precision": "bf16"})
    assert r["model_fits"] == 0  # 810 GB of weights > 4 x 72 GB usable
    assert r["tokens_per_s"] == 0 and r["tokens_per_joule"] == 0 and r["replicas"] == 0
    assert all(math.isfinite(v) for v in r.values())
    assert (
        perf(cluster_size=8, workload={"model": "llama3-405b", "precision": "fp8"})["model_fits"]
        == 1
    )


def test_parallelism_search_picks_smallest_group_that_fits():
    # Llama 2 70B FP8 (69 GB) + KV of 64 x 2176 tokens: too big for one H100, fits on two.
    st = {"model": "llama2-70b", "scheduler": "static"}
    r = perf(cluster_size=8, workload=st)
    assert (r["tp"], r["pp"], r["replicas"], r["gpus_per_replica"]) == (2, 1, 4, 2)
    h200 = perf("h200", cluster_size=8, workload=st)
    assert h200["gpus_per_replica"] == 1 and h200["replicas"] == 8


def test_replicas_floor_cluster_size():
    r = perf(cluster_size=13, workload={"model": "llama3-8b", "tp": 2, "pp": 1})
    assert r["replicas"] == 6


def test_memory_accounting_by_hand_for_a_gqa_free_model():
    wl = {"model": "gpt3-175b", "tp": 8, "pp": 1, "scheduler": "static"}
    one = perf(cluster_size=8, workload={**wl, "batch": 1})
    many = perf(cluster_size=8, workload={**wl, "batch": 64})
    # GPT-3 has no GQA: 96 KV heads / 8 GPUs = 12 per GPU; per token per GPU
    # 96 layers x 2 (K,V) x 12 x 128 x 1 byte = 294,912 B over 2048 + 128 tokens;
    # prefill activations 2048 x (12288 + 2 x 49152 / 8) bytes per sequence.
    extra = 63 * (2176 * 294_912 + 2048 * 24_576)
    usable = 80e9 * 0.9
    assert (many["memory_used_fraction"] - one["memory_used_fraction"]) * usable == (
        pytest.approx(extra)
    )
    # weights alone: (96 x 1,811,939,328 + 2 x 50257 x 12288) / 8 bytes
    weights = (96 * 1_811_939_328 + 2 * 50257 * 12288) / 8
    assert one["memory_used_fraction"] * usable == pytest.approx(
        weights + 2176 * 294_912 + 2048 * 24_576
    )


def test_mixtral_reports_expert_parallelism():
    # plain tensor parallelism unless workload.ep asks for experts spread over the group
    r = perf(cluster_size=8, workload={"model": "mixtral-8x7b", "tp": 4, "pp": 1})
    assert r["ep"] == 1
    r = perf(cluster_size=8, workload={"model": "mixtral-8x7b", "tp": 4, "pp": 1, "ep": 4})
    assert r["ep"] == 4
    assert perf(cluster_size=8, workload={"model": "llama3-8b"})["ep"] == 1


def test_auto_batch_respects_tpot_slo():
    free = perf(cluster_size=8, workload={"batch": "auto", "tp": 8, "pp": 1})
    slo = perf(cluster_size=8, workload={"batch": "auto", "tp": 8, "pp": 1, "tpot_slo_s": 0.03})
    assert slo["tpot_s"] <= 0.03 and slo["slo_met"] == 1
    assert slo["batch"] < free["batch"] and slo["tokens_per_s"] < free["tokens_per_s"]
    never = perf(cluster_size=8, workload={"batch": "auto", "tpot_slo_s": 1e-6})
    assert never["slo_met"] == 0


def test_power_bookkeeping():
    r = perf(cluster_size=16)
    assert r["tokens_per_joule"] == pytest.approx(r["tokens_per_s"] / r["cluster_power_w"])
    assert r["facility_power_w"] == pytest.approx(1.2 * r["cluster_power_w"])
    assert 0 < r["gpu_power_w"] < r["package_power_w"]
    # 16 GPUs x (GPU + host and network share: (217 + 12.5) W per 700 W of TDP)
    share = (0.310 + 0.0179) * r["package_power_w"]
    assert share == pytest.approx(229.5, rel=0.01)
    # NVSwitch power: 3.6 Tb/s per direction through one switch chip at 9.8 pJ/bit
    switch = 3.6e12 * 9.8e-12
    assert r["cluster_power_w"] == pytest.approx(
        16 * (r["gpu_power_w"] + share + switch), rel=1e-9
    )


def test_cpo_draws_less_link_power_than_pluggables():
    plug = perf(link_type="pluggable")
    cpo = perf(link_type="cpo")
    # Link power = per-direction bandwidth x pJ/bit (a port's pJ/bit covers transmit and
    # receive): 3.6 Tb/s x (18.75 - 5.6) pJ/bit / 0.92 VRM
    assert plug["package_power_w"] - cpo["package_power_w"] == pytest.approx(
        3.6e12 * (18.75 - 5.6) * 1e-12 / 0.92
    )


# --- contract ------------------------------------------------------------------------------


def _grid() -> dict:
    d = ctx(workload={"model": "mixtral-8x7b", "batch": "auto"})
    d["die_area_mm2"] = np.array([100.0, 300.0, 858.0])[:, None, None]
    d["hbm_stacks_per_die"] = np.array([1.0, 4.0, 8.0])[None, :, None]
    d["link_type"] = np.array(["electrical", "pluggable", "cpo"])[None, None, :]
    d["cluster_size"] = np.array([1.0, 7.0, 64.0])[:, None, None]
    return d


def test_vectorized_equals_scalar_and_is_finite():
    d = _grid()
    out = evaluate_perf(d)
    shape = (3, 3, 3)
    assert set(out) == set(METRICS)
    for v in out.values():
        assert v.shape == shape and np.isfinite(v).all()
    for i, j, k in [(0, 0, 0), (1, 2, 1), (2, 1, 2), (0, 2, 2)]:
        one = dict(d)
        one["die_area_mm2"] = float(d["die_area_mm2"][i, 0, 0])
        one["hbm_stacks_per_die"] = float(d["hbm_stacks_per_die"][0, j, 0])
        one["link_type"] = str(d["link_type"][0, 0, k])
        one["cluster_size"] = float(d["cluster_size"][i, 0, 0])
        scalar = evaluate_perf(one)
        for name, v in out.items():
            assert scalar[name].shape == ()
            assert float(scalar[name]) == pytest.approx(float(v[i, j, k]), rel=1e-12), name


_PER_DESIGN_CASES = {
    "serve": {},
    "decode-auto-slo": {"phase": "decode", "batch": "auto", "tpot_slo_s": 0.04},
    "prefill-moe": {"model": "mixtral-8x7b", "phase": "prefill"},
    "train": {"model": "llama3-8b", "phase": "train", "precision": "bf16"},
}


@pytest.mark.parametrize("case", list(_PER_DESIGN_CASES))
def test_per_design_constants_equal_a_loop_of_scalar_designs(case):
    """Technology constants and workload fields may vary over the batch (robust studies put
    sampled assumptions there): the batch equals one scalar evaluation per design."""
    n = 96  # enough designs for the search's dedup of repeated hardware; values repeat
    rng = np.random.default_rng(7)
    d = ctx(workload=_PER_DESIGN_CASES[case])
    d["die_area_mm2"] = rng.choice([200.0, 400.0, 814.0], n)
    d["hbm_stacks_per_die"] = rng.choice([2.0, 5.0, 8.0], n)
    d["link_type"] = rng.choice(["electrical", "cpo"], n)
    d["cluster_size"] = rng.choice([4.0, 16.0, 256.0], n)
    t = dict(d["technology"])
    t["gemm_compute_efficiency"] = rng.choice([0.4, 0.6], n)
    t["network_efficiency"] = rng.choice([0.5, 0.8], n)
    t["hbm_usable_fraction"] = rng.choice([0.5, 0.9], n)
    t["collective_step_latency_s"] = rng.choice([1e-6, 5e-6], n)
    d["technology"] = t
    wl = dict(d["workload"])
    wl["input_tokens"] = rng.choice([512.0, 2048.0], n)
    wl["output_tokens"] = rng.choice([64.0, 256.0], n)
    if wl.get("batch") != "auto":
        wl["batch"] = rng.choice([8.0, 64.0], n)
    d["workload"] = wl
    out = evaluate_perf(d)
    assert all(v.shape == (n,) for v in out.values())
    varied = [k for k in t if np.ndim(t[k]) and not k.endswith("_choices")]
    varied += [k for k in ("input_tokens", "output_tokens", "batch") if np.ndim(wl[k])]
    assert len(varied) == (6 if isinstance(wl["batch"], str) else 7)
    for i in range(n):
        one = {k: (v[i].item() if isinstance(v, np.ndarray) else v) for k, v in d.items()
               if k not in ("technology", "workload")}  # fmt: skip
        one["technology"] = {k: (v[i] if k in varied else v) for k, v in t.items()}
        one["workload"] = {k: (float(v[i]) if k in varied else v) for k, v in wl.items()}
        scalar = evaluate_perf(one)
        for name, v in out.items():
            assert float(scalar[name]) == pytest.approx(float(v[i]), rel=1e-12, nan_ok=True), (
                name,
                i,
            )


def test_per_design_constants_broadcast_against_the_design_grid():
    """A (K, 1) constant against (1, N) designs gives (K, N) results, each a scalar run."""
    d = ctx()
    d["die_area_mm2"] = np.array([[300.0, 600.0, 814.0]])
    d["technology"] = {**d["technology"], "gemm_memory_efficiency": np.array([[0.3], [0.7]])}
    out = evaluate_perf(d)
    assert out["tokens_per_s"].shape == (2, 3)
    for i, eff in enumerate((0.3, 0.7)):
        for j, area in enumerate((300.0, 600.0, 814.0)):
            one = {**d, "die_area_mm2": area}
            one["technology"] = {**d["technology"], "gemm_memory_efficiency": eff}
            ref = evaluate_perf(one)["tokens_per_s"]
            assert float(out["tokens_per_s"][i, j]) == pytest.approx(float(ref), rel=1e-12)


@pytest.mark.parametrize(
    ("wl", "path"),
    [({"precision": "int3"}, "workload.precision"), ({"phase": "sleep"}, "workload.phase"),
     ({"tp": 3.5}, "workload.tp"), ({"input_tokens": -1}, "workload.input_tokens")],
)  # fmt: skip
def test_bad_workload_raises_context_error(wl, path):
    with pytest.raises(ContextError) as e:
        perf(workload=wl)
    assert e.value.path == path


def test_bad_link_type_raises_context_error():
    with pytest.raises(ContextError) as e:
        perf(link_type="carrier-pigeon")
    assert e.value.path == "link_type"


# --- training ------------------------------------------------------------------------------


def _train(**wl) -> dict[str, float]:
    base = {"model": "llama3-8b", "phase": "train", "precision": "bf16", "input_tokens": 4096,
            "tp": 8, "pp": 4}  # fmt: skip
    return perf(cluster_size=64, workload={**base, **wl})


def test_training_step_reports_mfu_and_trained_tokens():
    r = _train(batch=16)
    assert 0 < r["mfu"] < 0.465  # below the GEMM efficiency: bubble and communication
    assert r["model_fits"] == 1 and r["replicas"] == 2
    assert r["ttft_s"] == 0 and r["tpot_s"] == 0
    assert r["tokens_per_s"] == pytest.approx(2 * 16 * 4096 / r["step_s"])


def test_training_pipeline_bubble_shrinks_with_more_microbatches():
    few, many = _train(batch=4), _train(batch=64)
    # 1F1B bubble: (m + pp - 1) / m = 7/4 vs 67/64
    assert many["mfu"] > 1.4 * few["mfu"]


def test_scaleout_bandwidth_follows_compute_silicon():
    from objectives.perf.hardware import scaleout_gbps_per_gpu

    d = resolve_context({"gpu": "h100-sxm"})
    # DGX H100: one 400 Gb/s NIC per 814 mm2 GH100; a quarter-size die gets a quarter of it.
    assert float(scaleout_gbps_per_gpu(d)) == pytest.approx(400.0, rel=1e-3)
    d["die_area_mm2"] = np.array([203.5, 407.0])
    assert scaleout_gbps_per_gpu(d) == pytest.approx([100.0, 200.0], rel=1e-3)


def test_given_metrics_equal_the_ones_a_direct_call_computes():
    from unittest import mock

    import objectives.perf
    from objectives.availability import evaluate_availability
    from objectives.cost import evaluate_cost

    d = resolve_context({"gpu": "h100-sxm", "cluster_size": 1024})
    d["die_area_mm2"] = np.array([203.5, 407.0, 814.0])
    plain_cost, plain_avail = evaluate_cost(d), evaluate_availability(d)
    perf = evaluate_perf(d)
    # given their needs, neither runs the perf model again
    with mock.patch.object(objectives.perf, "evaluate_perf", side_effect=AssertionError):
        avail = evaluate_availability(d, perf=perf)
        cost = evaluate_cost(d, perf=perf, availability=avail)
    for k in plain_cost:
        np.testing.assert_array_equal(cost[k], plain_cost[k])
    for k in plain_avail:
        np.testing.assert_array_equal(avail[k], plain_avail[k])
