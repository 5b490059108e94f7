"""Trials per second with 1, 2 and 4 workers on the journal file and on PostgreSQL.

The evaluator sleeps 0.2 s per design (a stand-in for an expensive simulator that does not
need a core), so the ratio to one worker measures the engine's parallel overhead: claiming,
recording and counting trials in a shared storage. Throughput is finished trials over the
span from the first trial's start to the last trial's end, read from the storage (process
start-up excluded); wall time of the whole command is printed too.

    .venv/bin/python benchmarks/bench_workers.py [--trials 48] [--sleep 0.2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dse.search.storage import open_storage  # noqa: E402
from dse.search.stored import STALE_ATTR  # noqa: E402
from tests.cli.test_crash_resume import slow_spec  # noqa: E402
from tests.postgres import PostgresServer  # noqa: E402

DSE = str(Path(sys.executable).parent / "dse")


def _throughput(url: str, study: str) -> tuple[int, float]:
    trials = optuna.load_study(study_name=study, storage=open_storage(url)).get_trials()
    done = [
        t
        for t in trials
        if t.state == optuna.trial.TrialState.COMPLETE and not t.user_attrs.get(STALE_ATTR)
    ]
    start = min(t.datetime_start for t in done if t.datetime_start)
    end = max(t.datetime_complete for t in done if t.datetime_complete)
    return len(done), len(done) / (end - start).total_seconds()


def run_journal(tmp: Path, jobs: int, trials: int, sleep_s: float) -> tuple[int, float, float]:
    name = f"journal{jobs}"
    spec = slow_spec(tmp, study=name, trials=trials, sleep_s=sleep_s)
    t0 = time.monotonic()
    subprocess.run(
        [DSE, "run", str(spec), "--jobs", str(jobs), "--no-progress"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.monotonic() - t0
    url = f"journal:{tmp / 'studies' / name / 'journal.log'}"
    n, rate = _throughput(url, name)
    return n, rate, wall


def run_postgres(
    tmp: Path, server: PostgresServer, jobs: int, trials: int, sleep_s: float
) -> tuple[int, float, float]:
    name = f"pg{jobs}"
    spec = slow_spec(tmp, study=name, trials=trials, sleep_s=sleep_s)
    url = server.create_database()
    t0 = time.monotonic()
    procs = [
        subprocess.Popen([DSE, "worker", str(spec), "--storage", url], stdout=subprocess.DEVNULL)
        for _ in range(jobs)
    ]
    for p in procs:
        if p.wait() != 0:
            raise SystemExit(f"worker exited with {p.returncode}")
    wall = time.monotonic() - t0
    n, rate = _throughput(url, name)
    return n, rate, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=48)
    ap.add_argument("--sleep", type=float, default=0.2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d, PostgresServer(fsync=True) as server:
        tmp = Path(d)
        os.environ["DSE_STUDIES_DIR"] = str(tmp / "studies")
        print(f"{args.trials} trials, evaluator sleeps {args.sleep} s; {os.cpu_count()} cores")
        print(
            f"{'storage':<10} {'workers':>7} {'trials':>6} {'trials/s':>9} {'ratio':>6} "
            f"{'wall s':>7}"
        )
        for label, fn in (
            ("journal", lambda j: run_journal(tmp, j, args.trials, args.sleep)),
            ("postgres", lambda j: run_postgres(tmp, server, j, args.trials, args.sleep)),
        ):
            base = None
            for jobs in (1, 2, 4):
                n, rate, wall = fn(jobs)
                base = base or rate
                print(
                    f"{label:<10} {jobs:>7} {n:>6} {rate:>9.2f} {rate / base:>5.2f}x {wall:>7.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
