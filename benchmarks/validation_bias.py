"""Does the serving model's validated error favour either side of the Lite-GPU comparison?

Characterizes (fits nothing in the model) the errors of benchmarks/validate_perf.py by where
each step's time goes, then reads off what that pattern implies for the paper's designs.

1. Every continuous-batching throughput row (fit and validation splits: a description of the
   residuals, not a calibration) runs at the batch the model solved for it, pinned, with
   saturated arrivals. Its step time is split into GEMM compute, GEMM weight streaming,
   attention, tensor-parallel all-reduce and the fixed per-layer cost by removing one term at
   a time: the terms add in ``objectives.perf.serving.mixed_step``, so each removal is that
   term's share.
2. log(predicted / published) is regressed on the shares by least squares without an
   intercept (they sum to 1): a coefficient is the log error of a step made only of that term.
   R^2 says how much of the error the shares explain; the residual standard deviation, the
   rest.
3. The paper's headline designs (spaces/paper: the H100 baseline and the Lite dies with the
   shoreline gain and co-packaged optics, plus the quarter die without it; Llama-3-70B, decode
   and prefill) are split the same way at their own operating points, and the regression gives
   the error their shares imply, with its standard error. The Lite / H100 ratio of those
   implied errors is the bias the known error pattern puts into the comparison of tokens/s
   (and so of tokens/J and cost per token, which scale with it).

    .venv/bin/python benchmarks/validation_bias.py
"""

from __future__ import annotations

import copy
import math
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import validate_perf as vp  # noqa: E402

from objectives.perf import evaluate_perf  # noqa: E402
from objectives.presets import resolve_context  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: Technology overrides that make one term of the step free.
FREE = {
    "attention": {"cb_attention_memory_efficiency": 1e9, "cb_attention_compute_efficiency": 1e9},
    "all_reduce": {
        "network_efficiency": 1e9,
        "collective_step_latency_s": 0.0,
        "collective_launch_s": 0.0,
    },
    "overhead": {"cb_layer_overhead_s": 0.0},
    "gemm_memory": {"cb_gemm_memory_efficiency": 1e9},
}
TERMS = ("gemm_compute", "gemm_memory", "attention", "all_reduce", "overhead")
#: Open-system and SLO fields dropped for the split (the step at the solved batch).
_OPEN = ("arrivals", "slo_percentile", "input_tokens_cv", "output_tokens_cv", "ttft_slo_s",
         "tpot_slo_s", "arrival_rate_per_s", "latency_statistic")  # fmt: skip
DESIGNS = (
    ("h100", None),
    ("lite-half-shoreline", "cpo"),
    ("lite-quarter-shoreline", "cpo"),
    ("lite-eighth-shoreline", "cpo"),
    ("lite-quarter", "cpo"),
)


def shares(step: Callable[[dict[str, float]], float]) -> np.ndarray:
    """The step's shares of ``TERMS`` (``step(overrides)`` is the step time in seconds)."""
    base = step({})
    less = {k: (base - step(v)) / base for k, v in FREE.items()}
    rest = 1.0 - sum(less.values())
    return np.array([rest, less["gemm_memory"], less["attention"], less["all_reduce"],
                     less["overhead"]])  # fmt: skip


def _row_step(r: Any, batch: float) -> Callable[[dict[str, float]], float]:
    wl = {k: v for k, v in r.wl.items() if k not in _OPEN}
    wl["batch"] = batch

    def step(over: dict[str, float]) -> float:
        d = vp.context(replace(r, wl=wl))
        d["technology"].update(r.tech)
        d["technology"].update(over)
        return float(evaluate_perf(d)["step_s"])

    return step


def rows() -> tuple[np.ndarray, np.ndarray, list[Any]]:
    """Shares and log errors of every continuous throughput row."""
    x, y, used = [], [], []
    for r in vp.ROWS:
        if r.group != "continuous" or r.kind != "tput":
            continue
        m = vp.evaluate(r)
        x.append(shares(_row_step(r, max(1, math.floor(m["batch"])))))
        y.append(math.log(vp.predicted(r, m) / r.value))
        used.append(r)
    return np.array(x), np.array(y), used


def regress(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    beta = np.linalg.lstsq(x, y, rcond=None)[0]
    resid = y - x @ beta
    s2 = float(resid @ resid / (len(y) - len(beta)))
    cov = s2 * np.linalg.inv(x.T @ x)
    r2 = 1 - float(resid @ resid) / float(np.sum((y - y.mean()) ** 2))
    return {"beta": beta, "cov": cov, "sd": math.sqrt(s2), "r2": r2}


def design_shares(name: str, link: str | None, phase: str) -> tuple[np.ndarray, dict[str, float]]:
    spec = yaml.safe_load((ROOT / "spaces" / "paper" / f"{name}.yaml").read_text())
    fixed = copy.deepcopy(spec["fixed"])
    if link is not None:
        fixed["link_type"] = link
    fixed["workload"]["phase"] = phase
    m = evaluate_perf(resolve_context(copy.deepcopy(fixed)))
    op = {"batch": float(m["batch"]), "tp": int(m["tp"]), "pp": int(m["pp"])}
    fixed["workload"].update(op)

    def step(over: dict[str, float]) -> float:
        d = resolve_context(copy.deepcopy(fixed))
        d["technology"].update(over)
        return float(evaluate_perf(d)["step_s"])

    return shares(step), op


def main() -> None:
    x, y, used = rows()
    fit = regress(x, y)
    print(f"{len(y)} continuous throughput rows; R^2 {fit['r2']:.2f}; residual sd "
          f"{fit['sd']:.3f} (log)")  # fmt: skip
    print("coefficient = log error of a step made only of that term:")
    for name, b, v in zip(TERMS, fit["beta"], np.diag(fit["cov"]), strict=True):
        print(f"  {name:13} {b:+.3f} +/- {math.sqrt(v):.3f}   (x{math.exp(b):.2f})")
    print(
        f"mean shares over the rows: {dict(zip(TERMS, np.round(x.mean(axis=0), 3), strict=True))}"
    )
    print("\nper row: shares " + " / ".join(TERMS) + ", error, error the shares imply")
    for r, xi, yi in zip(used, x, y, strict=True):
        print(f"  {r.row:>4} {r.split[:3]} {r.gpu:9} tp {str(r.tp):4} {np.round(xi, 2)} "
              f"{math.exp(yi) - 1:+7.1%} {math.exp(xi @ fit['beta']) - 1:+7.1%}")  # fmt: skip

    print("\nthe paper's designs (Llama-3-70B, spaces/paper), at their operating points:")
    implied: dict[tuple[str, str], tuple[float, float]] = {}
    for phase in ("decode", "prefill"):
        for name, link in DESIGNS:
            s, op = design_shares(name, link, phase)
            b = float(s @ fit["beta"])
            se = math.sqrt(float(s @ fit["cov"] @ s))
            implied[(name, phase)] = (b, se)
            print(f"  {name:23} {phase:7} tp {op['tp']} pp {op['pp']} batch {op['batch']:6.0f} "
                  f"shares {np.round(s, 2)} implied error {math.exp(b) - 1:+.1%} "
                  f"(+/- {se:.3f} log)")  # fmt: skip
    print("\nimplied bias of the Lite / H100 tokens/s ratio (x1 = none):")
    for phase in ("decode", "prefill"):
        h = implied[("h100", phase)][0]
        for name, _ in DESIGNS[1:]:
            print(f"  {phase:7} {name:23} x{math.exp(implied[(name, phase)][0] - h):.3f}")


if __name__ == "__main__":
    main()
