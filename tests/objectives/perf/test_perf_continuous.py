"""Continuous batching: the solved batch, KV precision, TTFT, disaggregation, MoE, the CLI form."""

from __future__ import annotations

import math

import numpy as np
import pytest

from objectives.perf import evaluate_perf
from objectives.perf.model import arch_of
from objectives.presets import model_presets, resolve_context

GIB = 1.073741824e9


def perf(gpu: str = "h100-sxm", n: int = 1, **wl) -> dict[str, float]:
    d = resolve_context({"gpu": gpu, "cluster_size": n,
                         "workload": {"batch": "auto", "phase": "serve", **wl}})  # fmt: skip
    return {k: float(v) for k, v in evaluate_perf(d).items()}


def test_kv_bound_batch_by_hand():
    """Llama 3 70B FP8 on one H100, 128/2048: the KV cache takes 0.9 of the HBM left after
    weights, one 8192-token step's activations and the 2 GB reserve; 2176 tokens reserved
    per sequence at 80 x 2 x 8 x 128 one-byte K/V entries per token."""
    r = perf(model="llama3-70b", precision="fp8", tp=1, pp=1, input_tokens=128,
             output_tokens=2048)  # fmt: skip
    a = arch_of(model_presets()["llama3-70b"])
    weights = a.layers * a.layer_params + 2 * a.embedding_params
    act = 8192 * (a.hidden + 2 * a.ffn)
    free = 80 * GIB - weights - act - 2e9
    per_seq = 2176 * 80 * 2 * 8 * 128
    assert r["batch"] == math.floor(0.9 * free / per_seq)
    assert r["model_fits"] == 1 and r["memory_used_fraction"] <= 1


def test_bf16_kv_cache_halves_the_kv_bound_batch():
    wl = {"model": "llama3-70b", "precision": "fp8", "tp": 1, "pp": 1, "input_tokens": 128,
          "output_tokens": 2048}  # fmt: skip
    fp8, bf16 = perf(**wl), perf(**wl, kv_precision="bf16")
    assert bf16["batch"] == pytest.approx(fp8["batch"] / 2, abs=1)
    assert bf16["tokens_per_s"] < fp8["tokens_per_s"]


def test_batch_is_the_largest_meeting_the_tpot_slo():
    wl = {"model": "llama3-70b", "precision": "fp8", "tp": 8, "pp": 1, "input_tokens": 1000,
          "output_tokens": 1000}  # fmt: skip
    free = perf(n=8, **wl)
    slo = perf(n=8, **wl, tpot_slo_s=0.03)
    assert slo["tpot_s"] <= 0.03 and slo["slo_met"] == 1 and slo["batch"] < free["batch"]
    # one more sequence would miss the SLO
    above = perf(n=8, **wl, batch=slo["batch"] + 1)
    assert above["tpot_s"] > 0.03


def test_ttft_is_one_request_not_the_batch():
    wl = {"model": "llama3-8b", "precision": "fp8", "tp": 1, "pp": 1, "input_tokens": 2048,
          "output_tokens": 128}  # fmt: skip
    cont = perf(**wl)
    static = perf(**{**wl, "scheduler": "static", "batch": cont["batch"]})
    assert cont["batch"] > 100
    assert cont["ttft_s"] < static["ttft_s"] / 20  # the static one prefills the whole batch
    assert cont["ttft_s"] > cont["tpot_s"]  # a request's prefill plus one step of waiting


def test_continuous_beats_static_at_the_same_batch_cap():
    wl = {"model": "llama3-70b", "precision": "fp8", "tp": 4, "pp": 1, "input_tokens": 2048,
          "output_tokens": 512}  # fmt: skip
    assert perf(n=4, **wl)["tokens_per_s"] > perf(n=4, **wl, scheduler="static")["tokens_per_s"]


def test_disaggregated_pools_balance_and_remove_prefill_interference():
    wl = {"model": "llama3-70b", "precision": "fp8", "tp": 2, "pp": 1, "input_tokens": 2048,
          "output_tokens": 256}  # fmt: skip
    co = perf(n=8, **wl)
    dis = perf(n=8, **wl, disaggregated=True)
    assert dis["model_fits"] == 1 and dis["tokens_per_s"] > 0
    assert dis["tpot_s"] < co["tpot_s"]  # decode-only steps
    # The decode pool alone, pure decode, bounds what the balanced pair can give.
    dec = perf(n=8, **{**wl, "phase": "decode"})
    assert dis["tokens_per_s"] < dec["tokens_per_s"]


def test_disaggregation_is_searchable_vectorized():
    d = resolve_context({"gpu": "h100-sxm", "cluster_size": 16,
                         "workload": {"batch": "auto", "disaggregated": True, "tpot_slo_s": 0.05,
                                      "ttft_slo_s": 2.0, "output_tokens": 512}})  # fmt: skip
    d["die_area_mm2"] = np.array([200.0, 400.0, 814.0])
    d["hbm_stacks_per_die"] = np.array([2.0, 4.0, 6.0])
    out = evaluate_perf(d)
    for i in range(3):
        one = dict(d)
        one["die_area_mm2"] = float(d["die_area_mm2"][i])
        one["hbm_stacks_per_die"] = float(d["hbm_stacks_per_die"][i])
        s = evaluate_perf(one)
        for k, v in out.items():
            assert float(s[k]) == pytest.approx(float(v[i]), rel=1e-12), k


def test_mixtral_streams_active_experts_and_fits_on_one_h100():
    r = perf(model="mixtral-8x7b", precision="fp8", tp=1, pp=1, input_tokens=128,
             output_tokens=2048)  # fmt: skip
    assert r["model_fits"] == 1 and r["ep"] == 1
    r2 = perf(n=2, model="mixtral-8x7b", precision="fp8", tp=2, pp=1, input_tokens=128,
              output_tokens=2048)  # fmt: skip
    assert r2["ep"] == 1 and r2["batch"] > r["batch"]  # plain TP2 (workload.ep: 1)


_ISSUE = [
    (m, p, n)
    for m in ("llama3-8b", "llama3-70b", "llama3-405b", "llama2-70b", "mixtral-8x7b")
    for p in ("bf16", "fp8")
    for n in (1, 2, 4, 8)
]


@pytest.mark.parametrize(("model", "precision", "gpus"), _ISSUE)
def test_issue_form_works_for_every_model_precision_and_size(model, precision, gpus):
    """`--set workload.batch=auto --set workload.tp=N --set workload.pp=1`: saturated output
    tokens/s whenever the weights fit the TP group."""
    r = perf("h200", gpus, model=model, precision=precision, tp=gpus, pp=1,
             input_tokens=1000, output_tokens=1000)  # fmt: skip
    assert all(math.isfinite(v) for v in r.values())
    a = arch_of(model_presets()[model])
    weights_gb = a.total_params * (2 if precision == "bf16" else 1) / 1e9
    if weights_gb < 0.8 * 141 * gpus:
        assert r["model_fits"] == 1 and r["tokens_per_s"] > 0 and r["batch"] >= 1
    elif weights_gb > 141 * GIB / 1e9 * gpus:
        assert r["model_fits"] == 0 and r["tokens_per_s"] == 0


def test_disaggregated_design_parameter_varies_per_design():
    """``disaggregated`` is a design parameter too (0/1), so a study can search it: a batch
    mixing both modes equals each design evaluated alone."""
    d = resolve_context({"gpu": "h100-sxm", "cluster_size": 8,
                         "workload": {"batch": "auto", "output_tokens": 256}})  # fmt: skip
    d["die_area_mm2"] = np.array([400.0, 814.0, 400.0, 814.0])
    d["disaggregated"] = np.array([0.0, 0.0, 1.0, 1.0])
    out = evaluate_perf(d)
    for i in range(4):
        one = {**d, "die_area_mm2": float(d["die_area_mm2"][i]),
               "disaggregated": float(d["disaggregated"][i])}  # fmt: skip
        s = evaluate_perf(one)
        for k, v in out.items():
            assert float(s[k]) == pytest.approx(float(v[i]), rel=1e-12), k
    assert out["tpot_s"][3] < out["tpot_s"][1]  # decode-only steps
    wl = {**d["workload"], "disaggregated": True}
    via_workload = evaluate_perf({**d, "die_area_mm2": 814.0, "workload": wl,
                                  "disaggregated": 1.0})  # fmt: skip
    assert float(via_workload["tokens_per_s"]) == pytest.approx(float(out["tokens_per_s"][3]))
    with pytest.raises(Exception, match="disaggregated"):
        evaluate_perf({**d, "disaggregated": 2.0})
