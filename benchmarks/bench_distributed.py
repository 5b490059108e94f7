"""Journal vs PostgreSQL vs N workers: CPU per trial of ``dse run`` and worker scaling.

Part 1 runs ``dse run SPEC --trials N`` (default ``spaces/litegpu.yaml``, 300 trials) on the
default journal file and on a private PostgreSQL server on 127.0.0.1 (``tests/postgres.py``),
``--rounds`` times each, and reports the CPU of the ``dse`` process (user+system, from
``getrusage`` of the child) and of the server (the postmaster and its reaped backends).

Part 2 runs 1 and 2 ``dse worker`` processes on one PostgreSQL study whose evaluator sleeps
``--sleep`` s per design (an expensive simulator that does not need a core), so the ratio
measures the engine's parallel overhead; it counts FAILED trials (none may come from
concurrency). Throughput is finished trials over the span from the first trial's start to the
last trial's end, as stored.

    .venv/bin/python benchmarks/bench_distributed.py [--trials 300] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dse.search.storage import open_storage  # noqa: E402
from tests.cli.test_crash_resume import slow_spec  # noqa: E402
from tests.postgres import PostgresServer  # noqa: E402

DSE = str(Path(sys.executable).parent / "dse")


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _server_cpu_s(server: PostgresServer) -> float:
    """The postmaster's CPU plus that of its exited backends (cutime/cstime), in seconds."""
    pid = int((server.data / "postmaster.pid").read_text().split()[0])
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    ticks = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def dse_run(spec: Path, trials: int, env: dict[str, str], storage: str | None) -> float:
    cmd = [DSE, "run", str(spec), "--trials", str(trials), "--no-progress"]
    if storage:
        cmd += ["--storage", storage]
    before = _children_cpu_s()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    return _children_cpu_s() - before


def part1(args: argparse.Namespace, server: PostgresServer, tmp: Path) -> None:
    print(f"## dse run {args.spec} --trials {args.trials}: CPU s of the process (server)")
    journal: list[float] = []
    pg: list[tuple[float, float]] = []
    for k in range(args.rounds):
        env = {**os.environ, "DSE_STUDIES_DIR": str(tmp / f"j{k}")}
        journal.append(dse_run(args.spec, args.trials, env, None))
        env = {**os.environ, "DSE_STUDIES_DIR": str(tmp / f"p{k}")}
        url = server.create_database()
        s0 = _server_cpu_s(server)
        cpu = dse_run(args.spec, args.trials, env, url)
        time.sleep(0.5)  # the backend exits and is reaped
        pg.append((cpu, _server_cpu_s(server) - s0))
        print(f"round {k}: journal {journal[-1]:.2f} s, postgresql {cpu:.2f} s (+{pg[-1][1]:.2f})")
    j, p = min(journal), min(c for c, _ in pg)
    print(
        f"best of {args.rounds}: journal {j:.2f} s ({1000 * j / args.trials:.1f} ms/trial), "
        f"postgresql {p:.2f} s ({1000 * p / args.trials:.1f} ms/trial) = {p / j:.2f}x"
    )


def _stats(url: str, study: str) -> tuple[int, int, float]:
    trials = optuna.load_study(study_name=study, storage=open_storage(url)).get_trials()
    done = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    failed = sum(t.state == optuna.trial.TrialState.FAIL for t in trials)
    start = min(t.datetime_start for t in done if t.datetime_start)
    end = max(t.datetime_complete for t in done if t.datetime_complete)
    return len(done), failed, len(done) / (end - start).total_seconds()


def part2(args: argparse.Namespace, server: PostgresServer, tmp: Path) -> None:
    n = args.worker_trials
    print(f"## dse worker x N on PostgreSQL, {n} trials, evaluator sleeps {args.sleep} s")
    rates: dict[int, list[float]] = {1: [], 2: []}
    for k in range(args.rounds):
        for jobs in (1, 2):
            name = f"w{jobs}r{k}"
            spec = slow_spec(tmp, study=name, trials=n, sleep_s=args.sleep)
            data = yaml.safe_load(spec.read_text())
            data["search"] = {"sampler": "nsga2", "trials": n, "seed": k}
            data["search"]["options"] = {"population_size": 20}
            spec.write_text(yaml.safe_dump(data))
            url = server.create_database()
            env = {**os.environ, "DSE_STUDIES_DIR": str(tmp / name)}
            cmd = [DSE, "worker", str(spec), "--storage", url]
            procs = [
                subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=env) for _ in range(jobs)
            ]
            if any(p.wait() != 0 for p in procs):
                raise SystemExit("a worker failed")
            done, failed, rate = _stats(url, name)
            rates[jobs].append(rate)
            print(f"round {k}, {jobs} worker(s): {done} complete, {failed} FAILED, {rate:.2f}/s")
    one, two = max(rates[1]), max(rates[2])
    print(f"best of {args.rounds}: 1 worker {one:.2f}/s, 2 workers {two:.2f}/s = {two / one:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", type=Path, default=ROOT / "spaces" / "litegpu.yaml")
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worker-trials", type=int, default=200)
    ap.add_argument("--sleep", type=float, default=0.1)
    ap.add_argument("--part", choices=["1", "2", "both"], default="both")
    args = ap.parse_args()
    with PostgresServer() as server, tempfile.TemporaryDirectory() as d:
        if args.part in ("1", "both"):
            part1(args, server, Path(d))
        if args.part in ("2", "both"):
            part2(args, server, Path(d))


if __name__ == "__main__":
    main()
