"""A MoE model served or trained with no ``ep`` searches expert parallelism as tp and pp are
searched: the default never ranks a MoE model below its best explicit expert layout."""

from __future__ import annotations

import numpy as np
import pytest

from objectives.perf import evaluate_perf
from objectives.presets import resolve_context, workload_defaults


def _run(gpu: str, wl: dict, cluster: int = 64) -> dict:
    return evaluate_perf(resolve_context({"gpu": gpu, "cluster_size": cluster, "workload": wl}))


def test_ep_defaults_to_auto():
    assert workload_defaults()["ep"] == "auto"


CASES = [
    ("h100-sxm", {"model": "mixtral-8x7b", "batch": "auto"}),
    ("b200", {"model": "deepseek-v3", "precision": "fp4", "batch": "auto"}),
    ("h200", {"model": "deepseek-v3", "batch": "auto", "tpot_slo_s": 0.05}),
    ("gb200-nvl72", {"model": "qwen3-235b-a22b", "precision": "fp4", "batch": "auto"}),
]


@pytest.mark.parametrize(("gpu", "wl"), CASES, ids=[f"{g}-{w['model']}" for g, w in CASES])
def test_moe_served_without_ep_equals_the_best_explicit_ep(gpu, wl):
    base = {"input_tokens": 1024, "output_tokens": 1024, **wl}
    auto = _run(gpu, base)
    best = -np.inf
    experts = resolve_context({"workload": base})["workload"]["model"]["experts"]
    for ep in (e for e in (1, 2, 4, 8, 16, 32, 64) if e <= experts):
        r = _run(gpu, {**base, "ep": ep})
        ok = float(r["model_fits"]) * float(r["slo_met"])
        if ok:
            best = max(best, float(r["tokens_per_s"]))
    assert np.isfinite(best)
    assert float(auto["tokens_per_s"]) == pytest.approx(best, rel=1e-12)
    pinned = _run(gpu, {**base, "ep": int(auto["ep"])})
    assert float(pinned["tokens_per_s"]) == pytest.approx(float(auto["tokens_per_s"]), rel=1e-12)


def test_moe_trained_without_ep_equals_the_best_explicit_ep():
    base = {"model": "mixtral-8x7b", "phase": "train", "batch": 256, "input_tokens": 4096}
    auto = _run("h100-sxm", base)
    explicit = {ep: _run("h100-sxm", {**base, "ep": ep}) for ep in (1, 2, 4, 8)}
    best = max(float(r["tokens_per_s"]) for r in explicit.values() if float(r["model_fits"]))
    assert float(auto["tokens_per_s"]) == pytest.approx(best, rel=1e-12)
    assert float(auto["tokens_per_s"]) == pytest.approx(
        float(explicit[int(auto["ep"])]["tokens_per_s"]), rel=1e-12
    )


def test_training_ep_divides_the_data_parallel_ranks():
    # 16 GPUs of TP8: two data-parallel ranks, so expert parallelism of 4 or 8 is impossible
    r = _run("h100-sxm", {"model": "mixtral-8x7b", "phase": "train", "batch": 64,
                          "input_tokens": 4096, "tp": 8, "pp": 1}, cluster=16)  # fmt: skip
    assert float(r["ep"]) in (1.0, 2.0)


def test_dense_model_is_unaffected_by_ep_auto():
    r = _run("h100-sxm", {"model": "llama3-70b", "batch": "auto"})
    assert float(r["ep"]) == 1.0
    assert float(r["tokens_per_s"]) == float(
        _run("h100-sxm", {"model": "llama3-70b", "batch": "auto", "ep": 1})["tokens_per_s"]
    )


def test_vectorized_equals_scalar_with_ep_auto():
    wl = {"model": "mixtral-8x7b", "batch": "auto"}
    d = resolve_context({"gpu": "h100-sxm", "workload": wl})
    sizes = np.array([8.0, 16.0, 64.0, 256.0])
    many = evaluate_perf({**d, "cluster_size": sizes})
    for i, n in enumerate(sizes):
        one = evaluate_perf({**d, "cluster_size": n})
        assert float(many["tokens_per_s"][i]) == float(one["tokens_per_s"])
        assert float(many["ep"][i]) == float(one["ep"])
