"""Benchmark 1: evaluator throughput, vectorized vs the per-trial scalar path.

Designs/s for ``cost``, ``perf``, ``availability`` (each called on its own, as the engine calls
it) and all three through ``StudyModel.evaluate`` (+ constraint violations, as a sweep does), on
10^6 quasi-random designs of the spec's space in chunks, vs the per-trial path (one design per
call, as ``dse run`` evaluates a trial) on a few hundred designs. Single process, one core.

    python benchmarks/bench_evaluators.py [--designs 1000000] [--scalar 300] [--spec ...] [--cpu]

``--what-if-perf-memo`` also measures all three with ``objectives.perf.evaluate_perf`` memoized
per design object for the duration of the run (cost and availability each call the perf model
internally, so a plain evaluation runs it three times); it patches nothing on disk.
"""

from __future__ import annotations

import argparse
import importlib
import time
from collections.abc import Callable
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


def vectorized(model: StudyModel, n: int, chunk: int) -> dict[str, float]:
    chunks = list(_sample_chunks(dict(model.spec.space), n, chunk, 0))
    rates: dict[str, float] = {}
    for name, ev in model.evaluators.items():
        rates[name] = _rate(lambda ev=ev: [ev.fn(model.design(p)) for _, p in chunks], n)

    def all_three() -> None:
        for _, p in chunks:
            model.violations(p, model.evaluate(p, strict=False))

    rates["all three (StudyModel.evaluate + constraints)"] = _rate(all_three, n)
    return rates


def scalar(model: StudyModel, n: int) -> dict[str, float]:
    (_, p), *_ = _sample_chunks(dict(model.spec.space), n, n, 1)
    designs = [{k: v[i].item() for k, v in p.items()} for i in range(n)]
    rates: dict[str, float] = {}
    for name, ev in model.evaluators.items():
        rates[name] = _rate(lambda ev=ev: [ev.fn(model.design(d)) for d in designs], n)

    def all_three() -> None:
        for d in designs:
            metrics = {k: float(v) for k, v in model.evaluate(d).items()}
            model.violations(d, metrics)

    rates["all three (StudyModel.evaluate + constraints)"] = _rate(all_three, n)
    return rates


def _memoize_perf(model: StudyModel) -> Callable[[], None]:
    """Memoize the perf model per design object (what-if); returns the undo function."""
    perf_ev = model.evaluators["perf"]
    module = importlib.import_module(perf_ev.fn.__module__)
    original = module.evaluate_perf
    last: list[Any] = [None, None]  # (design, result); holding the design keeps its id unique

    def memo(design: Any) -> Any:
        if last[0] is not design:
            last[:] = [design, original(design)]
        return last[1]

    module.evaluate_perf = memo
    old_fn = perf_ev.fn
    object.__setattr__(perf_ev, "fn", memo)  # Evaluator is a frozen dataclass

    def undo() -> None:
        module.evaluate_perf = original
        object.__setattr__(perf_ev, "fn", old_fn)

    return undo


def main() -> None:
    from dse.heap import keep_freed_arrays

    keep_freed_arrays()  # as the dse command does in its processes (dse/heap.py)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default="spaces/litegpu.yaml")
    ap.add_argument("--designs", type=int, default=1_000_000)
    ap.add_argument("--scalar", type=int, default=300)
    ap.add_argument("--chunk", type=int, default=1 << 16)
    ap.add_argument("--what-if-perf-memo", action="store_true")
    ap.add_argument(
        "--cpu", action="store_true", help="rates per CPU-second of this process, not per wall s"
    )
    args = ap.parse_args()
    if args.cpu:
        CLOCK["clock"] = time.process_time
    model = api.load(args.spec)
    print(f"{args.spec}: {args.designs:,} designs vectorized (chunks of {args.chunk:,}), ")
    print(f"{args.scalar} designs one per call; designs/s on one core")
    vec = vectorized(model, args.designs, args.chunk)
    sca = scalar(model, args.scalar)
    print(f"{'evaluator':48s} {'vectorized':>12s} {'per-trial':>10s} {'ratio':>7s}")
    for k in vec:
        print(f"{k:48s} {vec[k]:12,.0f} {sca[k]:10,.0f} {vec[k] / sca[k]:7.0f}x")
    if args.what_if_perf_memo:
        undo = _memoize_perf(model)
        try:
            memo = vectorized(model, args.designs, args.chunk)
        finally:
            undo()
        k = "all three (StudyModel.evaluate + constraints)"
        print(f"what-if, perf memoized per design: all three {memo[k]:,.0f} designs/s")


if __name__ == "__main__":
    main()
