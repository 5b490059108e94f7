"""dse sensitivity: one-at-a-time swings, checked against direct evaluations."""

from __future__ import annotations

from pathlib import Path

import pytest

from dse import api
from dse.inspect.sensitivity import assumptions_of, sensitivity
from tests.conftest import ROOT
from tests.dse.model.test_robust import SPEC

DESIGN = ["die_area_mm2=400", "hbm_stacks_per_die=4"]


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    p = tmp_path / "rob.yaml"
    p.write_text(SPEC)
    return p


def test_swings_match_direct_evaluations(spec: Path) -> None:
    model, params = api.load_for_evaluate(spec, DESIGN)
    table = sensitivity(model, params)
    assert set(table) == {"cost.usd_per_mtok", "perf.tokens_per_joule"}
    rows = table["cost.usd_per_mtok"]
    assert [r.swing for r in rows] == sorted((r.swing for r in rows), reverse=True)
    assert {r.assumption for r in rows} == {u.name for u in model.uncertain}
    for r in rows:
        u = next(u for u in model.uncertain if u.name == r.assumption)
        assert r.low == pytest.approx(float(u.ppf(0.1)))
        assert r.high == pytest.approx(float(u.ppf(0.9)))
        one, p = api.load_for_evaluate(spec, [*DESIGN, f"{r.assumption}={r.high!r}"])
        assert r.metric_at_high == pytest.approx(api.evaluate(one, p)["cost.usd_per_mtok"])
        assert r.nominal == pytest.approx(api.evaluate(model, params)["cost.usd_per_mtok"])
    # electricity and wafer price do not change tokens per joule
    assert all(r.swing == 0 for r in table["perf.tokens_per_joule"])


def test_default_swings_are_technology_plus_minus_20_percent() -> None:
    model, params = api.load_for_evaluate(ROOT / "spaces" / "h100.yaml", [])
    rows = {u.name: (lo, hi, u.nominal) for u, lo, hi in assumptions_of(model)}
    lo, hi, nominal = rows["technology.defect_density_per_cm2"]
    assert (lo, hi, nominal) == pytest.approx((0.056, 0.084, 0.07))
    lo, hi, nominal = rows["technology.bond_yield"]
    # a yield's shortfall from 1 (0.01) swings +/-20 %: 0.988 to 0.992
    assert (lo, hi, nominal) == pytest.approx((0.988, 0.992, 0.99))
    assert "technology.yield_model" not in rows  # names are not swung
    # definitions are not uncertainties: a unit conversion, a JEDEC width, the wafer's size
    for definition in ("hbm_bytes_per_gb", "hbm3_interface_bits", "wafer_diameter_mm"):
        assert f"technology.{definition}" not in rows
    assert "technology.wafer_cost_usd" in rows  # an integer estimate is still swung
    table = sensitivity(model, params, metrics=["cost.die_yield"])
    top = {s.assumption: s for s in table["cost.die_yield"][:3]}
    assert "technology.defect_density_per_cm2" in top
    worse = top["technology.defect_density_per_cm2"]  # more defects, fewer good dies
    assert worse.metric_at_low > worse.nominal > worse.metric_at_high
