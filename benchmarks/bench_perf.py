"""Designs evaluated per second by the perf evaluator: 10^6 random designs in one call.

Run: ``python benchmarks/bench_perf.py [n_designs]``. The parallelism search (tp x pp, 35
candidates for Llama 3 70B at a fixed batch) is part of every design's evaluation.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from objectives.perf import evaluate_perf
from objectives.presets import resolve_context


def random_designs(n: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    d = resolve_context({"gpu": "h100-sxm", "workload": {"model": "llama3-70b"}})
    d.update(
        die_area_mm2=rng.uniform(100, 858, n),
        die_aspect_ratio=rng.uniform(1, 2, n),
        hbm_stacks_per_die=rng.integers(1, 9, n).astype(float),
        hbm_tbps_per_stack=rng.choice([0.67, 0.8, 1.2], n),
        hbm_gb_per_stack=rng.choice([16, 24, 36], n).astype(float),
        links_per_gpu=rng.integers(4, 37, n).astype(float),
        optics_per_link=rng.choice([1, 2, 4, 8], n).astype(float),
        lane_gbps=rng.choice([100, 200], n).astype(float),
        link_type=rng.choice(["electrical", "pluggable", "cpo"], n),
        clock_ghz=rng.uniform(1.2, 2.2, n),
        cluster_size=np.round(np.exp(rng.uniform(np.log(8), np.log(4096), n))),
    )
    return d


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    d = random_designs(n)
    t0 = time.perf_counter()
    out = evaluate_perf(d)
    dt = time.perf_counter() - t0
    finite = all(bool(np.isfinite(v).all()) for v in out.values())
    fits = float(out["model_fits"].mean())
    print(
        f"perf: {n} designs in {dt:.2f} s = {n / dt:,.0f} designs/s "
        f"({len(out)} metrics, all finite: {finite}, model fits in {fits:.0%})"
    )


if __name__ == "__main__":
    main()
