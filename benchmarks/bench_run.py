"""``dse run SPEC --trials N`` against the plain-Optuna script, measured in one run (issue 15).

    .venv/bin/python benchmarks/bench_run.py [--trials 1000] [--repeats 2] [--spec SPEC] \
        [--baseline DIR]

Both run as fresh processes (imports and start-up included) on fresh journal files in one
temporary folder, alternately, ``--repeats`` times each. Reported: wall time and CPU time
(user + system of the child, from ``getrusage``); on a shared machine the CPU ratio is the
steadier of the two, the wall ratio includes waiting for the disk (each journal append is
fsync'ed). ``--baseline DIR`` adds ``dse run`` of another checkout (a folder holding its
``dse/`` and ``objectives/``, e.g. ``git archive COMMIT dse objectives | tar -x -C DIR``), run
with the same interpreter and ``PYTHONPATH=DIR``: the engine's per-trial overhead before and
after a change, measured side by side. ``--spec spaces/zdt1/spec.yaml`` (a trivial evaluator)
isolates the engine's own cost per trial.
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
    ap.add_argument("--baseline", type=Path, help="another checkout's folder (dse/, objectives/)")
    args = ap.parse_args()
    rows: dict[str, list[tuple[float, float]]] = {"dse run": [], "plain Optuna": []}
    if args.baseline:
        rows[f"dse run ({args.baseline.name})"] = []
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
            if args.baseline:
                base = {**env, "PYTHONPATH": str(args.baseline.resolve())}
                base["DSE_STUDIES_DIR"] = f"{tmp}/base{i}"
                rows[f"dse run ({args.baseline.name})"].append(
                    _child(
                        [sys.executable, "-m", "dse.cli", "run", str(args.spec.resolve())]
                        + ["--trials", str(args.trials), "--no-progress", "--json"],
                        base,
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
    print("| program | wall s | CPU s | CPU ms per trial | wall vs plain | CPU vs plain |")
    print("|---|---:|---:|---:|---:|---:|")
    for k, (w, c) in med.items():
        per = 1000 * c / args.trials
        print(f"| {k} | {w:.2f} | {c:.2f} | {per:.2f} | {w / pw:.2f}x | {c / pc:.2f}x |")


if __name__ == "__main__":
    main()
