"""Every metric of the shipped specs: this checkout vs another one, within a relative tolerance.

A refactor must leave every figure as it was. This evaluates all metrics of ``spaces/*.yaml``
and ``spaces/paper/*.yaml`` on the same quasi-random designs (and every serving validation
prediction of ``benchmarks/validate_perf.py``) in a child process of each checkout, and lists
what differs by more than ``--rtol`` (NaN equals NaN). Each evaluator of ``spaces/litegpu.yaml``
is also called directly, ``fn(design)`` as a Python user imports it (``direct|`` keys): it must
give what the engine gives.

    mkdir /tmp/base && git archive <commit> | tar -x -C /tmp/base
    python benchmarks/ab_metrics.py --old /tmp/base [--designs 20000] [--rtol 1e-12]

Exit status 1 when anything differs, so it can gate a refactor commit.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

_CHILD = """
import glob, json, sys
import numpy as np
root, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f)]  # not the venv's
sys.path.insert(0, root)
import objectives
assert objectives.__file__.startswith(root), objectives.__file__
from dse import api
try:
    from dse.search.sweep.sweep import _sample_chunks
except ImportError:  # a checkout from before dse/search/sweep/
    from dse.search.sweep import _sample_chunks
specs = sorted(glob.glob(root + "/spaces/*.yaml"))
specs += sorted(glob.glob(root + "/spaces/paper/*.yaml"))
res = {}
for spec in specs:
    model = api.load(spec)
    for _, p in _sample_chunks(dict(model.spec.space), n, n, 0):
        for k, v in model.evaluate(p, strict=False).items():
            res[spec[len(root):] + "|" + k] = np.asarray(v, dtype=float)
    if spec.endswith("/spaces/litegpu.yaml"):  # each evaluator called alone, as a user would
        for _, p in _sample_chunks(dict(model.spec.space), min(n, 4096), n, 1):
            for name, ev in model.evaluators.items():
                for k, v in ev.fn(model.design(p)).items():
                    res[f"direct|{name}.{k}"] = np.asarray(v, dtype=float)
sys.path.insert(0, root + "/benchmarks")
import validate_perf as vp
for x in vp.results():
    res[f"validate_perf|{x['row'].row}|{x['row'].src}|{x['row'].kind}"] = np.asarray(x["pred"])
np.savez(out, **res)
"""


def _metrics(root: Path, n: int, out: Path) -> dict[str, np.ndarray]:
    subprocess.run([sys.executable, "-c", _CHILD, str(root), str(out), str(n)], check=True)
    with np.load(out) as f:
        return {k: f[k] for k in f.files}


def differ(old: dict[str, np.ndarray], new: dict[str, np.ndarray], rtol: float) -> list[str]:
    """Names present in both whose values differ by more than ``rtol`` (NaN equals NaN)."""
    bad = []
    for k in sorted(old.keys() & new.keys()):
        a, b = old[k], new[k]
        if a.shape != b.shape:
            bad.append(k)
            continue
        same = (a == b) | np.isclose(a, b, rtol=rtol, atol=0.0) | (np.isnan(a) & np.isnan(b))
        if not np.all(same):
            bad.append(k)
    return bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, required=True, help="checkout of the earlier version")
    ap.add_argument("--new", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--designs", type=int, default=20000)
    ap.add_argument("--rtol", type=float, default=1e-12)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        old = _metrics(args.old.resolve(), args.designs, Path(tmp) / "old.npz")
        new = _metrics(args.new.resolve(), args.designs, Path(tmp) / "new.npz")
    bad = differ(old, new, args.rtol)
    only = sorted(old.keys() ^ new.keys())
    print(
        json.dumps(
            {"compared": len(old.keys() & new.keys()), "differ": bad, "in_one_only": only},
            indent=1,
        )
    )
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
