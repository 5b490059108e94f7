"""Eager serving (``workload.cuda_graphs: false``): the host launches every kernel.

Launches are asynchronous, so the host runs ahead of the GPU through the launch queue while
the kernels are long: a step takes max(GPU time, layers x eager_host_s_per_layer), never the
sum. A small batch is host-bound (the floor), a large one GPU-bound (no change).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from objectives.errors import ContextError
from objectives.perf import evaluate_perf
from objectives.perf.serving import Serving, host_bound
from objectives.presets import resolve_context

HOST_S = 2.6e-4  # technology eager_host_s_per_layer (performance.yaml)


def _decode(model: str, tp: int, batch: int, **wl: Any) -> dict[str, float]:
    d = resolve_context({"gpu": "h100-sxm", "cluster_size": 8, "workload": {
        "model": model, "precision": "fp8", "phase": "decode", "tp": tp, "pp": 1,
        "batch": batch, "input_tokens": 128, "output_tokens": 128, **wl}})  # fmt: skip
    m = evaluate_perf(d)
    return {k: float(m[k]) for k in ("tpot_s", "tokens_per_s")}


def test_a_small_batch_is_host_bound_by_hand():
    """Llama-3-8B (32 layers) at batch 1: the GPU reads 8 GB of FP8 weights in ~3 ms, the host
    launches 32 layers in 32 x 0.26 ms = 8.32 ms, and the step takes the host's time."""
    graphs = _decode("llama3-8b", 1, 1)
    eager = _decode("llama3-8b", 1, 1, cuda_graphs=False)
    assert graphs["tpot_s"] < 32 * HOST_S  # the GPU alone is faster than the host
    assert eager["tpot_s"] == pytest.approx(32 * HOST_S, rel=1e-12)
    assert eager["tokens_per_s"] == pytest.approx(8 * 1 / (32 * HOST_S), rel=1e-9)  # 8 replicas


def test_a_large_batch_hides_the_host():
    """Llama-3-70B TP8 at batch 512: each step reads the weights and a large KV cache, far
    longer than 80 x 0.26 ms = 20.8 ms of launches, so eager and graphs are the same."""
    graphs = _decode("llama3-70b", 8, 512)
    eager = _decode("llama3-70b", 8, 512, cuda_graphs=False)
    assert graphs["tpot_s"] > 80 * HOST_S
    assert eager == graphs


def test_the_floor_is_the_longer_not_the_sum_and_broadcasts():
    s = Serving(bytes_per_elem=1.0, input_tokens=128.0, output_tokens=128.0, phase="decode",
                cuda_graphs=False)  # fmt: skip
    d = {"technology": {"eager_host_s_per_layer": HOST_S}}
    gpu = np.array([[1e-3, 1e-2, 3e-2], [5e-3, 2e-2, 4e-2]])
    layers = np.array([[32.0], [80.0]])
    got = host_bound(d, s, layers, gpu)
    want = [[max(g, n * HOST_S) for g in row] for n, row in zip((32, 80), gpu, strict=True)]
    assert np.array_equal(got, want)  # vectorized == scalar, element by element
    for i, n in enumerate((32.0, 80.0)):
        for j in range(3):
            assert host_bound(d, s, n, float(gpu[i, j])) == got[i, j]
    on = Serving(bytes_per_elem=1.0, input_tokens=128.0, output_tokens=128.0, phase="decode")
    assert host_bound(d, on, layers, gpu) is gpu  # graphs (the default): untouched


@pytest.mark.parametrize("bad", ["maybe", 2, 0.5])
def test_bad_value_is_one_line(bad: object):
    with pytest.raises(ContextError, match=r"^workload\.cuda_graphs: "):
        _decode("llama3-8b", 1, 1, cuda_graphs=bad)
