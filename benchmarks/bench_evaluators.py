"""Benchmark 1: evaluator throughput, vectorized vs the per-trial scalar path.

Designs/s for ``perf``, ``availability``, ``cost`` (each called as the engine calls it: given
the metrics of the evaluators it ``needs``, computed beforehand and not timed), each one called
alone as a Python user calls it (``fn(design)``: it computes what it needs itself), and all
three through ``StudyModel.evaluate`` (+ constraint violations, as a sweep does), on 10^6
quasi-random designs of the spec's space in chunks, vs the per-trial path (one design per call,
as ``dse run`` evaluates a trial) on a few hundred designs. Single process, one core.

    python benchmarks/bench_evaluators.py [--designs 1000000] [--scalar 300] [--spec ...] [--cpu]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping
from typing import Any

from dse import api
from dse.model.study_model import StudyModel
from dse.search.sweep.sweep import _sample_chunks

#: The clock: wall time, or this process's CPU time (``--cpu``: the per-core figure on a
#: machine busy with other work, where wall time counts the other work's share too).
CLOCK = {"clock": time.perf_counter}


def _rate(fn: Callable[[], Any], n: int) -> float:
    clock = CLOCK["clock"]
    t0 = clock()
    fn()
    return n / (clock() - t0)


def _given(model: StudyModel, designs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every evaluator's metrics of each design batch (what the engine passes on)."""
    out: list[dict[str, Any]] = []
    for d in designs:
        results: dict[str, Mapping[str, Any]] = {}
        for ev in model.run_order:
            results[ev.name] = ev.fn(d, **{n: results[n] for n in ev.needs})
        out.append(results)
    return out


def _each(model: StudyModel, designs: list[dict[str, Any]], n: int) -> dict[str, float]:
    """Each evaluator as the engine calls it (given its needs), then alone (computing them)."""
    given = _given(model, designs)
    rates: dict[str, float] = {}
    for ev in model.run_order:

        def engine(ev: Any = ev) -> None:
            for d, g in zip(designs, given, strict=True):
                ev.fn(d, **{k: g[k] for k in ev.needs})

        rates[ev.name] = _rate(engine, n)
    for ev in model.run_order:
        if ev.needs:

            def alone(ev: Any = ev) -> None:
                for d in designs:
                    ev.fn(d)

            rates[f"{ev.name} alone (computes {', '.join(ev.needs)})"] = _rate(alone, n)
    return rates


def vectorized(model: StudyModel, n: int, chunk: int) -> dict[str, float]:
    chunks = list(_sample_chunks(dict(model.spec.space), n, chunk, 0))
    rates = _each(model, [model.design(p) for _, p in chunks], n)

    def all_three() -> None:
        for _, p in chunks:
            model.violations(p, model.evaluate(p, strict=False))

    rates["all three (StudyModel.evaluate + constraints)"] = _rate(all_three, n)
    return rates


def scalar(model: StudyModel, n: int) -> dict[str, float]:
    (_, p), *_ = _sample_chunks(dict(model.spec.space), n, n, 1)
    designs = [{k: v[i].item() for k, v in p.items()} for i in range(n)]
    rates = _each(model, [model.design(d) for d in designs], n)

    def all_three() -> None:
        for d in designs:
            metrics = {k: float(v) for k, v in model.evaluate(d).items()}
            model.violations(d, metrics)

    rates["all three (StudyModel.evaluate + constraints)"] = _rate(all_three, n)
    return rates


def main() -> None:
    from dse.heap import keep_freed_arrays

    keep_freed_arrays()  # as the dse command does in its processes (dse/heap.py)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default="spaces/litegpu.yaml")
    ap.add_argument("--designs", type=int, default=1_000_000)
    ap.add_argument("--scalar", type=int, default=300)
    ap.add_argument("--chunk", type=int, default=1 << 16)
    ap.add_argument(
        "--cpu", action="store_true", help="rates per CPU-second of this process, not per wall s"
    )
    args = ap.parse_args()
    if args.cpu:
        CLOCK["clock"] = time.process_time
    model = api.load(args.spec)
    print(f"{args.spec}: {args.designs:,} designs vectorized (chunks of {args.chunk:,}), ")
    clock = "CPU" if args.cpu else "wall"
    print(f"{args.scalar} designs one per call; designs per {clock} second on one core")
    vec = vectorized(model, args.designs, args.chunk)
    sca = scalar(model, args.scalar)
    print(f"{'evaluator':48s} {'vectorized':>12s} {'per-trial':>10s} {'ratio':>7s}")
    for k in vec:
        print(f"{k:48s} {vec[k]:12,.0f} {sca[k]:10,.0f} {vec[k] / sca[k]:7.0f}x")
    for k in vec:
        print(f"{k}: {args.designs:,} designs in {args.designs / vec[k]:.2f} s")


if __name__ == "__main__":
    main()
