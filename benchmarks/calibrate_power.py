"""Fit the serving-power constants on measured GPU power of LLM serving on H100.

The model's package power (objectives/perf/power.py ``gpu_power_w``) is leakage + dynamic power
at activity = floor + (1 - floor) x min(1, tensor utilization / utilization at full power), plus
HBM energy per bit moved and link power, behind the VRM. Two constants set how much a serving
GPU draws: ``compute_busy_activity_floor`` and ``compute_utilization_at_full_power``
(objectives/presets/technology/performance.yaml). Everything else in it is fixed by the
datasheet TDP (700 W at full load) and the other presets.

POWER FIT SET, declared 2026-11-30 before fitting, disjoint from the energy rows 178-180 of
benchmarks/validate_perf.py: the ML.ENERGY leaderboard v3 H100 runs (vLLM 0.11.1, lm-arena-chat
task, GPU power from NVML averaged over the steady state) of Llama-3.1-70B-Instruct (TP4 bf16),
Llama-3.3-70B-Instruct (TP4 bf16) and Llama-3.1-405B-Instruct-FP8 (TP8 fp8), every max_num_seqs
published (ml-energy/leaderboard @ 0cd52dab public/data/models/meta-llama__{Llama-3.1-70B-
Instruct,Llama-3.3-70B-Instruct,Llama-3.1-405B-Instruct-FP8}__lm-arena-chat.json, fields
num_gpus, max_num_seqs, avg_batch_size, avg_output_len, avg_power_watts (all GPUs together),
output_throughput_tokens_per_sec). Llama-3.1-8B-Instruct is left out on purpose: validation row
180 is its max_num_seqs 64 run. Conditions as row 180: the running batch is the published
average, answers the published mean, prompts 1,000 tokens (the mean prompt is not published);
a row is used when the model's KV cache holds that batch (at 1,000-token prompts the larger
batches do not fit, so the model has no operating point for them).

What is compared: the measured average power per GPU with the model's package power at the
MEASURED rate of work, i.e. the model's FLOPs and HBM bytes per output token (from its operating
point at that batch) times the measured output tokens/s. The power constants describe the
hardware, so the fit must not absorb the throughput model's error (vLLM runs, not
TensorRT-LLM). Fit: least squares on log(predicted / measured).

    .venv/bin/python benchmarks/calibrate_power.py          # fit, print rows and constants
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import validate_perf as vp  # noqa: E402

FLOOR, AT_FULL = "compute_busy_activity_floor", "compute_utilization_at_full_power"
PROMPT_TOKENS = 1000  # as validation row 180 (ML.ENERGY publishes no mean prompt length)
SOURCE = "ML.ENERGY leaderboard v3 (ml-energy/leaderboard @ 0cd52dab), H100, vLLM 0.11.1"


@dataclass(frozen=True)
class PowerRow:
    model: str  # ML.ENERGY model id
    preset: str
    precision: str
    gpus: int  # = tensor parallel
    max_num_seqs: int
    batch: float  # avg_batch_size
    output_tokens: float  # avg_output_len
    power_w: float  # avg_power_watts, all GPUs
    tokens_per_s: float  # output_throughput_tokens_per_sec

    @property
    def w_per_gpu(self) -> float:
        return self.power_w / self.gpus

    def row(self) -> vp.Row:
        return vp.Row(0, "MLE", "h100-sxm", self.gpus, self.gpus, self.preset, self.precision,
                      PROMPT_TOKENS, round(self.output_tokens), self.w_per_gpu, "gpu_w",
                      {"batch": round(self.batch)})  # fmt: skip


def _rows(model: str, preset: str, prec: str, gpus: int, data: str) -> list[PowerRow]:
    out = []
    for line in data.strip().splitlines():
        seqs, b, o, p, t = (float(x) for x in line.split())
        out.append(PowerRow(model, preset, prec, gpus, int(seqs), b, o, p, t))
    return out


#: max_num_seqs, avg_batch_size, avg_output_len, avg_power_watts, output tokens/s (as published,
#: rounded to 0.1).
FIT: tuple[PowerRow, ...] = tuple(
    _rows(
        "Llama-3.1-70B-Instruct",
        "llama3-70b",
        "bf16",
        4,
        """
        8 8.0 350.0 1765.4 469.7
        16 16.0 354.4 1803.8 862.6
        32 31.9 350.6 1794.2 1486.7
        64 63.8 352.0 2001.5 2510.5
        96 95.7 357.5 2101.5 3244.3
        128 127.6 358.9 2183.8 3876.3
        192 191.6 357.2 2293.1 4461.2
        256 255.3 349.0 2354.3 4915.1
        384 383.0 363.9 2343.5 5318.8
        512 510.5 350.1 2492.9 5921.3
        768 766.3 351.4 2535.3 6507.5
        1024 898.5 350.8 2547.5 6827.2""",
    )
    + _rows(
        "Llama-3.3-70B-Instruct",
        "llama3-70b",
        "bf16",
        4,
        """
        8 8.0 408.8 1787.4 464.6
        16 16.0 409.8 1838.8 874.9
        32 31.9 412.9 1895.6 1517.6
        64 63.9 408.8 2108.3 2563.8
        96 95.9 420.3 2223.8 3315.3
        128 127.7 411.4 2351.3 3895.4
        192 191.5 406.4 2461.3 4557.9
        256 255.5 413.3 2519.4 5130.2
        384 382.9 408.3 2510.6 5657.8
        512 510.8 413.6 2490.5 5858.5
        768 724.2 413.4 2546.0 6017.7""",
    )
    + _rows(
        "Llama-3.1-405B-Instruct-FP8",
        "llama3-405b",
        "fp8",
        8,
        """
        8 8.0 365.7 3260.4 233.3
        16 15.9 380.2 3384.3 445.9
        32 31.9 372.1 3744.3 785.7
        64 63.9 359.7 4162.1 1350.2
        96 95.7 368.1 4474.6 1681.6
        128 127.7 360.9 4606.1 1895.9
        192 191.5 359.1 4812.9 2154.5
        256 255.2 367.2 4874.8 2363.4""",
    )
)


def operating_point(r: PowerRow, overrides: dict[str, float] | None = None) -> dict[str, float]:
    """The model at the row's batch, through the public API (as validate_perf evaluates)."""
    return vp.evaluate(r.row(), overrides)


def power_at_measured_rate(r: PowerRow, overrides: dict[str, float] | None = None) -> float:
    """Model package power (W) at the model's work per token done at the measured token rate.

    ``gpu_power_w`` is affine in the activity and in the HBM traffic, so it is rebuilt from the
    model's own power at activity 0 and 1 (two evaluations) and its HBM term: no copy of the
    formula's constants here.
    """
    over = dict(overrides or {})
    m = operating_point(r, over)
    if m["tokens_per_s"] <= 0:
        return math.nan
    scale = r.tokens_per_s / m["tokens_per_s"]
    idle = operating_point(r, {**over, FLOOR: 0.0, AT_FULL: 1e30})["gpu_power_w"]
    full = operating_point(r, {**over, FLOOR: 1.0})["gpu_power_w"]
    d = vp.context(r.row())
    keys = ("hbm_pj_per_bit", "vrm_efficiency", FLOOR, AT_FULL)
    tech = {**{k: float(np.ravel(d["technology"][k])[0]) for k in keys}, **over}
    hbm_w = (
        m["hbm_utilization"]
        * m["hbm_tbps_per_gpu"]
        * 8
        * tech["hbm_pj_per_bit"]
        / tech["vrm_efficiency"]
    )  # fmt: skip  (W: TB/s x bit/B x pJ/bit)
    floor, at_full = tech[FLOOR], tech[AT_FULL]
    busy = min(max(m["compute_utilization"] * scale / at_full, 0.0), 1.0)
    activity = floor + (1 - floor) * busy
    return idle + hbm_w * (scale - 1) + (full - idle) * activity


def errors(consts: dict[str, float], rows: tuple[PowerRow, ...] = FIT) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        p = power_at_measured_rate(r, consts)
        if math.isfinite(p):
            out.append({"row": r, "pred": p, "err": p / r.w_per_gpu - 1})
    return out


def fit(rows: tuple[PowerRow, ...] = FIT) -> dict[str, float]:
    """Least squares on log error over the rows the model can run."""
    from scipy.optimize import least_squares

    base = {FLOOR: 0.35, AT_FULL: 1.0}
    usable = tuple(r for r in rows if operating_point(r)["tokens_per_s"] > 0)

    def resid(x: np.ndarray) -> np.ndarray:
        c = {FLOOR: float(x[0]), AT_FULL: float(x[1])}
        return np.array([math.log1p(e["err"]) for e in errors(c, usable)])

    sol = least_squares(resid, x0=[base[FLOOR], base[AT_FULL]], bounds=([0.0, 0.05], [1.0, 1.0]))
    return {FLOOR: round(float(sol.x[0]), 3), AT_FULL: round(float(sol.x[1]), 3)}


def main() -> None:
    res0 = errors({})
    consts = fit()
    res = errors(consts)
    print(f"fit on {len(res)} rows ({SOURCE}); prompts {PROMPT_TOKENS} tokens")
    for a, b in zip(res0, res, strict=True):
        r = a["row"]
        print(f"  {r.model:28} seqs {r.max_num_seqs:>4} B {r.batch:6.1f} measured "
              f"{r.w_per_gpu:6.1f} W/GPU  preset {a['pred']:6.1f} ({a['err']:+.1%})  "
              f"fitted {b['pred']:6.1f} ({b['err']:+.1%})")  # fmt: skip
    for name, e in (("preset", res0), ("fitted", res)):
        ae = np.abs([x["err"] for x in e])
        print(f"{name}: |error| median {np.median(ae):.1%} max {np.max(ae):.1%}")
    print(consts)


if __name__ == "__main__":
    main()
