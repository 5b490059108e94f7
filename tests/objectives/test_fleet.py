"""The mixed fleet: bin-packing by hand, stranded capacity, vectorized == scalar."""

from __future__ import annotations

import numpy as np
import pytest

from objectives.fleet import evaluate_fleet, pack
from objectives.presets import resolve_context


def test_pack_by_hand() -> None:
    # 64 GPUs; two models with equal token shares: A 8-GPU replicas at 100 tok/s, B 2-GPU
    # replicas at 50 tok/s. Continuous: x = 64 / (0.5*8/100 + 0.5*2/50) = 800 tok/s of mix;
    # floor: A 4 replicas (32 GPUs), B 8 (16 GPUs); 16 left go to the limiting model one
    # replica at a time (A: 4*100/0.5 = 800 = B's 8*50/0.5 -> A first, then B, ...).
    mix, (a, b) = pack(np.asarray(64.0), [0.5, 0.5], [8.0, 2.0], [100.0, 50.0])
    assert float(a) * 8 + float(b) * 2 <= 64
    assert float(mix) == min(float(a) * 100 / 0.5, float(b) * 50 / 0.5)
    assert float(mix) >= 800.0
    # a model with no serving replica: the mix serves nothing
    mix0, _ = pack(np.asarray(64.0), [0.5, 0.5], [8.0, 2.0], [0.0, 50.0])
    assert float(mix0) == 0.0


def test_pack_granularity_strands_a_small_cluster() -> None:
    # a 16-GPU replica cannot fit a 12-GPU cluster: nothing is served
    mix, (r,) = pack(np.asarray(12.0), [1.0], [16.0], [100.0])
    assert float(mix) == 0.0 and float(r) == 0.0
    mix, (r,) = pack(np.asarray(40.0), [1.0], [16.0], [100.0])
    assert float(r) == 2 and float(mix) == 200.0


H100 = {
    "gpu": "h100-sxm",
    "cluster_size": 64,
    "workload": {"model": "llama3-70b", "phase": "decode", "precision": "fp8",
                 "input_tokens": 2048, "output_tokens": 512, "batch": "auto",
                 "tpot_slo_s": 0.05, "ttft_slo_s": 2.0},
}  # fmt: skip


def test_h100_fleet_serves_the_mix_and_counts_what_it_strands() -> None:
    m = {k: float(v) for k, v in evaluate_fleet(resolve_context(H100)).items()}
    assert m["models_fit"] == 1 and m["mix_tokens_per_s"] > 0
    assert 0 <= m["stranded_compute_fraction"] < 1
    assert 0 <= m["stranded_hbm_fraction"] < 1
    assert 0 < m["largest_replica_fraction"] <= 1
    assert m["usd_per_mtok"] > 0 and m["tokens_per_s_per_mw"] > 0


def test_fleet_vectorized_equals_scalar() -> None:
    sizes = np.array([64.0, 128.0, 256.0])
    areas = np.array([814.0, 407.0, 203.5])
    batch = evaluate_fleet(resolve_context({**H100, "cluster_size": sizes, "die_area_mm2": areas}))
    for i in range(3):
        one = evaluate_fleet(
            resolve_context({**H100, "cluster_size": float(sizes[i]), "die_area_mm2": areas[i]})
        )
        for k in batch:
            assert float(batch[k][i]) == pytest.approx(float(one[k]), rel=1e-9, abs=1e-12), k
