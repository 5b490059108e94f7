"""Spares per silicon in the paper study (studies/paper/spares.py, spares.csv): every class
gets the same share of its compute silicon, rounded down to whole GPUs, and the committed
file is what the evaluators give."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from tests.conftest import ROOT

PAPER = ROOT / "studies" / "paper"
sys.path.insert(0, str(PAPER))
import classes  # noqa: E402
import spares  # noqa: E402


def test_every_class_gets_the_same_spare_silicon_in_whole_gpus() -> None:
    sp = pd.read_csv(PAPER / "spares.csv")
    cl = pd.read_csv(PAPER / "classes.csv")
    assert set(sp["die_class"]) == set(classes.CLASSES)
    assert set(sp["case"]) == set(spares.SPARE_CASES)
    cl = cl[(cl["price_basis"] == "cost") & (cl["objective"] == classes.COST)]
    for r in sp.itertuples():
        best = cl[(cl["case"] == r.case) & (cl["die_class"] == r.die_class)].iloc[0]
        gpus = best["cluster_size"]
        # floor(share x GPUs): never more spare silicon than the share, less than one GPU short
        assert r.spares == np.floor(r.spare_silicon_share * gpus + 1e-9), r
    zero = sp[sp["spare_silicon_share"] == 0]
    more = sp[sp["spare_silicon_share"] > 0]
    assert (zero["spares"] == 0).all()
    # spares never lower the tail capacity and always cost something once there is one
    merged = more.merge(zero, on=["case", "die_class"], suffixes=("", "_0"))
    assert (merged["capacity_p99"] >= merged["capacity_p99_0"] - 1e-12).all()
    bought = merged[merged["spares"] > 0]
    assert (bought["usd_per_mtok"] > bought["usd_per_mtok_0"]).all()


def test_the_committed_spares_are_what_the_evaluators_give(tmp_path: Path) -> None:
    table = pd.read_csv(PAPER / "classes.csv")
    mine = table[table["case"] == "llama3-70b-decode"]
    now = spares.spare_rows(mine, str(tmp_path), [])
    kept = pd.read_csv(PAPER / "spares.csv")
    kept = kept[kept["case"] == "llama3-70b-decode"].reset_index(drop=True)
    assert len(now) == len(kept) == len(classes.CLASSES) * len(spares.SHARES)
    for col in ("spares", "capacity_p99", "capacity_mean", "usd_per_mtok"):
        np.testing.assert_allclose(now[col], kept[col], rtol=1e-5, err_msg=col)
