"""GEMM throughput at the shapes the serving model's published rows run, for a GPU session.

Why: the continuous-batching model times a layer's GEMMs at one fitted efficiency
(``cb_gemm_compute_efficiency``), the same at 200 tokens per step as at 16,000 and on a TP8
slice (N = 1,280 columns) as on a whole matrix. Tile and wave quantization (NVIDIA Matrix
Multiplication Background guide, DU-09799-001, s3) say otherwise. Round 7 tried a fixed
128 x 128 tile in whole waves over the SMs, refitted on the FIT rows: the fit loss fell 10 %
and validation p90 went from 45.3 to 41.5 %, but decode at batch 4 turned compute-bound (Triton
row 56's TPOT +31 %, was 0 %), where cuBLASLt switches to split-K kernels; not adopted. What the
library really achieves per shape is a measurement, outside both the fit and the validation
rows: this script prepares it (here) and makes it (on a GPU).

Two steps:

* ``python benchmarks/gemm_shapes.py shapes`` (here; reads the model): the per-GPU GEMMs of
  every continuous-batching row of benchmarks/validate_perf.py at the model's operating point
  (tokens per step from its solved batch, N and K of the row's tensor-parallel slice, QKV, O,
  gate+up and down; a mixture of experts' expert GEMMs at their routed tokens), plus a grid
  over tokens per step for Llama 3 8B and 70B at TP 1-8, in the row's precision. Writes
  ``benchmarks/gemm_shapes.json`` (committed, so a GPU session needs nothing but PyTorch).
* ``python3 benchmarks/gemm_shapes.py measure --out DIR`` (on the GPU; PyTorch only): times
  every shape (CUDA events, median of 10 after 3 warm-ups, random data) with ``torch.matmul``
  in bf16 and ``torch._scaled_mm`` in fp8 (e4m3, per-tensor scales, bf16 out: TensorRT-LLM's
  FP8 GEMMs are cuBLASLt's), and writes ``DIR/gemm_shapes.csv``: shape, seconds, TFLOP/s.
  fp8 needs every dimension a multiple of 16, so M is padded up; the CSV gives both.

    python benchmarks/gemm_shapes.py shapes
    python3 benchmarks/gemm_shapes.py measure --out "$OUT"      # device session, ~1 min
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHAPES = ROOT / "benchmarks" / "gemm_shapes.json"
GRID_TOKENS = (1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048,
               3072, 4096, 6144, 8192, 12288, 16384)  # fmt: skip


def layer_gemms(model: dict[str, Any], tp: int, tokens: float) -> list[dict[str, Any]]:
    """The per-GPU GEMMs of one layer over ``tokens`` rows (as objectives.perf.serving)."""
    hd = model["hidden"] // model["heads"]
    q = model["heads"] * hd // tp
    kv = max(model["kv_heads"] // tp, 1) * hd
    f = model["ffn"] // tp
    up = (model.get("ffn_matrices", 3) - 1) * f
    experts, k = model.get("experts", 1), model.get("experts_per_token", 1)
    m = max(1, math.ceil(tokens))
    # routed tokens per expert, with every expert touched (uniform top-k) at these batches
    me = max(1, math.ceil(tokens * k / experts)) if experts > 1 else m
    return [
        {"gemm": "qkv", "M": m, "N": q + 2 * kv, "K": model["hidden"]},
        {"gemm": "o", "M": m, "N": model["hidden"], "K": q},
        {"gemm": "gate_up", "M": me, "N": up, "K": model["hidden"]},
        {"gemm": "down", "M": me, "N": model["hidden"], "K": f},
    ]


def shapes() -> list[dict[str, Any]]:
    """Every row's GEMMs at its operating point, then the grid (deduplicated, in order)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import validate_perf as vp

    from objectives.presets import resolve_context

    out: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()

    def add(item: dict[str, Any]) -> None:
        key = (item["dtype"], item["M"], item["N"], item["K"])
        if key not in seen:
            seen.add(key)
            out.append(item)

    for r in vp.ROWS:
        if r.group != "continuous" or r.kind != "tput":
            continue
        m = vp.evaluate(r)
        model = vp.context(r)["workload"]["model"]
        tp = int(m["tp"])
        step_tokens = m["batch"] / m["pp"] * (1 + r.isl / r.osl)  # decode + prefill per step
        for g in layer_gemms(model, tp, step_tokens):
            add({**g, "dtype": r.precision, "source": f"row {r.row}", "tp": tp})
    for name in ("llama3-8b", "llama3-70b"):
        model = resolve_context({"workload": {"model": name}})["workload"]["model"]
        for dtype in ("fp8", "bf16"):
            for tp in (1, 2, 4, 8):
                for t in GRID_TOKENS:
                    for g in layer_gemms(model, tp, t):
                        add({**g, "dtype": dtype, "source": f"grid {name}", "tp": tp})
    return out


def measure(items: list[dict[str, Any]], out_dir: Path) -> Path:
    import torch

    dev = torch.device("cuda")
    rows = []
    for it in items:
        m, n, k = it["M"], it["N"], it["K"]
        fp8 = it["dtype"] == "fp8"
        mp = -(-m // 16) * 16 if fp8 else m
        a = torch.randn(mp, k, device=dev, dtype=torch.bfloat16)
        b = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        if fp8:
            a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
            one = torch.ones((), device=dev)

            def run(a8=a8, b8=b8, one=one) -> Any:
                return torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one,
                                        out_dtype=torch.bfloat16)  # fmt: skip
        else:

            def run(a=a, b=b) -> Any:
                return torch.matmul(a, b.t())

        for _ in range(3):
            run()
        times = []
        for _ in range(10):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        t = sorted(times)[len(times) // 2]
        rows.append({**it, "M_run": mp, "seconds": t, "tflops": 2 * m * n * k / t / 1e12,
                     "device": torch.cuda.get_device_name()})  # fmt: skip
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "gemm_shapes.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("shapes", help="write benchmarks/gemm_shapes.json from the model (here)")
    me = sub.add_parser("measure", help="time every shape on the GPU (PyTorch only)")
    me.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if args.cmd == "shapes":
        items = shapes()
        lines = ",\n".join(json.dumps(it) for it in items)  # a shape a line: readable diffs
        SHAPES.write_text(f"[\n{lines}\n]\n", encoding="utf-8")
        print(f"wrote {len(items)} shapes to {SHAPES.relative_to(ROOT)}")
    else:
        items = json.loads(SHAPES.read_text(encoding="utf-8"))
        print(f"wrote {measure(items, args.out)}")


if __name__ == "__main__":
    main()
