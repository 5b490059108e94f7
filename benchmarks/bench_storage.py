"""Storage cost per trial: part 1 in one process (in-memory, journal file, SQLite), part 2
``dse worker`` processes on a real PostgreSQL server (issue 37).

Part 1 runs the runner's own trial path (``dse.search.study.runner.run_trial``: ask,
evaluate, one user attribute per metric, constraints, tell) with a trivial custom evaluator
that returns ``--metrics`` constants (78 is what ``spaces/litegpu.yaml`` records per trial),
a random sampler, and each storage. Evaluation costs microseconds, so the time per trial is
the storage and Optuna overhead.

    python benchmarks/bench_storage.py [--trials 300] [--metrics 78]

Part 2 (``--postgres``) runs 1 and 2 ``dse worker`` processes on ``spaces/litegpu.yaml``
(``--pg-trials`` study-wide, default 2,000) on a private PostgreSQL 15 (``tests/postgres.py``,
fsync off), one fresh database per configuration, for each storage:

- ``batched``: the batched RDB storage that wrote Optuna's tables with its own SQL, run from
  the source tree ``--baseline DIR`` (a checkout of a commit that still has it, e.g.
  ``git archive 39be39a``);
- ``optuna-rdb``: Optuna's ``RDBStorage`` (what ``postgresql://`` opens now);
- ``grpc``: Optuna's gRPC storage proxy (``run_grpc_proxy_server`` in its own process, in
  front of ``get_storage(url)``), the workers on ``grpc://127.0.0.1:PORT``.

It reports the wall time from starting the workers to the last one's exit, per trial, the CPU
of the workers and of the server side (postmaster and backends, plus the proxy process), and
the FAILED trials (none may come from concurrency), all in one run so the ratios compare.

    python benchmarks/bench_storage.py --postgres --baseline /tmp/dse-before [--pg-trials 2000]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import optuna

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dse import api  # noqa: E402
from dse.search.samplers.factory import distribution  # noqa: E402
from dse.search.storage import open_storage  # noqa: E402
from dse.search.study.runner import run_trial  # noqa: E402

EVALUATOR = """
def trivial(design):
    x = float(design["x"])
    return {f"m{i}": x + i for i in range(N_METRICS)}
"""


def _model(tmp: Path, n_metrics: int):  # noqa: ANN202 - StudyModel
    (tmp / "trivial_eval.py").write_text(
        EVALUATOR.replace("N_METRICS", str(n_metrics)), encoding="utf-8"
    )
    (tmp / "spec.yaml").write_text(
        textwrap.dedent(
            """
            study: storage-bench
            space:
              x: {type: float, low: 0, high: 1}
            evaluators: {triv: "trivial_eval:trivial"}
            objectives: [{metric: triv.m0, direction: minimize}]
            constraints: ["triv.m1 <= 1.5"]
            search: {sampler: random, trials: 100, seed: 0}
            """
        ),
        encoding="utf-8",
    )
    model = api.load(tmp / "spec.yaml")
    # Only the trivial evaluator: the built-ins would dominate the time being measured.
    model.evaluators = {"triv": model.evaluators["triv"]}
    return model


def per_trial_ms(model, storage: optuna.storages.BaseStorage, trials: int) -> float:  # noqa: ANN001
    study = optuna.create_study(
        storage=storage,
        study_name="storage-bench",
        sampler=optuna.samplers.RandomSampler(seed=0),
    )
    dists = {n: distribution(p) for n, p in model.spec.space.items()}
    run_trial(model, study, dists)  # warm-up: table creation, first journal read
    t0 = time.perf_counter()
    for _ in range(trials):
        run_trial(model, study, dists)
    return (time.perf_counter() - t0) / trials * 1000


DSE = str(Path(sys.executable).parent / "dse")
SPEC = ROOT / "spaces" / "litegpu.yaml"
PROXY = """
import sys
import optuna
from optuna.storages import RDBStorage, get_storage, run_grpc_proxy_server
optuna.logging.set_verbosity(optuna.logging.WARNING)
storage = get_storage(RDBStorage(sys.argv[1]))
run_grpc_proxy_server(storage, host="127.0.0.1", port=int(sys.argv[2]))
"""


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _proc_cpu_s(pid: int) -> float:
    """A process's CPU plus that of its reaped children (the postmaster's backends), in s."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    import socket

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the gRPC proxy exited")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise SystemExit("the gRPC proxy did not start")


def _counts(url: str) -> tuple[int, int]:
    from optuna.storages import RDBStorage

    storage = RDBStorage(url)
    trials = optuna.load_study(study_name="litegpu", storage=storage).get_trials(deepcopy=False)
    states = [t.state for t in trials]
    storage.engine.dispose()
    return states.count(optuna.trial.TrialState.COMPLETE), states.count(
        optuna.trial.TrialState.FAIL
    )


def pg_case(server, kind: str, jobs: int, trials: int, tree: Path, tmp: Path) -> dict[str, float]:  # noqa: ANN001 - tests.postgres.PostgresServer
    """One configuration: ``jobs`` workers to ``trials`` on a fresh database."""
    url = server.create_database()
    proxy = None
    target = url
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "DSE_STUDIES_DIR": str(tmp / f"{kind}{jobs}"),
    }
    pg_pid = int((server.data / "postmaster.pid").read_text().split()[0])
    if kind == "grpc":
        port = _free_port()
        proxy = subprocess.Popen(
            [sys.executable, "-c", PROXY, url, str(port)], env=env, stderr=subprocess.DEVNULL
        )
        _wait_for_port(port, proxy)
        target = f"grpc://127.0.0.1:{port}"
        proxy_cpu0 = _proc_cpu_s(proxy.pid)
    server0, cpu0 = _proc_cpu_s(pg_pid), _children_cpu_s()
    cmd = [DSE, "worker", str(SPEC), "--trials", str(trials), "--storage", target]
    t0 = time.monotonic()
    procs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(jobs)
    ]
    errs = [p.communicate()[1].decode() for p in procs]
    wall = time.monotonic() - t0
    cpu = _children_cpu_s() - cpu0
    time.sleep(0.5)  # backends exit and are reaped
    server_cpu = _proc_cpu_s(pg_pid) - server0
    if proxy is not None:
        server_cpu += _proc_cpu_s(proxy.pid) - proxy_cpu0
        proxy.terminate()
        proxy.wait()
        _children_cpu_s()  # the proxy is reaped: its CPU is not the next case's
    for p, err in zip(procs, errs, strict=True):
        if p.returncode != 0:
            raise SystemExit(f"{kind} x{jobs}: a worker exited {p.returncode}: {err[-2000:]}")
    complete, failed = _counts(url)
    return {
        "wall": wall,
        "cpu": cpu,
        "server": server_cpu,
        "complete": complete,
        "failed": failed,
    }


def part2(args: argparse.Namespace) -> None:
    from tests.postgres import PostgresServer

    n = args.pg_trials
    kinds = [(k, ROOT) for k in ("optuna-rdb", "grpc") if k in args.storages]
    if args.baseline:
        kinds.insert(0, ("batched", args.baseline.resolve()))
    load = os.getloadavg()
    print(f"## dse worker x N, {SPEC.name}, {n} trials, PostgreSQL 15 (fsync off)")
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} CPUs")
    head = "| storage | workers | wall s | ms/trial (wall) | worker CPU ms/trial |"
    print(head + " server CPU ms/trial | complete | FAILED | 2 vs 1 worker |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    results: dict[tuple[str, int], dict[str, float]] = {}
    with PostgresServer() as server, tempfile.TemporaryDirectory() as d:
        for kind, tree in kinds:
            for jobs in (1, 2):
                r = results[kind, jobs] = pg_case(server, kind, jobs, n, tree, Path(d))
                speedup = f"{results[kind, 1]['wall'] / r['wall']:.2f}x" if jobs == 2 else ""
                print(
                    f"| {kind} | {jobs} | {r['wall']:.1f} | {1000 * r['wall'] / n:.2f} | "
                    f"{1000 * r['cpu'] / n:.2f} | {1000 * r['server'] / n:.2f} | "
                    f"{r['complete']:.0f} | {r['failed']:.0f} | {speedup} |",
                    flush=True,
                )
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    public = [k for k in ("optuna-rdb", "grpc") if (k, 1) in results]
    if not public:
        return
    best = min(public, key=lambda k: results[k, 1]["wall"])
    for jobs in (1, 2):
        if args.baseline:
            ratio = results[best, jobs]["wall"] / results["batched", jobs]["wall"]
            print(f"{jobs} worker(s): best public option ({best}) / batched = {ratio:.2f}x wall")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--metrics", type=int, nargs="+", default=[2, 78])
    ap.add_argument("--postgres", action="store_true", help="part 2 only: workers on PostgreSQL")
    ap.add_argument("--pg-trials", type=int, default=2000)
    ap.add_argument("--baseline", type=Path, help="source tree with the batched RDB storage")
    ap.add_argument(
        "--storages",
        nargs="+",
        choices=("optuna-rdb", "grpc"),
        default=["optuna-rdb", "grpc"],
        help="part 2: the public storages to run (both by default)",
    )
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if args.postgres:
        part2(args)
        return
    print(
        f"{'storage':10s} {'metrics':>7s} {'ms/trial':>9s}  ({args.trials} trials, random sampler)"
    )
    for n_metrics in args.metrics:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            model = _model(tmp, n_metrics)
            storages = {
                "in-memory": "memory",
                "journal": f"journal:{tmp / 'journal.log'}",
                "sqlite": f"sqlite:///{tmp / 'study.db'}",
            }
            for name, url in storages.items():
                storage = (
                    optuna.storages.InMemoryStorage() if url == "memory" else open_storage(url)
                )
                ms = per_trial_ms(model, storage, args.trials)
                print(f"{name:10s} {n_metrics:7d} {ms:9.2f}")


if __name__ == "__main__":
    main()
