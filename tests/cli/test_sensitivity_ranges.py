"""``dse sensitivity``'s default swings stay inside each field's valid range, as the domain's
own preset schema judges it (an independent check of the engine's reading of
``fixed_schema``): never a negative fraction, never a markup below cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from dse import api
from dse.inspect.sensitivity import Bounds, default_range
from objectives.presets import technology_presets
from objectives.presets.schema import technology_field_type
from tests.cli.inprocess import run_in_process

ROOT = Path(__file__).resolve().parents[2]
SETS = ["die_area_mm2=204", "hbm_stacks_per_die=2", "optics_per_link=4", "cluster_size=4096"]


@pytest.mark.parametrize(
    ("v", "bounds", "expected"),
    [
        (0.03, Bounds(0, 1), (0.024, 0.036)),  # the maintenance fraction: not -0.164
        (0.98, Bounds(0, 1), (0.976, 0.984)),  # a yield moves by 20 % of its shortfall
        (1.0, Bounds(1), (1.0, 1.2)),  # a markup at cost never goes below it
        (2.6, Bounds(1), (2.08, 3.12)),
        (10.0, Bounds(0, 12), (8.0, 12.0)),  # clipped at the top
        (5.0, Bounds(0, low_open=True), (4.0, 6.0)),
        (3.0, Bounds(1, integer=True), (2.0, 4.0)),  # whole numbers around 2.4 and 3.6
    ],
)
def test_default_range_by_hand(v: float, bounds: Bounds, expected: tuple[float, float]) -> None:
    assert default_range(v, bounds) == pytest.approx(expected, rel=1e-12)


def test_dse_sensitivity_litegpu_never_leaves_a_fields_valid_range(tmp_path: Path) -> None:
    sets = [a for s in SETS for a in ("--set", s)]
    res = run_in_process(
        "sensitivity", str(ROOT / "spaces" / "litegpu.yaml"), *sets, "--json", cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    payload = json.loads(res.stdout)
    n4 = technology_presets()["n4"]
    checked = 0
    for rows in payload["metrics"].values():
        for r in rows:
            group, key = r["assumption"].split(".", 1)
            assert group == "technology"
            field = TypeAdapter(technology_field_type(key, n4[key]))
            for v in (r["low"], r["high"]):
                try:
                    field.validate_python(v)
                except ValidationError as exc:
                    pytest.fail(f"{r['assumption']} swung to {v}: {exc.errors()[0]['msg']}")
                checked += 1
            assert r["low"] <= r["nominal_value"] if "nominal_value" in r else True
    assert checked > 200
    swung = {r["assumption"]: r for r in next(iter(payload["metrics"].values()))}
    m = swung["technology.maintenance_fraction_per_year"]
    assert (m["low"], m["high"]) == pytest.approx((0.024, 0.036))
    markups = [r for name, r in swung.items() if "markup" in name]
    assert markups and all(r["low"] >= 1.0 for r in markups)  # never below cost


def test_only_and_the_no_effect_count(tmp_path: Path) -> None:
    sets = [a for s in SETS for a in ("--set", s)]
    spec = str(ROOT / "spaces" / "litegpu.yaml")
    res = run_in_process("sensitivity", spec, *sets, "--only", "pue,lifetime_years", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "technology.pue" in res.stdout and "technology.lifetime_years" in res.stdout
    assert "defect_density" not in res.stdout
    everything = run_in_process("sensitivity", spec, *sets, "--top", "3", cwd=tmp_path)
    lines = [ln for ln in everything.stdout.splitlines() if "no effect on" in ln]
    assert lines and all(ln.split()[0].isdigit() for ln in lines)  # one count, no name list
    bad = run_in_process("sensitivity", spec, *sets, "--only", "pua", cwd=tmp_path)
    assert bad.returncode == 2 and "did you mean 'technology.pue'" in bad.stderr


def test_a_robust_spec_swings_its_own_distributions() -> None:
    robust = ROOT / "spaces" / "paper" / "robust.yaml"
    design = {
        "die_area_mm2": 204, "hbm_stacks_per_die": 2, "optics_per_link": 4,
        "link_type": "cpo", "scaleup_fabric": "switched",
    }  # fmt: skip
    model, _ = api.load_for_evaluate(robust, design)
    frame = api.sensitivity(robust, sets=design)
    assert frame.attrs["swings_from"].startswith("p10/p90 of the spec's distributions")
    assert set(frame["assumption"]) == {u.name for u in model.uncertain}
