"""Heterogeneous prefill/decode pools (objectives/perf/pools.py): the KV transfer by hand, each
pool's throughput against the homogeneous model of its own GPU, the split, cost, errors."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from objectives.cooling import it_power_factor
from objectives.cost import evaluate_cost
from objectives.cost.cluster import SECONDS_PER_YEAR, energy_cost
from objectives.errors import ContextError
from objectives.perf import evaluate_perf
from objectives.perf.batch import flatten
from objectives.perf.hardware import hardware
from objectives.perf.pools import balanced_split, kv_bytes_per_request
from objectives.perf.power import idle_gpu_power_w
from objectives.presets import resolve_context

WL: dict[str, Any] = {
    "model": "llama3-70b",
    "phase": "serve",
    "precision": "fp8",
    "input_tokens": 2048,
    "output_tokens": 256,
    "batch": "auto",
    "ttft_slo_s": 1.0,
    "tpot_slo_s": 0.05,
}
POOLS = {"prefill_pool": {"gpu": "h200", "tp": 8}, "decode_pool": {"tp": 8}}


def pools_design(**extra: Any) -> dict[str, Any]:
    """Prefill on H200, decode on the design's B200 (spaces/disagg-h200-b200.yaml)."""
    wl = {**WL, **POOLS, **extra.pop("workload", {})}
    return resolve_context({"gpu": "b200", "cluster_size": 64, "workload": wl, **extra})


def homogeneous(gpu: str, gpus: int, phase: str, **wl: Any) -> dict[str, np.ndarray]:
    """The pool evaluated on its own, as a plain one-GPU-type design (another path: the
    preset resolved as the design's ``gpu``, not substituted into a pool)."""
    d = resolve_context(
        {"gpu": gpu, "cluster_size": gpus, "workload": {**WL, "phase": phase, "tp": 8, **wl}}
    )
    return evaluate_perf(d)


def test_kv_bytes_per_request_by_hand() -> None:
    """Llama-3-70B (80 layers, 8 KV heads of 128, Meta config.json) with an FP8 KV cache:
    K and V, 2 x 8 x 128 = 2,048 bytes per token per layer, x 80 layers x 2,048 tokens."""
    assert kv_bytes_per_request(pools_design()["workload"]) == 2048 * 80 * 2 * 8 * 128 * 1
    # bf16 KV doubles it; DeepSeek-V3's MLA stores its 512 latent + 64 rotary dims per layer
    bf16 = {**pools_design()["workload"], "kv_precision": "bf16"}
    assert kv_bytes_per_request(bf16) == 2 * 2048 * 80 * 2 * 8 * 128
    ds = resolve_context({"workload": {**WL, "model": "deepseek-v3"}})["workload"]
    assert kv_bytes_per_request(ds) == 2048 * 61 * (512 + 64) * 1


def test_kv_transfer_time_by_hand() -> None:
    """One 8-GPU H200 prefill replica sends to one 8-GPU B200 decode replica: each H200 has
    one 400 Gb/s NIC (814 mm2 x 0.4914 Gb/s/mm2, DGX H100's ConnectX-7 per GH100), at the
    80 % achievable fraction 40 GB/s; the B200s' 786 Gb/s NICs are not the narrow side."""
    m = evaluate_perf(pools_design(prefill_gpus=16))
    nic_h200 = 814 * 0.4914e9 / 8 * 0.80  # bytes/s
    kv = 2048 * 80 * 2 * 8 * 128
    assert float(m["kv_transfer_s"]) == pytest.approx(kv / (8 * nic_h200), rel=1e-9)
    assert float(m["kv_transfer_s"]) == pytest.approx(1.0486e-3, rel=1e-4)
    # all transfers: 16 busy H200 NICs (48 B200s receive on wider NICs)
    assert float(m["kv_link_requests_per_s"]) == pytest.approx(16 * nic_h200 / kv, rel=1e-9)


def test_each_pool_is_the_homogeneous_model_of_its_gpu() -> None:
    """Prefill throughput = the H200 prefill model on 16 GPUs; decode = the B200 decode model
    on 48 (TPOT SLO only); the system serves the smaller request rate; TTFT = prefill + KV
    transfer; power is the sum, the waiting decode pool's busy GPUs at the duty cycle
    req / D between their serving and idle power; tokens/J of the whole."""
    m = evaluate_perf(pools_design(prefill_gpus=16))
    pre = homogeneous("h200", 16, "prefill", tpot_slo_s=None)
    dec = homogeneous("b200", 48, "decode", ttft_slo_s=None)
    p = float(pre["tokens_per_s"]) / 2048
    d = float(dec["tokens_per_s"]) / 256
    assert float(m["prefill_requests_per_s"]) == pytest.approx(p, rel=1e-12)
    assert float(m["decode_requests_per_s"]) == pytest.approx(d, rel=1e-12)
    req = min(p, d, float(m["kv_link_requests_per_s"]))
    assert p < d  # 16 H200s prefilling bound this split
    assert float(m["tokens_per_s"]) == pytest.approx(req * 256, rel=1e-12)
    assert float(m["ttft_s"]) == pytest.approx(
        float(pre["ttft_s"]) + float(m["kv_transfer_s"]), rel=1e-12
    )
    assert float(m["tpot_s"]) == pytest.approx(float(dec["tpot_s"]), rel=1e-12)
    h = resolve_context({"gpu": "b200", "cluster_size": 48, "workload": {**WL, "tp": 8}})
    flat = flatten(h).design()
    idle = float(np.asarray(idle_gpu_power_w(flat, hardware(flat, "fp8"))).reshape(-1)[0])
    busy = float(dec["replicas"]) * 8
    saved = busy * (1 - req / d) * (float(dec["gpu_power_w"]) - idle)  # air-cooled: fans 1x
    assert np.all(it_power_factor(flat) == 1.0) and 0 < idle < float(dec["gpu_power_w"])
    watts = float(pre["cluster_power_w"]) + float(dec["cluster_power_w"]) - saved
    assert float(m["cluster_power_w"]) == pytest.approx(watts, rel=1e-12)
    assert float(m["tokens_per_joule"]) == pytest.approx(req * 256 / watts, rel=1e-12)
    assert float(m["prefill_gpus"]) == 16 and float(m["prefill_tp"]) == 8
    assert float(m["tflops_per_gpu"]) == float(dec["tflops_per_gpu"])  # the decode pool's


def test_cost_sums_each_pool_priced_with_its_own_gpu() -> None:
    """TCO and capex of the whole = the H200 pool's + the B200 pool's, each priced as the
    homogeneous cluster it is; cost per token over the system's tokens."""
    d = pools_design(prefill_gpus=16)
    c = evaluate_cost(d)
    parts = []
    for gpu, n, phase, wl in (("h200", 16, "prefill", {"tpot_slo_s": None}),
                              ("b200", 48, "decode", {"ttft_slo_s": None})):  # fmt: skip
        h = resolve_context(
            {"gpu": gpu, "cluster_size": n, "workload": {**WL, "phase": phase, "tp": 8, **wl}}
        )
        parts.append(evaluate_cost(h))
    for k in ("cluster_capex_usd", "network_cost_usd", "installed_gpus"):
        assert float(c[k]) == pytest.approx(sum(float(p[k]) for p in parts), rel=1e-12), k
    # energy at the whole's facility power (the waiting pool below its saturated power)
    m = evaluate_perf(d)
    t = d["technology"]
    energy = energy_cost(m["facility_power_w"], t["lifetime_years"], t["electricity_usd_per_kwh"])
    assert float(c["energy_cost_usd"]) == pytest.approx(float(energy), rel=1e-12)
    assert float(c["energy_cost_usd"]) < sum(float(p["energy_cost_usd"]) for p in parts)
    tco = float(c["cluster_capex_usd"]) + float(c["energy_cost_usd"])
    tco += float(c["maintenance_cost_usd"])
    assert float(c["tco_usd"]) == pytest.approx(tco, rel=1e-12)
    # the money lines still add up with the GPU-weighted per-GPU lines
    capex = float(c["installed_gpus"]) * (float(c["gpu_price_usd"]) + float(
        c["system_share_usd"])) + float(c["network_cost_usd"])  # fmt: skip
    assert float(c["cluster_capex_usd"]) == pytest.approx(capex, rel=1e-12)
    life_s = float(d["technology"]["lifetime_years"]) * SECONDS_PER_YEAR
    per_mtok = float(c["tco_usd"]) / (float(m["tokens_per_s"]) * life_s / 1e6)
    assert float(c["usd_per_mtok"]) == pytest.approx(per_mtok, rel=1e-9)


def test_vectorized_equals_scalar() -> None:
    """A batch of splits (0: balanced) and die areas is one vectorized call; each design gets
    what it gets alone."""
    d = pools_design()
    n_p = np.array([0.0, 8.0, 24.0, 48.0])
    batch = evaluate_perf({**d, "prefill_gpus": n_p})
    cost = evaluate_cost({**d, "prefill_gpus": n_p})
    for i, v in enumerate(n_p):
        one = evaluate_perf({**d, "prefill_gpus": v})
        one_c = evaluate_cost({**d, "prefill_gpus": v})
        for k in ("tokens_per_s", "ttft_s", "tpot_s", "cluster_power_w", "prefill_gpus"):
            assert batch[k][i] == pytest.approx(float(one[k]), rel=1e-12), (k, v)
        assert cost["usd_per_mtok"][i] == pytest.approx(float(one_c["usd_per_mtok"]), rel=1e-12)
    assert batch["prefill_gpus"][0] not in (0.0,)  # balanced: a split was chosen


def test_balanced_split_is_the_best_integer_split() -> None:
    """Against a brute force over every split of whole replicas."""
    rng = np.random.default_rng(0)
    cases = []
    for _ in range(300):
        n = float(rng.integers(2, 200))
        gp, gd = (float(rng.choice([1, 2, 4, 8, 16])) for _ in range(2))
        if gp + gd > n:
            continue
        cases.append((n, rng.uniform(0.1, 50), gp, rng.uniform(0.1, 50), gd))
    cols = [np.array(c) for c in zip(*cases, strict=True)]
    got = balanced_split(*cols)
    for i, (ni, rpi, gpi, rdi, gdi) in enumerate(cases):
        best = max(
            min(a * rpi, np.floor((ni - a * gpi) / gdi) * rdi)
            for a in range(1, int((ni - gdi) // gpi) + 1)
        )
        value = min(np.floor(got[i] / gpi) * rpi, np.floor((ni - got[i]) / gdi) * rdi)
        assert value == pytest.approx(best, rel=1e-12), cases[i]


def test_balanced_split_balances_the_example() -> None:
    """spaces/disagg-h200-b200.yaml at the balanced split: no split of whole 8-GPU replicas
    serves more (each checked by evaluating it)."""
    d = pools_design()
    auto = evaluate_perf(d)
    splits = np.arange(8.0, 64.0, 8.0)
    each = evaluate_perf({**d, "prefill_gpus": splits})
    assert float(auto["tokens_per_s"]) == pytest.approx(each["tokens_per_s"].max(), rel=1e-12)


@pytest.mark.parametrize(
    ("workload", "extra", "where"),
    [
        ({"prefill_pool": {"gpu": "h20"}}, {}, "workload.prefill_pool.gpu"),
        ({"prefill_pool": {"tp": "x"}}, {}, "workload.prefill_pool.tp"),
        ({"decode_pool": {"tpp": 8}}, {}, "workload.decode_pool.tpp"),
        ({"prefill_pool": {"gpus": 8}, "decode_pool": {"gpus": 8}}, {}, "decode_pool.gpus"),
        ({"phase": "decode"}, {}, "workload.prefill_pool"),
        ({}, {"prefill_gpus": 64}, "prefill_gpus"),
    ],
)
def test_bad_pools_are_refused_in_one_line(
    workload: dict[str, Any], extra: dict[str, Any], where: str
) -> None:
    with pytest.raises(ContextError) as err:
        evaluate_perf(pools_design(workload=workload, **extra))
    assert where in str(err.value) and "\n" not in str(err.value)


def test_unknown_pool_gpu_lists_the_choices() -> None:
    with pytest.raises(ContextError, match="did you mean 'h200'.*valid choices: b200"):
        pools_design(workload={"prefill_pool": {"gpu": "h20"}})


def test_pool_gpu_fields_do_not_leak_from_the_design_gpu() -> None:
    """An H200 pool under a B200 design has no FP4 and Hopper's tensor density: every
    GPU field the H200 preset leaves unset takes its parameter default, not the B200's."""
    for prec in ("fp8", "bf16"):
        m = evaluate_perf(pools_design(prefill_gpus=8, workload={"precision": prec}))
        pre = homogeneous("h200", 8, "prefill", tpot_slo_s=None, precision=prec)
        assert float(m["prefill_requests_per_s"]) * 2048 == pytest.approx(
            float(pre["tokens_per_s"]), rel=1e-12
        )
    with pytest.raises(ContextError, match="fp4"):
        evaluate_perf(pools_design(prefill_gpus=8, workload={"precision": "fp4"}))


def test_a_pool_without_gpu_follows_the_design() -> None:
    """No ``gpu`` in either pool: both run the design's GPU, and die areas may vary per
    design; a pool of the same GPU as a separate pool gives the same figures."""
    d = pools_design(workload={"prefill_pool": {"tp": 8}}, prefill_gpus=16)
    same = pools_design(workload={"prefill_pool": {"gpu": "b200", "tp": 8}}, prefill_gpus=16)
    a, b = evaluate_perf(d), evaluate_perf(same)
    for k in ("tokens_per_s", "ttft_s", "cluster_power_w"):
        assert float(a[k]) == pytest.approx(float(b[k]), rel=1e-12)
    areas = evaluate_perf({**d, "die_area_mm2": np.array([700.0, 800.0])})
    assert areas["tokens_per_s"].shape == (2,)
    assert areas["tokens_per_s"][1] == pytest.approx(float(a["tokens_per_s"]), rel=1e-12)


def test_designs_without_pools_report_zero_pool_metrics() -> None:
    m = evaluate_perf(resolve_context({"gpu": "h200", "cluster_size": 8}))
    for k in ("prefill_gpus", "kv_transfer_s", "prefill_requests_per_s"):
        assert float(m[k]) == 0.0


def test_pool_metrics_cover_their_names() -> None:
    """Every metric name is declared once (perf.METRICS includes the pool metrics)."""
    from objectives.perf import METRICS
    from objectives.perf.pools import POOL_METRICS

    assert set(POOL_METRICS) <= set(METRICS)
    assert not set(itertools.chain(POOL_METRICS)) - set(evaluate_perf(pools_design()))


def test_a_pool_gpu_runs_on_the_node_it_ships_on() -> None:
    """technology auto: an MI355X prefill pool under a B200 design runs on n3, as the MI355X
    ships (its prefill rate is the homogeneous MI355X's), with the spec's technology
    overrides; a pinned node holds for both pools; a pool may name its own."""
    d = resolve_context(
        {"gpu": "b200", "cluster_size": 16, "technology": {"preset": "auto", "pue": 1.5},
         "workload": {**WL, "prefill_pool": {"gpu": "mi355x", "tp": 8}, "decode_pool": {}}}
    )  # fmt: skip
    node = d["workload"]["prefill_pool"]["technology"]
    assert (node["name"], node["pue"], d["technology"]["name"]) == ("n3", 1.5, "n4")
    m = evaluate_perf({**d, "prefill_gpus": 8})
    alone = homogeneous("mi355x", 8, "prefill", tpot_slo_s=None)
    assert float(m["prefill_requests_per_s"]) * 2048 == pytest.approx(
        float(alone["tokens_per_s"]), rel=1e-12
    )
    pinned = resolve_context(
        {"gpu": "b200", "technology": "n4",
         "workload": {"prefill_pool": {"gpu": "mi355x"}, "decode_pool": {}}}
    )  # fmt: skip
    assert "technology" not in pinned["workload"]["prefill_pool"]
    own = resolve_context({"gpu": "b200", "workload": {"prefill_pool": {"technology": "n3"}}})
    assert own["workload"]["prefill_pool"]["technology"]["name"] == "n3"


def test_each_pool_throughput_by_hand() -> None:
    """One H200 prefilling one prompt at a time, one B200 decoding one sequence (tp 1): the
    prefill is compute-bound, 2 x 68.45 B layer parameters x 2,048 tokens at the H200's
    datasheet 1,979 dense FP8 TFLOPS (NVIDIA H200 datasheet) x the fitted GEMM efficiency, plus
    the causal attention's 4 x head_dim x heads x S(S+1)/2 FLOPs per layer at the attention
    efficiency, plus the per-layer overhead; the decode step is memory-bound, the 69.5 GB of
    FP8 weights and the 2,048 + 64-token mean KV cache (163,840 bytes a token) at the B200's
    8 TB/s (NVIDIA HGX B200 datasheet) x the GEMM and attention memory efficiencies, plus the
    per-layer overhead."""
    wl = {"batch": 1, "output_tokens": 128, "ttft_slo_s": None, "tpot_slo_s": None,
          "prefill_pool": {"gpu": "h200", "tp": 1, "pp": 1},
          "decode_pool": {"tp": 1, "pp": 1}}  # fmt: skip
    d = resolve_context({"gpu": "b200", "cluster_size": 2, "workload": {**WL, **wl}})
    m = evaluate_perf(d)
    t = d["technology"]
    layers, s = 80, 2048
    layer_params = 68.451e9 / layers  # Llama-3-70B less its embeddings (arch_of)
    t_gemm = 2 * layer_params * s / (1978.9e12 * t["cb_gemm_compute_efficiency"])
    t_attn = 4 * 128 * 64 * s * (s + 1) / 2 / (1978.9e12 * t["cb_attention_compute_efficiency"])
    t_prefill = layers * (t_gemm + t_attn + t["cb_layer_overhead_s"])
    assert float(m["prefill_requests_per_s"]) == pytest.approx(1 / t_prefill, rel=0.005)
    weights = 68.451e9 + 1.0507e9  # layers + LM head (fp8: a byte a parameter)
    kv = (2048 + 128 / 2) * 163_840
    t_step = weights / (8e12 * t["cb_gemm_memory_efficiency"])
    t_step += kv / (8e12 * t["cb_attention_memory_efficiency"])
    t_step += layers * t["cb_layer_overhead_s"]
    assert float(m["decode_requests_per_s"]) == pytest.approx(1 / (128 * t_step), rel=0.005)
    assert float(m["tokens_per_s"]) == pytest.approx(128 / (128 * t_step), rel=0.005)  # D binds
