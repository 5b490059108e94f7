"""All three evaluators on distinct designs: this checkout vs another one, CPU time, one run.

Alternates child processes of the two code versions (``--old`` is a checkout of an earlier
commit, e.g. ``git worktree add --detach /tmp/base <commit>``), each timing
``StudyModel.evaluate`` + constraints over the same quasi-random designs in chunks of 65,536
with ``time.process_time`` (CPU seconds, so a loaded machine skews the ratio less than wall).

    python benchmarks/ab_evaluators.py --old /tmp/base [--designs 524288] [--rounds 3]
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
from dse.search.sweep import _sample_chunks
model = api.load(sys.argv[2])
chunks = [p for _, p in _sample_chunks(dict(model.spec.space), int(sys.argv[3]), 65536, 0)]
model.violations(chunks[0], model.evaluate(chunks[0], strict=False))  # warm
t = time.process_time()
for p in chunks:
    model.violations(p, model.evaluate(p, strict=False))
print(json.dumps(time.process_time() - t))
"""


def _cpu_s(root: Path, spec: str, n: int) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(root), spec, str(n)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, required=True, help="checkout of the earlier version")
    ap.add_argument("--new", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--spec", default="spaces/litegpu.yaml")
    ap.add_argument("--designs", type=int, default=1 << 19)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    old: list[float] = []
    new: list[float] = []
    for _ in range(args.rounds):
        old.append(_cpu_s(args.old.resolve(), args.spec, args.designs))
        new.append(_cpu_s(args.new.resolve(), args.spec, args.designs))
    o, w = min(old), min(new)
    print(f"{args.spec}: {args.designs:,} distinct designs, all three evaluators + constraints")
    print(f"old {args.old}: {args.designs / o:12,.0f} designs per CPU-s (best of {old})")
    print(f"new {args.new}: {args.designs / w:12,.0f} designs per CPU-s (best of {new})")
    print(f"speed-up new/old: {o / w:.2f}x")


if __name__ == "__main__":
    main()
