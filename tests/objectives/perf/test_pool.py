"""Memory pooled over optics: the HBM it frees, the step time it bounds, its price and power."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import yaml

from objectives.cost import evaluate_cost
from objectives.errors import ContextError
from objectives.perf import evaluate_perf
from objectives.perf.pool import hbm_weight_copies_bytes, pool_power_w, pool_usd
from objectives.presets import resolve_context

LLAMA70B_PARAMS = 70_552_387_584  # 80 x 855,638,016 per layer + 2 x 1,050,673,152 embedding
POOL_EFF = 0.8  # technology.pool_bandwidth_efficiency
POOL_LATENCY_S = 1e-6  # technology.pool_access_latency_s

H100 = {
    "gpu": "h100-sxm",
    "cluster_size": 64,
    "workload": {"model": "llama3-70b", "phase": "decode", "precision": "fp8",
                 "input_tokens": 2048, "output_tokens": 512, "batch": "auto",
                 "tpot_slo_s": 0.05, "ttft_slo_s": 2.0},
}  # fmt: skip
# one parallelism (tp 8, pp 1) and a static batch of 64: the step is timed by hand
PINNED = {
    **H100,
    "workload": {"model": "llama3-70b", "phase": "decode", "precision": "fp8",
                 "scheduler": "static", "input_tokens": 2048, "output_tokens": 512,
                 "batch": 64},
    "technology": {"preset": "n4", "tp_choices": [8], "pp_choices": [1]},
}  # fmt: skip


def _design(base: dict[str, Any] = H100, **kw: Any) -> dict[str, Any]:
    return resolve_context({**base, **kw})


def _paper(name: str) -> dict[str, Any]:
    with open(f"spaces/paper/{name}.yaml", encoding="utf-8") as f:
        return dict(yaml.safe_load(f)["fixed"])


def test_none_leaves_every_figure_as_without_the_field() -> None:
    plain = _design()
    none = _design(memory_pool="none", memory_pool_gb_per_gpu=512, memory_pool_tbps_per_gpu=2)
    for ev in (evaluate_perf, evaluate_cost):
        a, b = ev(plain), ev(none)
        assert set(a) == set(b)
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert float(evaluate_cost(none)["memory_pool_cost_usd"]) == 0.0


def test_pooled_weights_bound_the_decode_step_by_hand() -> None:
    # tp 8, pp 1: a GPU streams its eighth of all the weights (both embedding copies, as it
    # holds them) every step: 70,552,387,584 / 8 = 8,819,048,448 B at 0.01 TB/s x 0.8
    slow = _design(PINNED, memory_pool="weights", memory_pool_gb_per_gpu=2,
                   memory_pool_tbps_per_gpu=0.01)  # fmt: skip
    p = evaluate_perf(slow)
    assert (float(p["tp"]), float(p["pp"])) == (8.0, 1.0)
    expected = LLAMA70B_PARAMS / 8 / (0.01e12 * POOL_EFF) + POOL_LATENCY_S
    assert float(p["tpot_s"]) == pytest.approx(expected, rel=1e-12)
    # a fast pool is hidden behind the HBM-bound step: the step is the one without a pool
    fast = evaluate_perf(_design(PINNED, memory_pool="weights", memory_pool_gb_per_gpu=2,
                                 memory_pool_tbps_per_gpu=100.0))  # fmt: skip
    plain = evaluate_perf(_design(PINNED))
    assert float(fast["tpot_s"]) == float(plain["tpot_s"])
    assert float(plain["tpot_s"]) < expected / 10


def test_pooled_kv_bounds_the_decode_step_by_hand() -> None:
    # the KV entries of 64 sequences at the mean context 2048 + 512 / 2 = 2304, plus the one
    # written per sequence: 64 x 2305 entries x 80 layers x 2 (K, V) x 1 KV head x 128 x e bytes
    p = evaluate_perf(_design(PINNED, memory_pool="kv", memory_pool_gb_per_gpu=64,
                              memory_pool_tbps_per_gpu=0.01))  # fmt: skip
    e = 1.0  # FP8 KV cache (kv_precision auto with FP8 weights)
    kv_bytes = 64 * 2305 * 80 * 2 * 1 * 128 * e
    expected = kv_bytes / (0.01e12 * POOL_EFF) + POOL_LATENCY_S
    assert float(p["tpot_s"]) == pytest.approx(expected, rel=1e-12)


def test_pooled_weights_free_the_hbm_of_their_copy_by_hand() -> None:
    # static scheduler: memory_used_fraction = need / (HBM x usable fraction); the weights'
    # need falls to a staging buffer of 2 of the stage's 80 layers
    plain = evaluate_perf(_design(PINNED))
    pooled = evaluate_perf(_design(PINNED, memory_pool="weights", memory_pool_gb_per_gpu=2,
                                   memory_pool_tbps_per_gpu=100.0))  # fmt: skip
    usable = 80e9 * 0.9  # H100 80 GB (1e9 B) x hbm_usable_fraction
    weights = LLAMA70B_PARAMS / 8
    freed = weights * (1 - 2 / 80)
    need_plain = float(plain["memory_used_fraction"]) * usable
    need_pooled = float(pooled["memory_used_fraction"]) * usable
    assert need_plain - need_pooled == pytest.approx(freed, rel=1e-9)


def test_pooled_kv_adds_the_pool_share_to_the_room() -> None:
    # both: each GPU's 64 GB of pool less its share of the one weights' copy (70.55 GB / 64)
    plain = evaluate_perf(_design(PINNED))
    both = evaluate_perf(_design(PINNED, memory_pool="both", memory_pool_gb_per_gpu=64,
                                 memory_pool_tbps_per_gpu=100.0))  # fmt: skip
    usable = 80e9 * 0.9
    room = usable + 64e9 - LLAMA70B_PARAMS / 64
    need = float(plain["memory_used_fraction"]) * usable - LLAMA70B_PARAMS / 8 * (1 - 2 / 80)
    assert float(both["memory_used_fraction"]) == pytest.approx(need / room, rel=1e-9)


def test_a_pool_smaller_than_one_copy_fits_nothing() -> None:
    # 64 GPUs x 1 GB = 64 GB < one 70.55 GB copy of the weights
    p = evaluate_perf(_design(memory_pool="weights", memory_pool_gb_per_gpu=1.0,
                              memory_pool_tbps_per_gpu=1.0))  # fmt: skip
    assert float(p["model_fits"]) == 0.0
    q = evaluate_perf(_design(memory_pool="weights", memory_pool_gb_per_gpu=1.2,
                              memory_pool_tbps_per_gpu=1.0))  # fmt: skip
    assert float(q["model_fits"]) == 1.0


def test_quarter_die_cluster_with_the_pool_holds_no_weight_copies_in_hbm() -> None:
    # the paper's quarter-die Lite-GPU (256 x 203.5 mm2, 20 GB each) serving Llama-3-70B:
    # without a pool every replica holds a copy in HBM; with the weights pooled once, the HBM
    # they took serves the KV cache and a replica needs half the GPUs
    quarter = _paper("lite-quarter")
    plain = evaluate_perf(_design(quarter))
    pooled_d = _design(quarter, memory_pool="weights", memory_pool_gb_per_gpu=1.0,
                       memory_pool_tbps_per_gpu=0.4)  # fmt: skip
    pooled = evaluate_perf(pooled_d)
    copy = float(LLAMA70B_PARAMS)  # FP8: one byte per parameter
    held = hbm_weight_copies_bytes(_design(quarter), plain, copy)
    assert float(held) == pytest.approx(float(plain["replicas"]) * copy)
    assert float(held) > 1e12  # 16 replicas: 1.13 TB of copies
    assert float(hbm_weight_copies_bytes(pooled_d, pooled, copy)) == 0.0
    assert float(plain["hbm_weight_copies_gb"]) == pytest.approx(float(held) / 1e9, rel=1e-12)
    assert float(pooled["hbm_weight_copies_gb"]) == 0.0
    assert float(pooled["model_fits"]) == float(pooled["slo_met"]) == 1.0
    assert float(pooled["gpus_per_replica"]) == float(plain["gpus_per_replica"]) / 2
    assert float(pooled["replicas"]) == 2 * float(plain["replicas"])
    assert float(pooled["tokens_per_s"]) >= float(plain["tokens_per_s"])


def test_price_power_and_shoreline_by_hand() -> None:
    d = _design(memory_pool="both", memory_pool_gb_per_gpu=100.0, memory_pool_tbps_per_gpu=1.0)
    # a port per end: CPO engines 0.5 USD/(Gb/s) at list / 2.6 list markup, and a 40 USD laser
    # per 4 lanes of the design's lane rate
    port = 0.5 / 2.6 + 40.0 / (4 * float(d["lane_gbps"]))
    # 64 x (100 GB x (3 + 1) USD/GB + 8,000 Gb/s x 2 ports x port)
    assert float(pool_usd(d)) == pytest.approx(64 * (400.0 + 16000.0 * port), rel=1e-12)
    assert float(pool_usd(d, market=True)) == pytest.approx(
        64 * (400.0 + 16000.0 * (port - 0.5 / 2.6 + 0.5)), rel=1e-12
    )
    # 64 x (100 GB x 0.1 W/GB + 8e12 b/s x 2 x 5.6 pJ) + 10 busy GPUs x 0.5 TB/s read x 15 pJ/b
    w = pool_power_w(d, busy=10.0, hbm_bytes_per_s=0.5e12)
    assert float(w) == pytest.approx(64 * (10.0 + 89.6) + 10 * 0.5e12 * 8 * 15e-12, rel=1e-12)
    c = evaluate_cost(d)
    assert float(c["memory_pool_cost_usd"]) == pytest.approx(float(pool_usd(d)), rel=1e-12)
    plain, pooled = evaluate_perf(_design()), evaluate_perf(d)
    # 8,000 Gb/s over 1,792 Gb/s per mm of CPO shoreline, over the 814 mm2 die's perimeter
    edge = 8000.0 / 1792.0 / float(plain["die_perimeter_mm"])
    assert float(pooled["shoreline_used_fraction"]) == pytest.approx(
        float(plain["shoreline_used_fraction"]) + edge, rel=1e-12
    )


def test_vectorized_equals_scalar() -> None:
    kinds = np.array(["none", "weights", "kv", "both"])
    gb = np.array([0.0, 4.0, 64.0, 96.0])
    tbps = np.array([0.0, 1.5, 0.5, 2.0])
    batch_d = _design(memory_pool=kinds, memory_pool_gb_per_gpu=gb, memory_pool_tbps_per_gpu=tbps)
    perf, cost = evaluate_perf(batch_d), evaluate_cost(batch_d)
    for i, k in enumerate(kinds):
        one_d = _design(memory_pool=str(k), memory_pool_gb_per_gpu=float(gb[i]),
                        memory_pool_tbps_per_gpu=float(tbps[i]))  # fmt: skip
        for ev, out in ((evaluate_perf, perf), (evaluate_cost, cost)):
            one = ev(one_d)
            for m in one:
                np.testing.assert_allclose(out[m][i], one[m], rtol=1e-12, err_msg=f"{k} {m}")


def test_training_with_a_pool_is_refused() -> None:
    d = _design(
        memory_pool="weights",
        memory_pool_gb_per_gpu=4.0,
        memory_pool_tbps_per_gpu=1.0,
        workload={"model": "llama3-70b", "phase": "train", "precision": "bf16"},
    )
    with pytest.raises(ContextError, match="memory_pool"):
        evaluate_perf(d)


def test_an_unknown_pool_kind_is_named() -> None:
    with pytest.raises(Exception, match="memory_pool"):
        evaluate_perf(_design(memory_pool="weight"))
