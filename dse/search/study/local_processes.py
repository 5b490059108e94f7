"""Starting the worker processes of a local sweep (:mod:`dse.search.sweep._local`) cheaply, and
measuring what they cost: the start method, a forkserver's preloaded modules, the main script
hidden from spawned workers, and the CPU time of every process below this one."""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from dse.model.study_model import StudyModel

#: Local worker processes allowed per core: more only wait for a core, each a whole Python
#: process with its own copy of the model (and a typo such as ``--jobs 100000`` must not fork
#: until the machine gives out).
MAX_JOBS_PER_CPU = 4


def jobs_problem(jobs: int) -> str | None:
    """Why ``--jobs`` cannot run on this machine, or None."""
    cpus = os.cpu_count() or 1
    limit = max(8, MAX_JOBS_PER_CPU * cpus)
    if jobs < 1:
        return f"--jobs must be at least 1 (got {jobs})"
    if jobs > limit:
        return (
            f"--jobs {jobs:,} is more than {limit} local processes ({MAX_JOBS_PER_CPU} per core "
            f"of this machine's {cpus}); for more, use workers on other machines (dse worker)"
        )
    return None


def start_method() -> str:
    """``fork`` on Linux while this process has a single thread (no imports or pickling in the
    workers: they start in milliseconds), otherwise ``forkserver`` where the platform has one
    (forking a multi-threaded process can deadlock the child; on macOS system libraries start
    threads of their own, which is why Python stopped forking there), else ``spawn``."""
    methods = multiprocessing.get_all_start_methods()
    if sys.platform.startswith("linux") and "fork" in methods and threading.active_count() == 1:
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


@contextmanager
def main_script_hidden() -> Iterator[None]:
    """While workers start, hide the main script's path from multiprocessing, which otherwise
    re-runs the script in every spawned worker (or the forkserver) so that functions defined in
    it can be unpickled (for ``dse``: pandas, typer, rich, the whole CLI, ~0.5 CPU-s); the
    workers need only the sweep code and the evaluators' modules."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or path is None or getattr(main, "__spec__", None) is not None:
        yield
        return
    del main.__file__
    try:
        yield
    finally:
        main.__file__ = path


def preload_modules(model: StudyModel) -> list[str]:
    """Modules a forkserver imports once for every worker: the sweep code and the evaluators'."""
    names = {"numpy", "dse.search.sweep._local"}
    for ev in model.evaluators.values():
        names.add(getattr(ev.fn, "__module__", None) or "")
    return sorted(n for n in names if n and not n.startswith("__"))


def children_cpu_s() -> float:
    """CPU seconds so far of every process below this one, running or reaped (workers forked
    from a forkserver are its children, not ours)."""
    import psutil  # a dependency of dask.distributed

    try:
        import resource  # Unix
    except ImportError:
        total = 0.0
    else:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        total = r.ru_utime + r.ru_stime
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total
