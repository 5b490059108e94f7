"""Sweep machinery overhead and scaling, as ratios measured in one run (issue 15).

    .venv/bin/python benchmarks/bench_sweep.py [--designs N] [--chunk C] [--no-dask]

1. The raw vectorized evaluation (``StudyModel.evaluate`` + constraints) on pre-generated
   Halton chunks of ``spaces/litegpu.yaml``: the rate the sweep machinery must approach.
2. ``sweep(samples=N)`` in-process on the same N designs (generation, chunk fronts, merge):
   its rate as a fraction of (1). CPU time of this process is reported next to wall time,
   since wall time on a shared machine measures the neighbours as much as the code.
3. Scaling: the same sweep on a Dask LocalCluster of 1 and 2 worker processes, and on a real
   ``dask scheduler`` with two ``dask worker`` processes (wall time; the work runs in the
   workers).
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dse.model.load import load  # noqa: E402
from dse.search.sweep import sweep  # noqa: E402
from dse.search.sweep_chunks import SweepPlan, evaluate_chunk  # noqa: E402


def _timed(fn):  # noqa: ANN001, ANN202
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def _raw(model, plan: SweepPlan) -> None:  # noqa: ANN001
    chunks = [plan.designs(i) for i in range(plan.n_chunks)]  # generation not timed

    def run() -> None:
        for _m, params in chunks:
            metrics = model.evaluate(params, strict=False)
            model.violations(params, metrics)

    return _timed(run)


def _worker_cpu(address: str) -> float:
    """CPU seconds (user + system) used so far by every worker process of a cluster."""
    import resource

    from dask.distributed import Client

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    with Client(address, timeout=60) as c:
        return sum(c.run(cpu).values())


def _on_cluster(model, n: int, chunk: int, address: str):  # noqa: ANN001, ANN202
    """(result, wall s, worker CPU s) of a sweep on the cluster at ``address``."""
    before = _worker_cpu(address)
    r, w, _ = _timed(lambda: sweep(model, samples=n, chunk=chunk, scheduler=address, write=False))
    return r, w, _worker_cpu(address) - before


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _with_scheduler(fn):  # noqa: ANN001, ANN202
    """Run ``fn(address)`` with a real dask scheduler and two single-threaded workers."""
    from dask.distributed import Client

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "dask"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [
        subprocess.Popen(
            [*dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
            **quiet,
        )
    ]
    procs += [
        subprocess.Popen(
            [*dask, "worker", address, "--nthreads", "1", "--no-dashboard", "--no-nanny"], **quiet
        )
        for _ in range(2)
    ]
    try:
        with Client(address, timeout=60) as c:
            c.wait_for_workers(2, timeout=120)
        return fn(address)
    finally:
        for p in reversed(procs):  # workers first, then the scheduler
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--designs", type=int, default=1 << 20)
    ap.add_argument("--chunk", type=int, default=1 << 16)
    ap.add_argument("--no-dask", action="store_true")
    args = ap.parse_args()
    model = load(ROOT / "spaces" / "litegpu.yaml")
    n, chunk = args.designs, args.chunk
    plan = SweepPlan("samples", n, chunk, 0, space=dict(model.spec.space))
    evaluate_chunk(model, plan, 0)  # warm caches (imports, preset tables)

    _, raw_w, raw_c = _raw(model, plan)
    res, sw_w, sw_c = _timed(lambda: sweep(model, samples=n, chunk=chunk, write=False))
    print(f"designs {n:,} in chunks of {chunk:,}; litegpu space; Halton samples")
    print("| what | wall s | designs/s (wall) | CPU s | designs/s (CPU) | vs raw (CPU) |")
    print("|---|---:|---:|---:|---:|---:|")
    print(
        f"| raw evaluate + constraints | {raw_w:.2f} | {n / raw_w:,.0f} | {raw_c:.2f} | "
        f"{n / raw_c:,.0f} | 1.00 |"
    )
    print(
        f"| `sweep()` in-process | {sw_w:.2f} | {n / sw_w:,.0f} | {sw_c:.2f} | "
        f"{n / sw_c:,.0f} | {raw_c / sw_c:.2f} |"
    )
    if args.no_dask:
        return
    from dse.search.sweep_dask import local_cluster

    front = res.front
    rows = []
    for jobs in (1, 2):
        with local_cluster(jobs) as lc:
            r, w, c = _on_cluster(model, n, chunk, lc.scheduler_address)
        assert r.front.equals(front), "a Dask sweep changed the front"
        rows.append((f"Dask LocalCluster, {jobs} worker process(es)", w, c))
    r, w, _ = _timed(lambda: sweep(model, samples=n, chunk=chunk, jobs=2, write=False))
    assert r.front.equals(front), "a Dask sweep changed the front"
    rows.append(("`sweep(jobs=2)` incl. LocalCluster start-up", w, float("nan")))
    r, w, c = _with_scheduler(lambda a: _on_cluster(model, n, chunk, a))
    assert r.front.equals(front), "a Dask sweep changed the front"
    rows.append(("`dask scheduler` + 2 `dask worker --no-nanny`", w, c))
    base = rows[0][1]
    print("\n| sweep on | wall s | designs/s | vs 1 Dask worker (wall) | worker CPU s |")
    print("|---|---:|---:|---:|---:|")
    print(
        f"| in-process (jobs=1, no Dask) | {sw_w:.2f} | {n / sw_w:,.0f} | {base / sw_w:.2f}x | "
        f"{sw_c:.2f} |"
    )
    for name, w, c in rows:
        print(f"| {name} | {w:.2f} | {n / w:,.0f} | {base / w:.2f}x | {c:.2f} |")


if __name__ == "__main__":
    main()
