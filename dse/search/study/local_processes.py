"""How many local processes ``--jobs`` may start (``dse run`` and ``dse sweep``)."""

from __future__ import annotations

import os

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
