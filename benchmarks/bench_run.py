"""``dse run SPEC --trials N`` against the plain-Optuna script, measured in one run (issue 15).

    .venv/bin/python benchmarks/bench_run.py [--trials 1000] [--repeats 2] [--spec SPEC]

Both run as fresh processes (imports and start-up included) on fresh journal files in one
temporary folder, alternately, ``--repeats`` times each. Reported: wall time and CPU time
(user + system of the child, from ``getrusage``); on a shared machine the CPU ratio is the
steadier of the two, the wall ratio includes waiting for the disk (each journal append is
fsync'ed).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _child(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--spec", type=Path, default=ROOT / "spaces" / "litegpu.yaml")
    args = ap.parse_args()
    rows: dict[str, list[tuple[float, float]]] = {"dse run": [], "plain Optuna": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            env = {**os.environ, "DSE_STUDIES_DIR": f"{tmp}/studies{i}"}
            rows["dse run"].append(
                _child(
                    [str(BIN / "dse"), "run", str(args.spec), "--trials", str(args.trials)]
                    + ["--no-progress", "--json"],
                    env,
                )
            )
            rows["plain Optuna"].append(
                _child(
                    [sys.executable, str(ROOT / "benchmarks" / "plain_optuna.py"), str(args.spec)]
                    + ["--trials", str(args.trials), "--journal", f"{tmp}/plain{i}.log"],
                    env,
                )
            )
    med = {
        k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
        for k, v in rows.items()
    }
    pw, pc = med["plain Optuna"]
    print(f"{args.trials} trials of {args.spec.name}; median of {args.repeats} alternate runs")
    print("| program | wall s | CPU s | wall vs plain | CPU vs plain |")
    print("|---|---:|---:|---:|---:|")
    for k, (w, c) in med.items():
        print(f"| {k} | {w:.2f} | {c:.2f} | {w / pw:.2f}x | {c / pc:.2f}x |")


if __name__ == "__main__":
    main()
