"""Weight-only quantization (``workload.weight_precision``): the layers' weights are held and
read at their stored width, the GEMMs run at ``precision``'s rate, embeddings stay wide."""

from __future__ import annotations

import math

import numpy as np
import pytest

from objectives.errors import ContextError
from objectives.perf import evaluate_perf
from objectives.perf.model import arch_of
from objectives.perf.serving import Serving, weights_and_kv_token
from objectives.perf.workload import PRECISION_BYTES, serving_of
from objectives.presets import model_presets, resolve_context

GIB = 1.073741824e9
W70 = {"model": "llama3-70b", "batch": "auto", "phase": "serve", "tp": 1, "pp": 1,
       "input_tokens": 128, "output_tokens": 2048}  # fmt: skip


def perf(gpu: str = "h100-sxm", n: int = 1, **wl) -> dict[str, float]:
    d = resolve_context({"gpu": gpu, "cluster_size": n, "workload": wl})
    return {k: float(v) for k, v in evaluate_perf(d).items()}


def test_fp4_weights_fit_a_bf16_llama_70b_on_one_h100_by_hand():
    """BF16 Llama 3 70B does not fit one 80 GB H100; with 4.5-bit weights (embedding and LM head
    still BF16) it does, and the KV cache (BF16, as auto gives with BF16 activations) takes 0.9
    of what weights, one 8,192-token step's BF16 activations and the 2 GB reserve leave."""
    bf16 = perf(precision="bf16", **W70)
    w4 = perf(precision="bf16", weight_precision="fp4", **W70)
    assert bf16["model_fits"] == 0 and w4["model_fits"] == 1
    a = arch_of(model_presets()["llama3-70b"])
    weights = a.layers * a.layer_params * 0.5625 + 2 * a.embedding_params * 2.0
    act = 8192 * (a.hidden + 2 * a.ffn) * 2.0
    free = 80 * GIB - weights - act - 2e9
    per_seq = (128 + 2048) * 80 * 2 * 8 * 128 * 2.0
    assert w4["batch"] == math.floor(0.9 * free / per_seq)


def test_weights_per_gpu_by_hand_dense_and_moe():
    """Per-GPU weight bytes: the layers at the stored width over tp, the embedding and LM head
    (two copies on one stage) at the activations'."""
    for name in ("llama3-70b", "deepseek-v3"):
        a = arch_of(model_presets()[name])
        s = Serving(bytes_per_elem=1.0, weight_bytes_per_elem=0.5625, input_tokens=1.0,
                    output_tokens=1.0, phase="serve")  # fmt: skip
        ep = None if a.legacy else 8.0
        w, _ = weights_and_kv_token(a, s, np.array(8.0), np.array(1.0), ep, None, 1.0)
        dense = Serving(bytes_per_elem=1.0, input_tokens=1.0, output_tokens=1.0, phase="serve")
        wd, _ = weights_and_kv_token(a, dense, np.array(8.0), np.array(1.0), ep, None, 1.0)
        emb = 2 * a.embedding_params / 8
        assert float(w) == pytest.approx((float(wd) - emb) * 0.5625 + emb, rel=1e-12)
        if a.legacy:
            assert float(wd) == pytest.approx(
                (a.layers * a.layer_params + 2 * a.embedding_params) / 8
            )


def test_same_rate_fewer_bytes_and_auto_is_identical():
    """Weight-only FP4 keeps the GPU's BF16 rate (Hopper has no FP4 GEMMs and runs none), reads
    fewer bytes per decode step, so TPOT falls at a pinned batch; auto is precision itself."""
    wl = {**W70, "tp": 8, "batch": 16, "input_tokens": 1024, "output_tokens": 1024}
    bf16 = perf(n=8, precision="bf16", **wl)
    w4 = perf(n=8, precision="bf16", weight_precision="fp4", **wl)
    assert w4["tflops_per_gpu"] == bf16["tflops_per_gpu"]
    # at batch 16 a TP8 step is mostly the weights' read (0.28x the bytes); attention over the
    # KV cache, the all-reduces and the fixed overheads are unchanged
    assert 0.28 * bf16["tpot_s"] < w4["tpot_s"] < 0.7 * bf16["tpot_s"]
    assert perf(n=8, precision="bf16", weight_precision="bf16", **wl) == bf16
    assert perf(n=8, precision="bf16", weight_precision="auto", **wl) == bf16
    with pytest.raises(ContextError, match="FP4"):  # FP4 GEMMs still need an FP4 GPU
        perf(n=8, precision="fp4", **wl)


@pytest.mark.parametrize(
    ("wl", "match"),
    [
        ({"precision": "fp8", "weight_precision": "bf16"}, "never wider.*one of fp8, fp4.*'bf16'"),
        ({"precision": "bf16", "weight_precision": "int4"}, "int4"),
        ({"precision": "bf16", "weight_precision": "fp4", "phase": "train"}, "serving format"),
    ],
)
def test_refusals_name_the_field_and_the_choices(wl, match):
    base = {"model": "llama3-70b", "phase": "serve", "input_tokens": 1, "output_tokens": 1}
    with pytest.raises(ContextError, match=match) as e:
        serving_of({**base, **wl})
    assert e.value.path == "workload.weight_precision"


def test_every_width_is_a_precision():
    assert set(PRECISION_BYTES) == {"bf16", "fp8", "fp4"}


def test_only_the_experts_quantized_by_hand():
    """gpt-oss ships its MoE weights in MXFP4 and the rest in BF16 (quantized_weights:
    experts): per GPU at TP1, the layers' attention, router and dense MLPs at 2 bytes, the
    routed and shared experts at 4.5 bits, embeddings and LM head at 2 bytes."""
    for name in ("gpt-oss-120b", "deepseek-v3"):
        a = arch_of(model_presets()[name])
        s = Serving(bytes_per_elem=2.0, weight_bytes_per_elem=0.5625, experts_only=True,
                    input_tokens=1.0, output_tokens=1.0, phase="serve")  # fmt: skip
        w, _ = weights_and_kv_token(a, s, np.array(1.0), np.array(1.0), 1.0, None, 1.0)
        f = a.moe_fraction
        dense = a.attn_params + (1 - f) * a.dense_mlp_params + f * a.router_params
        experts = f * (a.experts + a.shared_experts) * a.expert_params
        want = a.layers * (dense * 2.0 + experts * 0.5625) + 2 * a.embedding_params * 2.0
        assert float(w) == pytest.approx(want, rel=1e-12)
        every = Serving(bytes_per_elem=2.0, weight_bytes_per_elem=0.5625, input_tokens=1.0,
                        output_tokens=1.0, phase="serve")  # fmt: skip
        assert float(w) > float(weights_and_kv_token(a, every, 1.0, 1.0, 1.0, None, 1.0)[0])
