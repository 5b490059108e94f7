"""Today's MoE models: published sizes, MLA's compressed KV, expert parallelism's all-to-all."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from objectives.errors import ContextError
from objectives.perf import evaluate_perf
from objectives.perf.model import arch_of
from objectives.perf.moe import dispatch_bytes_per_token, kv_elems_per_gpu
from objectives.perf.network import a2a_hops, all_to_all_s
from objectives.presets import model_presets, resolve_context

MOE = ["deepseek-v3", "qwen3-235b-a22b", "llama4-maverick", "llama4-scout", "gpt-oss-120b"]


@pytest.mark.parametrize("name", MOE)
def test_architecture_gives_the_published_parameter_counts(name):
    m = model_presets()[name]
    a = arch_of(m)
    # total within 2 % (Scout's 109 B includes its vision encoder: 1.1 % off)
    assert a.total_params / 1e9 == pytest.approx(m["params_b"], rel=0.02)
    # activated within 12 %: model cards differ on counting the embedding and LM head
    active = a.layers * a.layer_active_params + 2 * a.embedding_params
    assert active / 1e9 == pytest.approx(m["active_params_b"], rel=0.12)


def test_deepseek_v3_by_hand():
    a = arch_of(model_presets()["deepseek-v3"])
    h = 7168
    attn = h * 1536 + 1536 * 128 * 192 + h * 576 + 512 * 128 * 256 + 128 * 128 * h
    expert = 3 * h * 2048
    moe_layer = attn + 257 * expert + h * 256
    dense_layer = attn + 3 * h * 18432
    total = 58 * moe_layer + 3 * dense_layer + 2 * 129280 * h
    assert a.total_params == pytest.approx(total, rel=1e-12)
    # MLA caches one 512-wide latent and a 64-wide rotary key per token and layer, shared by
    # the 128 heads: 576 elements, against 2 x 128 x 192 = 49,152 for full multi-head K/V
    assert a.kv_elems_per_token_layer == 576
    # under TP every GPU keeps the whole latent; attention data parallelism splits sequences
    assert kv_elems_per_gpu(a, 8.0) == 576


def test_dispatch_bytes_per_token_by_hand():
    a = arch_of(model_presets()["deepseek-v3"])
    # 8 of 256 experts, 32 per GPU on 8 GPUs: P(another GPU holds none) = C(224, 8) / C(256, 8)
    none = np.prod([(224 - i) / (256 - i) for i in range(8)])
    dest = 7 * (1 - none)  # expected other GPUs a token goes to (~4.5)
    assert float(dispatch_bytes_per_token(a, 8.0, 2.0)) == pytest.approx(dest * 7168 * 2)
    assert 4.0 < dest < 5.0
    assert float(dispatch_bytes_per_token(a, 1.0, 2.0)) == 0.0  # nothing leaves one GPU
    # every expert on its own GPU: a token reaches its 8 experts' 8 GPUs, unless one is local
    assert float(dispatch_bytes_per_token(a, 256.0, 1.0)) == pytest.approx(
        255 * (1 - np.prod([(255 - i) / (256 - i) for i in range(8)])) * 7168
    )


def _torus_mean_and_longest(side: int, dims: int) -> tuple[float, int]:
    """Mean and longest shortest-path distance on a side^dims torus, by enumeration."""
    nodes = list(itertools.product(range(side), repeat=dims))
    dist = [sum(min(c, side - c) for c in node) for node in nodes if any(node)]
    return sum(dist) / len(dist), max(dist)


def test_all_to_all_time_on_a_switch_a_ring_and_a_torus():
    nbytes, bw, alpha = 4.0e6, 400e9, 2e-6
    switch = {"torus_dims": np.array(0.0), "alpha_s": np.array(alpha)}
    assert float(all_to_all_s(nbytes, 8.0, bw, 0.0, switch)) == pytest.approx(nbytes / bw + alpha)
    ring_mean, ring_longest = _torus_mean_and_longest(8, 1)  # 16/7, 4
    ring = {"torus_dims": np.array(1.0), "alpha_s": np.array(alpha)}
    assert float(all_to_all_s(nbytes, 8.0, bw, 0.0, ring)) == pytest.approx(
        nbytes * ring_mean / bw + ring_longest * alpha
    )
    cube_mean, cube_longest = _torus_mean_and_longest(4, 3)  # 4 x 4 x 4: 192/63, 6
    torus = {"torus_dims": np.array(3.0), "alpha_s": np.array(alpha)}
    assert float(all_to_all_s(nbytes, 64.0, bw, 0.0, torus)) == pytest.approx(
        nbytes * cube_mean / bw + cube_longest * alpha
    )
    hops, longest = a2a_hops(np.array([8.0, 64.0]), {"torus_dims": np.array([1.0, 3.0])})
    np.testing.assert_allclose(hops, [16 / 7, 192 / 63])
    np.testing.assert_allclose(longest, [4, 6])
    assert float(all_to_all_s(nbytes, 1.0, bw, alpha)) == 0.0


def _ds(ep: object, fabric: str = "auto", **wl: object) -> dict:
    return resolve_context(
        {
            "gpu": "b200",
            "cluster_size": 8,
            "scaleup_fabric": fabric,
            "workload": {
                "model": "deepseek-v3",
                "precision": "fp4",
                "ep": ep,
                "tp": 8,
                "pp": 1,
                "batch": 256,
                "input_tokens": 1024,
                "output_tokens": 2048,
                **wl,
            },
        }
    )


def test_expert_parallelism_splits_the_mla_cache_and_pays_its_all_to_all_on_the_fabric():
    tp8 = evaluate_perf(_ds(1))
    ep8 = evaluate_perf(_ds(8, attention_dp=True))
    assert float(ep8["ep"]) == 8 and float(tp8["ep"]) == 1
    # the MLA latent is replicated on all 8 GPUs under TP, split by sequence under EP + ADP:
    # the same 256 sequences take far less HBM
    assert float(ep8["memory_used_fraction"]) < float(tp8["memory_used_fraction"])
    # a direct 3D torus of 8 copper-linked GPUs: the all-to-all crosses more links than on
    # the NVLink switch, so the same step takes longer
    on_torus = evaluate_perf(_ds(8, fabric="direct", attention_dp=True))
    assert float(on_torus["tpot_s"]) > float(ep8["tpot_s"])


def test_ep_auto_searches_and_bad_ep_is_refused():
    auto = evaluate_perf(_ds("auto"))
    assert float(auto["ep"]) in (1, 2, 4, 8)
    with pytest.raises(ContextError, match="workload.ep.*dense"):
        evaluate_perf(
            resolve_context({"workload": {"model": "llama3-70b", "ep": 2}, "cluster_size": 8})
        )
    with pytest.raises(ContextError, match="workload.ep.*divide"):
        evaluate_perf(_ds(16, tp=8))


def test_moe_batch_vectorized_equals_each_alone():
    d = _ds("auto", batch="auto")
    batch = {
        **d,
        "die_area_mm2": np.array([600.0, 800.0, 800.0]),
        "cluster_size": np.array([8, 8, 16]),
    }
    both = evaluate_perf(batch)
    for i in range(3):
        one = {
            **d,
            "die_area_mm2": float(batch["die_area_mm2"][i]),
            "cluster_size": int(batch["cluster_size"][i]),
        }
        alone = evaluate_perf(one)
        for k, v in alone.items():
            assert float(both[k][i]) == pytest.approx(float(v), rel=1e-12, abs=1e-12), (i, k)


def _mtp(model: str, n: int, p: float, **wl: object) -> dict:
    work = {"model": model, "precision": "fp8", "tp": 1, "pp": 1, "batch": 1,
            "input_tokens": 1024, "output_tokens": 1024, "mtp_tokens": n, "mtp_acceptance": p,
            **wl}  # fmt: skip
    return evaluate_perf(resolve_context({"gpu": "h200", "cluster_size": 1, "workload": work}))


def test_multi_token_prediction_divides_the_step_by_the_accepted_tokens():
    from objectives.perf.serving import Serving

    s = Serving(1.0, 1, 1, "decode", mtp_tokens=3, mtp_acceptance=0.85)
    assert s.tokens_per_step == pytest.approx(1 + 0.85 + 0.85**2 + 0.85**3)
    base = float(_mtp("llama3-8b", 0, 0.85)["tpot_s"])
    # a dense 8B decoding one sequence streams its weights once per step whether it verifies
    # one token or two: with every draft accepted a step yields 2 tokens for about one step
    # plus one layer's draft pass
    sure = float(_mtp("llama3-8b", 1, 1.0)["tpot_s"])
    assert sure == pytest.approx(base * (1 + 1 / 32) / 2, rel=0.03)
    # drafts never accepted cost their pass and verification for nothing
    assert float(_mtp("llama3-8b", 1, 0.0)["tpot_s"]) > base
    with pytest.raises(ContextError, match="workload.mtp_tokens"):
        _mtp("llama3-8b", 1, 0.9, scheduler="static")
