"""docs/validation.md keeps the cost model's lines against published manufacturing-cost estimates
(benchmarks/cost_estimates.yaml, evaluated by benchmarks/validate_cost.py)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _vc():
    path = ROOT / "benchmarks" / "validate_cost.py"
    spec = importlib.util.spec_from_file_location("validate_cost", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def res():
    vc = _vc()
    return vc, vc.results()[0]


def test_doc_table_matches_the_model(res):
    """Regenerate with `.venv/bin/python benchmarks/validate_cost.py` after a cost change."""
    _, r = res
    text = (ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
    section = text[text.index("<!-- section: cost") :]
    section = section.split("\n<!-- section: ", 1)[0]  # up to the next script's section
    doc = {
        (m[1], m[2]): float(m[3].replace(",", ""))
        for m in re.finditer(r"^\| ([\w-]+) \| (\w+) \| ([\d,]+) \|", section, re.M)
    }
    assert set(doc) == {(x["gpu"], x["line"]) for x in r}
    for x in r:
        assert doc[(x["gpu"], x["line"])] == pytest.approx(x["pred"], abs=1.0), x


def test_error_is_zero_inside_the_range_and_to_the_nearest_bound_outside():
    vc = _vc()
    assert vc.error(250, 200, 300) == 0.0
    assert vc.error(150, 200, 300) == pytest.approx(-0.25)
    assert vc.error(390, 200, 300) == pytest.approx(0.30)


def test_lines_within_25_percent_of_the_public_splits(res):
    """Issue 30: the die and HBM lines and the totals within +-25 % of the public estimates,
    for every GPU with a preset. The packaging and test lines are reported in
    docs/validation.md, not asserted here: they are split by packaging technology in the
    package-as-data model (issue 25), and today's H100 test line ($392 against $920, which
    includes the SXM module) and the CoWoS-L/SoIC packaging lines miss."""
    _, r = res
    checked = [x for x in r if x["line"] in ("die", "hbm", "total")]
    assert {x["gpu"] for x in checked} >= {"h100-sxm", "h200"}
    for x in checked:
        assert abs(x["err"]) <= 0.25, x
    die = next(x for x in r if (x["gpu"], x["line"]) == ("h100-sxm", "die"))
    assert die["low"] / 1.25 <= die["pred"] <= die["high"] * 1.25
