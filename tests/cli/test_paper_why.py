"""FINDINGS' "Why" section and EVIDENCE's waterfalls and break-even table, from a real row of
a searched class (issue 35): the cost lines add up to the cost per token."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import ROOT

PAPER = ROOT / "studies" / "paper"
sys.path.insert(0, str(PAPER))
import findings  # noqa: E402

HERE = Path(__file__).parent / "data" / "paper_class_row.csv"


def _classes() -> pd.DataFrame:
    row = pd.read_csv(HERE)
    rows = []
    for cls, scale in (("full", 1.0), ("quarter", 1.1)):
        for obj in (findings.COST, findings.POWER):
            r = row.iloc[0].copy()
            r["die_class"], r["objective"] = cls, obj
            r[findings.COST] = r[findings.COST] * scale
            r["value"] = r[findings.COST] if obj == findings.COST else r[obj]
            rows.append(r)
    return pd.DataFrame(rows)


def test_the_lines_add_up_to_the_cost_per_token() -> None:
    r = pd.read_csv(HERE).iloc[0]
    parts = findings.decomposition(r)
    assert sum(parts.values()) == pytest.approx(float(r[findings.COST]), rel=1e-12)
    # every line of the TCO is named: nothing is left for "other"
    assert abs(parts["other"]) <= 1e-6 * float(r[findings.COST])
    assert parts["silicon"] > 0 and parts["HBM"] > 0 and parts["energy"] > 0


def test_why_quantifies_the_four_benefits_and_the_decomposition() -> None:
    cl = _classes()
    w = pd.DataFrame([{"case": findings.REFERENCE_CASE, "price_basis": "cost",
                       "objective": findings.COST, "winner": "full"}])  # fmt: skip
    fleet = cl[cl["objective"] == findings.COST].copy()
    fleet["case"], fleet["fleet.stranded_compute_fraction"] = findings.FLEET_CASE, [0.094, 0.018]
    fleet["fleet.stranded_hbm_fraction"] = [0.11, 0.21]
    text = findings._why({"classes": pd.concat([cl, fleet]), "winners": w})
    assert text.startswith("## Why")
    assert "compute stranded by whole replicas full 9.4%, quarter 1.8%" in text
    assert "HBM stranded full 11%, quarter 21%" in text
    for word in ("Yield", "Power efficiency", "Blast radius", "allocation", "USD/mm²"):
        assert word in text
    line = next(x for x in text.splitlines() if x.startswith("- **Cost per token**"))
    assert "winner full silicon" in line and "runner-up quarter silicon" in line
    evidence = findings._waterfalls({"classes": cl})
    assert "| full |" in evidence and "| quarter |" in evidence


def test_breakeven_table_lists_only_the_ties() -> None:
    be = pd.DataFrame(
        [
            {"case": "c", "objective": findings.COST, "winner": "full", "runner_up": "half",
             "parameter": "technology.rack_silicon_mm2", "nominal": 115200.0,
             "parity_value": 52143.7},
            {"case": "c", "objective": findings.COST, "winner": "full", "runner_up": "half",
             "parameter": "technology.wafer_cost_usd", "nominal": 17000.0,
             "parity_value": float("nan")},
        ]
    )  # fmt: skip
    text = findings._breakeven({"breakeven": be})
    assert "technology.rack_silicon_mm2 | 1.152e+05 | 5.214e+04 |" in text
    assert "wafer_cost_usd" not in text
    assert "1 of 2 (case, objective, assumption) rows never tie in range." in text
