"""Pooled memory over optics in the class study (``pool.csv``, issue 35).

The paper's lever against the weight copies that decide 70B/405B serving is a shared memory
pool reached over co-packaged optics (``memory_pool``: objectives/perf/pool.py, priced and
powered from technology/pool.yaml). Around each class's best design of the decode cases (cost
basis, from ``classes.csv``), the HBM (stacks per die, stack capacity) and the pool (what it
holds, its GB and TB/s per GPU) are chosen again together over a grid, every other searched
value kept; ``pool: none`` on the same grid is the control, and it must find the class's own
best again (the design is on that grid). A class whose pooled best beats its unpooled best
would gain from the pool; the ratio says by how much. Every spec constraint is held (the pool's
optical engines take die edge: perf.shoreline_used_fraction). Imported by ``reproduce.py``.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from classes import (
    CLASSES,
    COST,
    POWER,
    SEARCHED,
    Job,
    _sets,
    best_design,
    class_spec,
    minimized,
)

#: The decode cases, where weight copies and KV decide (FINDINGS: HBM is the largest line).
POOL_CASES = ("llama3-70b-decode", "llama3-405b-decode")
KINDS = ("none", "weights", "kv", "both")
#: The pool per GPU: from a few GB (405B FP8 weights over 64 GPUs are ~6.3 GB each) to a DDR5
#: server's share (1 TB per 8 GPUs); bandwidth from one 3.2T CPO port to four.
POOL_GB_PER_GPU = (16.0, 64.0, 256.0)
POOL_TBPS_PER_GPU = (0.4, 0.8, 1.6, 3.2)
STACKS = (1, 2, 3, 4, 6, 8)
STACK_GB = (16, 24, 36, 48)
COLUMNS = ["case", "die_class", "objective", "pool", "value", "vs_unpooled", "class_best",
           "hbm_stacks_per_die", "hbm_gb_per_stack", "memory_pool_gb_per_gpu",
           "memory_pool_tbps_per_gpu", "designs", "feasible"]  # fmt: skip


def _grid(base: dict[str, Any]) -> dict[str, np.ndarray]:
    """The base design with HBM and pool re-chosen: every combination, as arrays."""
    rows = [(s, g, "none", 0.0, 0.0) for s, g in itertools.product(STACKS, STACK_GB)]
    rows += [
        (s, g, k, gb, tb)
        for s, g, k, gb, tb in itertools.product(
            STACKS, STACK_GB, KINDS[1:], POOL_GB_PER_GPU, POOL_TBPS_PER_GPU
        )
    ]
    n = len(rows)
    cols = list(zip(*rows, strict=True))
    params: dict[str, np.ndarray] = {
        k: np.full(n, v, dtype=object if isinstance(v, str) else float) for k, v in base.items()
    }
    params["hbm_stacks_per_die"] = np.asarray(cols[0], float)
    params["hbm_gb_per_stack"] = np.asarray(cols[1], float)
    params["memory_pool"] = np.asarray(cols[2], dtype=object)
    params["memory_pool_gb_per_gpu"] = np.asarray(cols[3], float)
    params["memory_pool_tbps_per_gpu"] = np.asarray(cols[4], float)
    return params


def pool_rows(classes: pd.DataFrame, scratch: str, user_sets: list[str]) -> pd.DataFrame:
    """pool.csv: per decode case x class x objective, the best design without a pool and with
    each kind of pool, HBM and pool re-chosen around the class's cost-basis best."""
    from dse import api

    rows = []
    for case, cls in itertools.product(POOL_CASES, CLASSES):
        job = Job(case, cls, "cost")
        model = api.load(class_spec(job, Path(scratch)), sets=_sets(job, user_sets))
        for obj in (COST, POWER):
            r = best_design(classes, case, cls, obj)
            if r is None:
                continue
            params = _grid({p: r[p] for p in SEARCHED})
            n = len(params["memory_pool"])
            with np.errstate(all="ignore"):
                m = model.evaluate(params, strict=False)
            ok = np.ones(n, bool)
            for v in model.violations(params, m):
                ok &= np.broadcast_to(np.asarray(v, float) <= 0, (n,))
            y = np.where(ok & np.isfinite(m[obj]), m[obj], np.nan)
            lo = minimized(obj)
            control = None
            for kind in KINDS:
                of_kind = params["memory_pool"] == kind
                sel = np.flatnonzero(of_kind & np.isfinite(y))
                row = {"case": case, "die_class": cls, "objective": obj, "pool": kind,
                       "class_best": float(r[obj]), "designs": int(of_kind.sum()),
                       "feasible": len(sel)}  # fmt: skip
                if len(sel):
                    i = sel[np.argmin(y[sel])] if lo else sel[np.argmax(y[sel])]
                    row["value"] = float(y[i])
                    for k in ("hbm_stacks_per_die", "hbm_gb_per_stack",
                              "memory_pool_gb_per_gpu", "memory_pool_tbps_per_gpu"):  # fmt: skip
                        row[k] = float(params[k][i])
                    if kind == "none":
                        control = row["value"]
                    row["vs_unpooled"] = row["value"] / control if control else float("nan")
                rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)
