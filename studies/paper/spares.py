"""Spares provisioned per silicon in the class study (``spares.csv``, issue 35).

The paper's blast-radius argument: a failed small GPU takes a small replica down and a small
spare replaces it. Around each class's cost-best design (cost basis, from ``classes.csv``) the
study's spares are topped up with the same share of compute silicon for every class
(``spare_silicon_fraction``, rounded down to whole GPUs, so no class gets more spare silicon than
the share: objectives/availability/spares.py), and the capacity kept 99 % of the time, the mean
capacity and the cost per token are read at each share. Every other value is the class's own.
Imported by ``reproduce.py``.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
from classes import CLASSES, COST, SEARCHED, Job, _sets, best_design, class_spec

#: Cases where the classes' replicas differ most in size (70B on 1-2 GPUs of a reticle die,
#: 405B on 4-16).
SPARE_CASES = ("llama3-70b-decode", "llama3-405b-decode")
#: Spare silicon as a share of the cluster's compute silicon: none, then one to four reticle
#: dies' worth of the 64-die cluster.
SHARES = (0.0, 1 / 64, 2 / 64, 4 / 64)
METRICS = {
    "availability.spares": "spares",
    "availability.capacity_p99": "capacity_p99",
    "availability.capacity_availability": "capacity_mean",
    COST: "usd_per_mtok",
}


def spare_rows(classes: pd.DataFrame, scratch: str, user_sets: list[str]) -> pd.DataFrame:
    """spares.csv: per case x class x share of spare silicon, the class's cost-best design's
    spares, p99 and mean capacity and cost per token."""
    from dse import api

    rows = []
    for case, cls in itertools.product(SPARE_CASES, CLASSES):
        best = best_design(classes, case, cls, COST)
        if best is None:
            continue
        job = Job(case, cls, "cost")
        model = api.load(class_spec(job, Path(scratch)), sets=_sets(job, user_sets))
        params: dict[str, np.ndarray] = {
            p: np.full(len(SHARES), best[p], dtype=object) for p in SEARCHED
        }
        params = {k: v.astype(float) if k not in _NAMES else v for k, v in params.items()}
        params["spare_silicon_fraction"] = np.asarray(SHARES, float)
        with np.errstate(all="ignore"):
            m = model.evaluate(params, strict=False)
        for i, share in enumerate(SHARES):
            row = {"case": case, "die_class": cls, "spare_silicon_share": share}
            row.update({name: float(m[key][i]) for key, name in METRICS.items()})
            rows.append(row)
    return pd.DataFrame(rows)


#: The searched parameters whose values are names, not numbers.
_NAMES = ("link_type", "scaleup_fabric", "packaging", "cooling")
