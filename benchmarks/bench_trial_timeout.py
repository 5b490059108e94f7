"""What ``search.trial_timeout_s`` costs per trial: one design of ``spaces/litegpu.yaml``
evaluated in-process (no limit) versus through the persistent deadline child (a limit), in one
run, alternating, so the ratio is what the limit adds.

    .venv/bin/python benchmarks/bench_trial_timeout.py [--designs 2000]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np

from dse.model.guarded import trial_evaluator
from dse.model.isolation import Isolated
from dse.model.load import load
from dse.spec.schema import CategoricalParam, IntParam

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--designs", type=int, default=2000)
    args = ap.parse_args()
    model = load(ROOT / "spaces" / "litegpu.yaml")
    limited = model.spec.model_copy(
        update={"search": model.spec.search.model_copy(update={"trial_timeout_s": 60.0})}
    )
    rng = np.random.default_rng(0)
    designs = []
    for _ in range(args.designs):
        d = {}
        for name, p in model.spec.space.items():
            if isinstance(p, CategoricalParam):
                d[name] = p.choices[int(rng.integers(len(p.choices)))]
            elif isinstance(p, IntParam):
                d[name] = int(rng.integers(p.low, p.high + 1))
            else:
                d[name] = float(rng.uniform(p.low, p.high))
        designs.append(d)
    plain, _ = trial_evaluator(model)
    child, close = trial_evaluator(
        dataclasses.replace(model, loaded=dataclasses.replace(model.loaded, spec=limited))
    )
    child(designs[0])  # fork the child once, as a run does at its first trial
    times = {"in-process": 0.0, "deadline child": 0.0}
    for _ in range(2):
        for label, fn in (("in-process", plain), ("deadline child", child)):
            t0 = time.perf_counter()
            for d in designs:
                try:
                    fn(d)
                except Exception:  # noqa: BLE001 - failed designs cost the same
                    pass
            times[label] += time.perf_counter() - t0
    close()
    n = 2 * len(designs)
    base = times["in-process"] / n
    print(f"{len(designs)} designs x 2 rounds of spaces/litegpu.yaml, one trial evaluation each")
    for label, total in times.items():
        per = total / n
        print(f"  {label:15s} {1e6 * per:8.1f} us/trial  ({per / base:.2f}x)")
    added = 1e6 * (times["deadline child"] - times["in-process"]) / n
    print(f"  added by the limit: {added:.1f} us/trial")
    with Isolated(len, 60.0) as noop:
        noop(designs[0])
        t0 = time.perf_counter()
        for d in designs:
            noop(d)
        rt = (time.perf_counter() - t0) / len(designs)
    print(f"  pipe round trip of one design to a no-op child: {1e6 * rt:.1f} us")


if __name__ == "__main__":
    main()
