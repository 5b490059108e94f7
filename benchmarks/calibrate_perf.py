"""Fit the perf model's efficiency factors.

``--serving`` (the continuous scheduler, the default one): the ``cb_*`` efficiencies are fitted
on the FIT split of benchmarks/validate_perf.py only (TensorRT-LLM perf-overview v0.11.0 and
v0.17 in-flight-batching throughput rows, each under its published engine limits) by coordinate
search on the squared log errors, within the physical ceilings ``CEILING``; the other rows of
that script validate them. Run ``python benchmarks/calibrate_perf.py --serving``
and copy the printed values into objectives/presets/technology/performance.yaml.

``--amd``: ``cb_stack_gemm_efficiency_rocm_vllm`` on the AMD FIT row declared in
benchmarks/validate_perf.py (``AMD_FIT``: the MLPerf v5.1 MI300X llama2-70b Offline row).

``--blackwell``: ``cb_fp4_gemm_efficiency_pytorch``, ``cb_fp4_gemm_efficiency`` and
``cb_ep_gemm_efficiency`` on the Blackwell / MoE FIT rows declared in
benchmarks/validate_perf.py (``BLACKWELL_MOE_FIT``: one FP4 row per software stack), one row each.

Without ``--serving`` (the static scheduler): the TensorRT-LLM 0.5.0 case
(NVIDIA/TensorRT-LLM release/0.5.0 docs/source/performance.md).

LLaMA-70B (Llama 2) FP8 on 4x H100 SXM, TP4, static batch 64; four input/output lengths. The
fixed priors (attention compute efficiency, per-layer overhead) stay at their preset values;
the three free factors are fitted by coordinate search minimizing the worst relative error:

- gemm_compute_efficiency: the prefill share (2048-token prompts);
- gemm_memory_efficiency: the context-independent decode step (128/128);
- attention_memory_efficiency: the growth of the decode step with context (x/2048 cases).

Run: ``python benchmarks/calibrate_perf.py`` and copy the printed values into
objectives/presets/technology/performance.yaml.
"""

from __future__ import annotations

import sys

import numpy as np

from objectives.perf import evaluate_perf
from objectives.presets import resolve_context

# (input tokens, output tokens) -> published output tokens/s (TensorRT-LLM 0.5.0 performance.md)
CASES: dict[tuple[int, int], float] = {
    (128, 128): 3317.0,
    (128, 2048): 2616.0,
    (2048, 128): 843.0,
    (2048, 2048): 1583.0,
}
FREE = ("gemm_compute_efficiency", "gemm_memory_efficiency", "attention_memory_efficiency")


def predict(overrides: dict[str, float] | None = None) -> dict[tuple[int, int], float]:
    """Predicted output tokens/s of the four cases."""
    out = {}
    for (n_in, n_out), _ in CASES.items():
        d = resolve_context(
            {
                "gpu": "h100-sxm",
                "cluster_size": 4,
                "workload": {
                    "model": "llama2-70b",
                    "precision": "fp8",
                    "tp": 4,
                    "pp": 1,
                    "batch": 64,
                    "scheduler": "static",
                    "input_tokens": n_in,
                    "output_tokens": n_out,
                },
            }
        )
        d["technology"].update(overrides or {})
        out[(n_in, n_out)] = float(evaluate_perf(d)["tokens_per_s"])
    return out


def worst_error(overrides: dict[str, float]) -> float:
    pred = predict(overrides)
    return max(abs(pred[c] / ref - 1) for c, ref in CASES.items())


def log_error(overrides: dict[str, float]) -> float:
    pred = predict(overrides)
    return float(sum(np.log(pred[c] / ref) ** 2 for c, ref in CASES.items()))


def fit(rounds: int = 12) -> dict[str, float]:
    """Coordinate search on the squared log errors, with a shrinking multiplicative step."""
    tech = resolve_context({"gpu": "h100-sxm"})["technology"]
    x = {k: float(tech[k]) for k in FREE}
    span = 0.5
    for _ in range(rounds):
        for k in FREE:
            grid = x[k] * np.exp(np.linspace(-span, span, 21))
            errs = [log_error({**x, k: float(g)}) for g in grid]
            x[k] = float(grid[int(np.argmin(errs))])
        span *= 0.7
    return x


SERVING_FREE = (
    "cb_gemm_compute_efficiency",
    "cb_gemm_memory_efficiency",
    "cb_attention_memory_efficiency",
    "cb_layer_overhead_s",
    "cb_moe_gemm_efficiency",
)


#: Physical ceilings of the fitted constants (declared before the fit they bound was run):
#: no kernel streams HBM faster than ~90 % of the datasheet bandwidth (achievable-bandwidth
#: microbenchmarks reach 85-92 %) (E); a decoder layer of a CUDA-graph engine step is ~12
#: kernels, each gap <= ~4 us, so its fixed cost is <= 50 us (E). Without them the fit runs to
#: memory efficiency 1.0 and ~0.2 ms per layer, which trades one for the other.
CEILING = {
    "cb_gemm_compute_efficiency": 1.0,
    "cb_gemm_memory_efficiency": 0.9,
    "cb_attention_memory_efficiency": 0.9,
    "cb_layer_overhead_s": 50e-6,
    "cb_moe_gemm_efficiency": 1.0,
}


def fit_serving(rounds: int = 10) -> dict[str, float]:
    """Coordinate search of the cb_* constants on the FIT rows only, within ``CEILING``.

    Each row runs under its published engine limits (``Row.tech`` of validate_perf.py).
    """
    import validate_perf as vp

    rows = [r for r in vp.ROWS if r.split == "fit"]
    tech = resolve_context({"gpu": "h100-sxm"})["technology"]
    x = {k: float(tech[k]) for k in SERVING_FREE}

    def loss(over: dict[str, float]) -> float:
        errs = [np.log(vp.predicted(r, vp.evaluate(r, over)) / r.value) for r in rows]
        return float(np.sum(np.square(errs)))

    span = 0.6
    for _ in range(rounds):
        for k in SERVING_FREE:
            grid = x[k] * np.exp(np.linspace(-span, span, 13))
            grid = grid[grid <= CEILING[k]]
            errs = [loss({**x, k: float(g)}) for g in grid]
            x[k] = float(grid[int(np.argmin(errs))])
        span *= 0.7
    print(f"fit rows: {[r.row for r in rows]}; loss {loss(x):.4f}")
    return x


def fit_blackwell() -> dict[str, float]:
    """Blackwell / MoE factors on validate_perf.BLACKWELL_MOE_FIT (declared there before the
    fit), one row each and in order: cb_fp4_gemm_efficiency_pytorch from row 74 (dense FP4 on
    the PyTorch backend, no expert parallelism), cb_fp4_gemm_efficiency from row 156 (dense FP4
    in TensorRT engines, MLPerf), then cb_ep_gemm_efficiency from row 130 (PyTorch backend)
    given the first. Each is the bisection root of the row's error, within (0.05, 1]."""
    import validate_perf as vp

    fit = {(r.row, r.src): r for r in vp.ROWS if r.split == "fit" and r.section}
    keys = ("cb_fp4_gemm_efficiency_pytorch", "cb_fp4_gemm_efficiency", "cb_ep_gemm_efficiency")
    x: dict[str, float] = {}
    for row, key in zip((fit[k] for k in vp.BLACKWELL_MOE_FIT), keys, strict=True):
        lo, hi = 0.05, 1.0
        for _ in range(30):
            mid = (lo + hi) / 2
            err = vp.predicted(row, vp.evaluate(row, {**x, key: mid})) / row.value - 1
            lo, hi = (lo, mid) if err > 0 else (mid, hi)
        x[key] = round((lo + hi) / 2, 4)
        err = vp.predicted(row, vp.evaluate(row, x)) / row.value - 1
        print(f"row {row.row}: {key} = {x[key]} (error {err:+.2%})")
    return x


def fit_amd() -> dict[str, float]:
    """cb_stack_gemm_efficiency_rocm_vllm on validate_perf.AMD_FIT (declared there before the
    fit): the bisection root of row 301's error, within (0.05, 1.5]."""
    import validate_perf as vp

    (row,) = (r for r in vp.ROWS if (r.row, r.src) in vp.AMD_FIT)
    key = "cb_stack_gemm_efficiency_rocm_vllm"
    lo, hi = 0.05, 1.5
    for _ in range(30):
        mid = (lo + hi) / 2
        err = vp.predicted(row, vp.evaluate(row, {key: mid})) / row.value - 1
        lo, hi = (lo, mid) if err > 0 else (mid, hi)
    x = {key: round((lo + hi) / 2, 4)}
    err = vp.predicted(row, vp.evaluate(row, x)) / row.value - 1
    print(f"row {row.row}: {key} = {x[key]} (error {err:+.2%})")
    return x


if __name__ == "__main__" and "--amd" in sys.argv:
    for k, v in fit_amd().items():
        print(f"  {k}: {v}")
elif __name__ == "__main__" and "--blackwell" in sys.argv:
    for k, v in fit_blackwell().items():
        print(f"  {k}: {v}")
elif __name__ == "__main__" and "--serving" in sys.argv:
    best = fit_serving()
    for k, v in best.items():
        print(f"  {k}: {v:.4g}")
elif __name__ == "__main__":
    print("before:", {c: round(v) for c, v in predict().items()})
    best = fit()
    print("fitted:", {k: round(v, 3) for k, v in best.items()})
    pred = predict(best)
    for c, ref in CASES.items():
        print(
            f"  {c[0]:>5}/{c[1]:<5} published {ref:7.0f}  model {pred[c]:7.0f}  "
            f"error {pred[c] / ref - 1:+.1%}"
        )
