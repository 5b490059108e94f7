"""Run a command; report its wall time, CPU time and the peak memory of its whole process tree.

    .venv/bin/python benchmarks/peak_memory.py -- dse sweep spaces/litegpu.yaml --grid --jobs 2

Peak memory is the largest sum of the resident set sizes (RSS) of the command and all its
descendants (Dask scheduler, workers), sampled every 0.2 s with psutil. Pages shared between
processes count once per process, so this is an upper bound. CPU time is user + system of
the command and every descendant it waited for (``getrusage(RUSAGE_CHILDREN)``).
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time

import psutil


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv)
    root = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        total = 0
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for p in procs:
            try:
                total += p.memory_info().rss
            except psutil.NoSuchProcess:
                continue
        peak = max(peak, total)
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"exit {proc.returncode}; wall {wall:.1f} s; CPU {ru.ru_utime + ru.ru_stime:.1f} s "
        f"(user {ru.ru_utime:.1f}, system {ru.ru_stime:.1f}); peak RSS of the process tree "
        f"{peak / 2**30:.2f} GiB",
        file=sys.stderr,
    )
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
