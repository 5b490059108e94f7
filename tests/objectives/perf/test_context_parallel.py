"""Context parallelism for long-prompt prefill: the prompt split over cp groups, ring attention."""

from __future__ import annotations

import numpy as np
import pytest

from objectives.errors import ContextError
from objectives.perf import evaluate_perf
from objectives.perf.context import prefill_stage, ring_exposed_s
from objectives.perf.model import arch_of
from objectives.perf.serving import stage_step
from objectives.perf.workload import serving_of
from objectives.presets import model_presets, resolve_context


def _prefill(cp: int, **wl: object) -> dict:
    work = {"model": "llama3-405b", "precision": "fp8", "phase": "prefill", "tp": 8, "pp": 1,
            "input_tokens": 131072, "output_tokens": 1, "batch": 1, "cp": cp, **wl}  # fmt: skip
    return resolve_context({"gpu": "b200", "cluster_size": 64, "workload": work})


def test_a_128k_prompt_over_cp_groups_takes_about_1_over_cp_and_its_gpus_times_cp():
    one, four = evaluate_perf(_prefill(1)), evaluate_perf(_prefill(4))
    assert float(four["gpus_per_replica"]) == 32 and float(one["gpus_per_replica"]) == 8
    # the GEMMs and the causal attention both split evenly; the LM head of one position does not
    assert float(four["ttft_s"]) == pytest.approx(float(one["ttft_s"]) / 4, rel=0.02)
    # the same GPUs prefill about as many tokens/s: CP buys latency, not throughput
    assert float(four["tokens_per_s"]) == pytest.approx(float(one["tokens_per_s"]), rel=0.02)
    # each group keeps only its quarter of the prompt's KV cache
    assert float(four["memory_used_fraction"]) < float(one["memory_used_fraction"])


def test_prefill_stage_is_the_split_step_plus_the_exposed_ring():
    d = _prefill(4)
    s, _, _ = serving_of(d["workload"])
    a = arch_of(model_presets()["llama3-8b"])
    S, b, tp, pp, cp = 4096.0, 2.0, np.array([[2.0]]), np.array([[1.0]]), 4.0
    hw = {"tflops_per_gpu": np.array([[4500.0]]), "hbm_tbps_per_gpu": np.array([[8.0]]),
          "net_bytes_per_s": np.array([[360e9]]), "p2p_bytes_per_s": np.array([[1e9]]),
          "cp": cp}  # fmt: skip
    got = prefill_stage(d, hw, a, s, tp, pp, b, S)
    split = stage_step(d, hw, a, s, tp, pp, b, S / cp, S * (S + 1) / 2 / cp, S / cp)
    # ring by hand: per layer 3 sends of 2 x 1024 tokens x (2 x 4 KV heads x 128) x 1 byte at
    # 1 GB/s (+1 us each), against the attention of 2 x 4096 x 4097 / 8 pairs x 4 x 128 FLOPs
    # x 16 heads at 4.5 PFLOPS x 0.5
    ring = 3 * (2 * 1024 * 1024 / 1e9 + 1e-6)
    attn = 2 * 4096 * 4097 / 8 * 4 * 128 * 16 / (4500e12 * 0.5)
    exposed = 32 * max(ring - attn, 0.0)
    assert exposed > 0
    assert np.asarray(ring_exposed_s(d, hw, a, s, tp, pp, b, S, cp)).item() == pytest.approx(
        exposed
    )
    assert got.time_s.item() == pytest.approx(split.time_s.item() + exposed)
    assert got.flops.item() == pytest.approx(split.flops.item())


def test_cp_outside_prefill_is_refused_in_one_line():
    with pytest.raises(ContextError, match="workload.cp: context parallelism is modelled"):
        evaluate_perf(_prefill(2, phase="serve", output_tokens=128))
    with pytest.raises(ContextError, match="workload.cp"):
        evaluate_perf(_prefill(0))
