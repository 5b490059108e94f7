"""Sweep machinery overhead and scaling, as ratios measured in one run (issue 15).

    .venv/bin/python benchmarks/bench_sweep.py [--designs N] [--chunk C] [--repeats R]
                                               [--scaling grid|samples] [--no-scaling]
                                               [--no-scheduler]

(1) uses N = 2^24 (16.8 M) quasi-random designs of ``spaces/litegpu.yaml`` by default; (2)
and (3) sweep the exact grid of ``spaces/litegpu.yaml`` (49.7 M designs, ~20 s on one core
here), the sweep this project runs, so the fixed costs (worker start-up, imports) weigh as
they do for a user; ``--scaling samples`` uses the N samples instead.

1. The raw vectorized evaluation (``StudyModel.evaluate`` + constraints; design generation
   not timed) vs ``sweep()`` in-process on the same designs: the machinery's cost, in CPU
   seconds of this process (wall time on a shared machine measures the neighbours too).
2. Scaling, the headline: ``dse sweep spaces/litegpu.yaml --grid --jobs J`` run as fresh
   processes exactly as a user runs them (J = 1: in-process; J = 2: the command and one
   forked worker process), alternating, ``--repeats`` times each; the median of the sweep's
   own ``seconds`` (worker start-up included; Python start-up and spec loading are the same
   for both and excluded) and of the whole process's wall time. CPU seconds per process
   (the command's own, which include its share of the chunks, and the workers') come from its
   ``--json`` summary, so the 2-core limit can be read off: wall >= (client + workers) / 2.
3. The same sweep on a real ``dask scheduler`` with two ``dask worker --no-nanny`` processes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dse.model.load import load  # noqa: E402
from dse.search.sweep.chunks import SweepPlan, evaluate_chunk  # noqa: E402
from dse.search.sweep.sweep import DEFAULT_CHUNK, sweep  # noqa: E402

SPEC = ROOT / "spaces" / "litegpu.yaml"
#: What docs/search.md advises for `dask worker` processes running sweep chunks.
DASK_WORKER_ENV = {
    "MALLOC_ARENA_MAX": "1",
    "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
    "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "5s",
}


def _raw(model, plan: SweepPlan) -> tuple[float, float]:  # noqa: ANN001
    """(wall s, CPU s) of evaluate + constraints over every chunk; generation not timed."""
    wall = cpu = 0.0
    for i in range(plan.n_chunks):
        _m, params = plan.designs(i)
        w, c = time.perf_counter(), time.process_time()
        metrics = model.evaluate(params, strict=False)
        model.violations(params, metrics)
        wall += time.perf_counter() - w
        cpu += time.process_time() - c
    return wall, cpu


def _cli_sweep(what: list[str], chunk: int, jobs: int, studies: Path) -> dict:
    """One ``dse sweep`` process: its --json summary plus the process's wall seconds."""
    dse = Path(sys.executable).with_name("dse")
    dse = dse if dse.exists() else Path(shutil.which("dse") or "dse")
    cmd = [str(dse), "sweep", str(SPEC), *what, "--chunk", str(chunk)]
    cmd += ["--jobs", str(jobs), "--no-progress", "--json"]
    env = {**os.environ, "DSE_STUDIES_DIR": str(studies)}
    w = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    summary = json.loads(out[out.index("{") :])
    summary["process_wall_s"] = time.perf_counter() - w
    return summary


_BARE: dict = {}


def _bare_part(indices: list[int]) -> float:
    """Evaluate chunks in a forked process; return its CPU seconds."""
    c = time.process_time()
    for i in indices:
        evaluate_chunk(_BARE["model"], _BARE["plan"], i)
    return time.process_time() - c


def _bare_two_processes(model, plan: SweepPlan) -> tuple[float, float]:  # noqa: ANN001
    """(wall s, CPU s) of the plan's chunks split over two forked processes, no Dask and no
    merge: what two processes can do on this machine (shared caches, memory bandwidth)."""
    import multiprocessing

    _BARE.update(model=model, plan=plan)
    halves = [list(range(plan.n_chunks))[k::2] for k in range(2)]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        w = time.perf_counter()
        cpu = sum(pool.map(_bare_part, halves, chunksize=1))
        return time.perf_counter() - w, cpu


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
    env = {**os.environ, **DASK_WORKER_ENV}  # as docs/search.md advises
    procs += [
        subprocess.Popen(
            [*dask, "worker", address, "--nthreads", "1", "--no-dashboard", "--no-nanny"],
            env=env,
            **quiet,
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
    from dse.heap import keep_freed_arrays

    keep_freed_arrays()  # as the dse command does in its processes (dse/heap.py)
    ap = argparse.ArgumentParser()
    ap.add_argument("--designs", type=int, default=1 << 24)
    ap.add_argument("--chunk", type=int, default=DEFAULT_CHUNK)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--scaling", choices=["grid", "samples"], default="grid")
    # --no-dask: its name from when --jobs ran on a Dask LocalCluster (older RESULTS.md commands)
    ap.add_argument("--no-scaling", "--no-dask", dest="no_scaling", action="store_true")
    ap.add_argument("--no-scheduler", action="store_true")
    args = ap.parse_args()
    model = load(SPEC)
    n, chunk = args.designs, args.chunk
    plan = SweepPlan("samples", n, chunk, 0, space=dict(model.spec.space))
    evaluate_chunk(model, plan, 0)  # warm caches (imports, preset tables)
    load_avg = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"designs {n:,} in chunks of {chunk:,}; {SPEC.name}; Halton samples; ")
    print(f"{os.cpu_count()} CPUs; load average {load_avg:.2f} at start")

    raw_w, raw_c = _raw(model, plan)
    w, c = time.perf_counter(), time.process_time()
    res = sweep(model, samples=n, chunk=chunk, write=False)
    sw_w, sw_c = time.perf_counter() - w, time.process_time() - c
    print("\n## 1. Machinery overhead (this process)\n")
    print("| what | wall s | CPU s | designs/CPU-s | vs raw (CPU) |")
    print("|---|---:|---:|---:|---:|")
    print(f"| raw evaluate + constraints | {raw_w:.2f} | {raw_c:.2f} | {n / raw_c:,.0f} | 1.00 |")
    print(
        f"| `sweep()` in-process | {sw_w:.2f} | {sw_c:.2f} | {n / sw_c:,.0f} | "
        f"**{raw_c / sw_c:.2f}** |"
    )
    if args.no_scaling:
        return

    import tempfile

    what = ["--grid"] if args.scaling == "grid" else ["--samples", str(n)]
    runs: dict[int, list[dict]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory() as studies:
        for _ in range(args.repeats):
            for jobs in (1, 2):
                runs[jobs].append(_cli_sweep(what, chunk, jobs, Path(studies)))
    front_size = runs[1][0]["front_size"]
    designs = runs[1][0]["designs_evaluated"]
    assert all(r["front_size"] == front_size for j in (1, 2) for r in runs[j]), "front changed"
    assert args.scaling == "grid" or front_size == len(res.front), "front changed"

    def med(jobs: int, k: str) -> float:
        return statistics.median(float(r[k] or 0.0) for r in runs[jobs])

    print(
        f"\n## 2. `dse sweep {' '.join(what)} --jobs J` ({designs:,} designs) as fresh "
        f"processes ({args.repeats} each)\n"
    )
    print(
        "| --jobs | sweep s | process wall s | start-up s | chunks in client | client CPU s "
        "| worker CPU s | (client + workers) / 2 s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for jobs in (1, 2):
        cpu = med(jobs, "client_cpu_s") + med(jobs, "worker_cpu_s")
        print(
            f"| {jobs} | {med(jobs, 'seconds'):.2f} | {med(jobs, 'process_wall_s'):.2f} | "
            f"{med(jobs, 'startup_s'):.2f} | {med(jobs, 'chunks_in_client'):.0f} | "
            f"{med(jobs, 'client_cpu_s'):.2f} | {med(jobs, 'worker_cpu_s'):.2f} | "
            f"{cpu / 2:.2f} |"
        )
    s1, s2 = med(1, "seconds"), med(2, "seconds")
    p1, p2 = med(1, "process_wall_s"), med(2, "process_wall_s")
    cpu2 = med(2, "client_cpu_s") + med(2, "worker_cpu_s")
    print(
        f"\n**2 workers vs 1: {s1 / s2:.2f}x** (sweep seconds, as `dse sweep` prints them); "
        f"{p1 / p2:.2f}x by whole-process wall time."
    )
    per_run = ", ".join(
        f"{a['seconds']:.2f}/{b['seconds']:.2f}" for a, b in zip(runs[1], runs[2], strict=True)
    )
    print(f"Each pair of runs, sweep s with --jobs 1/2, in order: {per_run}.")
    if args.scaling == "grid":
        from dse.search.sweep.sweep import grid_axes

        axes = grid_axes(dict(model.spec.space))
        total = 1
        for a in axes.values():
            total *= len(a)
        bare_plan = SweepPlan("grid", total, chunk, None, axes=axes)
    else:
        bare_plan = plan
    bw, bc = _bare_two_processes(model, bare_plan)
    print(
        f"Reference, same chunks on 2 forked processes (no merge, no start-up, no resume files): "
        f"{bw:.2f} s wall, {bc:.2f} CPU s: {s1 / bw:.2f}x `--jobs 1`."
    )
    print(
        f"CPU of the 2-process sweep (command + worker) = "
        f"{cpu2 / med(1, 'client_cpu_s'):.2f}x the 1-process sweep's; on 2 cores that caps "
        f"the ratio at {2 * med(1, 'client_cpu_s') / cpu2:.2f}x."
    )
    if args.no_scheduler:
        return

    def on_scheduler(address: str):  # noqa: ANN202
        w = time.perf_counter()
        grid = args.scaling == "grid"
        r = sweep(model, samples=None if grid else n, chunk=chunk, scheduler=address, write=False)
        return r, time.perf_counter() - w

    r, w = _with_scheduler(on_scheduler)
    assert len(r.front) == front_size, "a Dask sweep changed the front"
    print(
        f"\n## 3. `dask scheduler` + 2 `dask worker --no-nanny`: {r.seconds:.2f} s "
        f"(client CPU {r.client_cpu_s:.2f} s, worker CPU {r.worker_cpu_s:.2f} s): "
        f"**{s1 / r.seconds:.2f}x** `dse sweep --jobs 1`'s sweep seconds"
    )


if __name__ == "__main__":
    main()
