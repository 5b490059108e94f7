"""All three evaluators on distinct designs: this checkout vs another one, CPU time, one run.

Alternates child processes of the two code versions (``--old`` is a checkout of an earlier
commit, e.g. ``git worktree add --detach /tmp/base <commit>``), each timing
``StudyModel.evaluate`` + constraints over the same quasi-random designs in chunks of 65,536
with ``time.process_time`` (CPU seconds, so a loaded machine skews the ratio less than wall),
freed arrays kept in the heap as ``dse`` runs (``dse.heap.keep_freed_arrays``: without it the
page faults of fresh arrays vary with the heap's history and swamp the comparison).

    python benchmarks/ab_evaluators.py --old /tmp/base [--designs 524288] [--rounds 3] [--each]
        [--scalar 300]

``--each`` also times every evaluator called alone (as ``bench_evaluators.py`` does: cost and
availability then run the perf model themselves), and each as the engine calls it, given the
metrics of the evaluators it needs (computed beforehand, not timed); ``--scalar N`` the
per-trial path, one design per ``StudyModel.evaluate`` call, on N designs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

_CHILD = """
import sys, time, json
root = sys.argv[1]
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f)]  # not the venv's
sys.path.insert(0, root)
import objectives
assert objectives.__file__.startswith(root), objectives.__file__
from dse import api
try:  # as the dse command and bench_evaluators.py run (dse/heap.py)
    from dse.heap import keep_freed_arrays
    keep_freed_arrays()
except ImportError:  # a checkout from before dse/heap.py
    pass
try:
    from dse.search.sweep.sweep import _sample_chunks
except ImportError:  # a checkout from before dse/search/sweep/
    from dse.search.sweep import _sample_chunks
model = api.load(sys.argv[2])
chunks = [p for _, p in _sample_chunks(dict(model.spec.space), int(sys.argv[3]), 65536, 0)]
def all_three(p):
    model.violations(p, model.evaluate(p, strict=False))
runs = {"all three": all_three}
if sys.argv[4] == "each":
    for name, ev in model.evaluators.items():
        runs[name] = lambda p, ev=ev: ev.fn(model.design(p))
out = {}
for name, fn in runs.items():
    fn(chunks[0])  # warm
    t = time.process_time()
    for p in chunks:
        fn(p)
    out[name] = time.process_time() - t
if sys.argv[4] == "each":  # as the engine calls them: given the metrics they need (not timed)
    designs = [model.design(p) for p in chunks]
    given = []
    for d in designs:
        res = {}
        for ev in model.run_order:
            res[ev.name] = ev.fn(d, **{k: res[k] for k in ev.needs})
        given.append(res)
    for ev in model.run_order:
        ev.fn(designs[0], **{k: given[0][k] for k in ev.needs})  # warm
        t = time.process_time()
        for d, g in zip(designs, given):
            ev.fn(d, **{k: g[k] for k in ev.needs})
        what = ev.name + (" given " + ", ".join(ev.needs) if ev.needs else "")
        out[what] = time.process_time() - t
scalar = int(sys.argv[5])
if scalar:  # the per-trial path: one design per call, as ``dse run`` evaluates a trial
    (_, p), *_ = _sample_chunks(dict(model.spec.space), scalar, scalar, 1)
    one = [{k: v[i].item() for k, v in p.items()} for i in range(scalar)]
    def trials():
        for d in one:
            model.violations(d, {k: float(v) for k, v in model.evaluate(d).items()})
    trials()  # warm
    t = time.process_time()
    trials()
    out[f"per trial ({scalar} designs)"] = time.process_time() - t
print(json.dumps(out))
"""


def _cpu_s(root: Path, spec: str, n: int, each: bool, scalar: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(root), spec, str(n), "each" if each else "all",
         str(scalar)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, required=True, help="checkout of the earlier version")
    ap.add_argument("--new", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--spec", default="spaces/litegpu.yaml")
    ap.add_argument("--designs", type=int, default=1 << 19)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--each", action="store_true", help="also each evaluator alone")
    ap.add_argument(
        "--scalar", type=int, default=0, help="also the per-trial path on this many designs"
    )
    args = ap.parse_args()
    old: list[dict[str, float]] = []
    new: list[dict[str, float]] = []
    for _ in range(args.rounds):
        for root, runs in ((args.old, old), (args.new, new)):
            runs.append(_cpu_s(root.resolve(), args.spec, args.designs, args.each, args.scalar))
    n = args.designs
    print(f"{args.spec}: {n:,} distinct designs in chunks of 65,536; designs per CPU-s, best of")
    print(f"{args.rounds} alternating runs (old: {args.old}, new: {args.new})")
    print(f"{'':40s} {'old':>12s} {'new':>12s} {'new/old':>8s}")
    for key in old[0]:
        o, w = min(r[key] for r in old), min(r[key] for r in new)
        what = key + (" evaluators + constraints" if key == "all three" else "")
        plain = key == "all three" or key.startswith("per trial") or " given " in key
        what += "" if plain else " alone"
        per = args.scalar if key.startswith("per trial") else n
        print(f"{what:40s} {per / o:12,.0f} {per / w:12,.0f} {o / w:7.2f}x")


if __name__ == "__main__":
    main()
