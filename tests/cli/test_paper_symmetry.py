"""Every die class of the paper study gets the same choices under the same limits; only the
die area (the class) and the package structure (dies per package, their link) differ; and a
winner on an edge of the space that is not a physical limit is refused (issue 35)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from tests.conftest import ROOT

PAPER = ROOT / "studies" / "paper"
sys.path.insert(0, str(PAPER))
import classes  # noqa: E402
import findings  # noqa: E402


def _spec(cls: str, tmp_path: Path) -> dict:
    job = classes.Job("llama3-70b-decode", cls, "cost")
    return yaml.safe_load(classes.class_spec(job, tmp_path).read_text(encoding="utf-8"))


def test_every_class_gets_the_same_choices_and_limits(tmp_path: Path) -> None:
    assert set(classes.CLASSES) == {"full", "half", "quarter", "eighth", "chiplet", "dual"}
    specs = {c: _spec(c, tmp_path) for c in classes.CLASSES}
    ref = specs["full"]
    for cls, s in specs.items():
        space = {k: v for k, v in s["space"].items() if k != "die_area_mm2"}
        assert space == {k: v for k, v in ref["space"].items() if k != "die_area_mm2"}, cls
        assert s["constraints"] == ref["constraints"], cls
        assert s["objectives"] == ref["objectives"], cls
        assert s["search"] == ref["search"], cls
        extra = set(classes.CLASS_FIXED.get(cls, {}))
        assert extra <= set(classes.PACKAGE_FIELDS), cls
        fixed = {k: v for k, v in s["fixed"].items() if k not in classes.PACKAGE_FIELDS}
        assert fixed == {k: v for k, v in ref["fixed"].items() if k not in extra}, cls
        # every class's grid has the same number of die areas, inside the template's range
        low, high, step = classes.CLASSES[cls]
        assert round((high - low) / step) + 1 == 7, cls
        assert 88 <= low and high <= 858, cls


@pytest.mark.parametrize("cls", ["full", "half", "quarter", "eighth", "chiplet", "dual"])
def test_every_class_holds_the_same_compute_silicon(cls: str, tmp_path: Path) -> None:
    s = _spec(cls, tmp_path)
    dies = int(classes.CLASS_FIXED.get(cls, {}).get("dies_per_gpu", 1))
    low, high, step = classes.CLASSES[cls]
    expr = s["derived"]["cluster_size"]
    for i in range(7):
        area = low + i * step
        n = eval(expr, {}, {"die_area_mm2": area})  # noqa: S307 (the spec's own arithmetic)
        assert n * dies * area <= 52096 < (n + 1) * dies * area, (cls, area)


def test_the_space_is_unclipped_for_every_class() -> None:
    space = yaml.safe_load((ROOT / "spaces" / "paper" / "search.yaml").read_text())["space"]
    clocks = space["clock_ghz"]["choices"]
    assert min(clocks) <= 1.0 and max(clocks) >= 2.0
    assert {2, 4} <= set(space["links_per_gpu"]["choices"])
    assert set(space["cooling"]["choices"]) == {"air", "liquid"}
    assert {"cowos-s", "cowos-l"} <= set(space["packaging"]["choices"])
    assert "rack" in space["scaleup_fabric"]["choices"]
    # HBM generation (stack speed) and capacity are separate choices
    assert len(space["hbm_tbps_per_stack"]["choices"]) == 4
    assert len(space["hbm_gb_per_stack"]["choices"]) == 4


def test_at_bound_names_the_edges_a_design_sits_on() -> None:
    space = {
        "die_area_mm2": {"type": "float", "low": 88, "high": 858, "step": 14},
        "clock_ghz": {"type": "categorical", "choices": [1.0, 1.5, 2.0]},
        "links_per_gpu": {"type": "categorical", "choices": [2, 4, 9, 18]},
        "link_type": {"type": "categorical", "choices": ["electrical", "cpo"]},
        "hbm_stacks_per_die": {"type": "int", "low": 1, "high": 8},
        "spare_silicon_fraction": {"type": "float", "low": 0.0, "high": 0.1},
    }
    row = {"die_area_mm2": 175.0, "clock_ghz": 1.5, "links_per_gpu": 18,
           "link_type": "cpo", "hbm_stacks_per_die": 8, "spare_silicon_fraction": 0.1}  # fmt: skip
    text = classes.at_bound(row, space, 175.0, 343.0)
    assert text == (
        "die_area_mm2=low;links_per_gpu=high;hbm_stacks_per_die=high;spare_silicon_fraction=high"
    )
    # the class's area edge, 18 links and 8 stacks (the die's edge) are declared limits; a 10 %
    # spare share is the space's own edge
    assert classes.unphysical_edges(text) == ["spare_silicon_fraction=high"]
    assert classes.unphysical_edges("") == []


def test_findings_refuses_a_winner_on_an_unphysical_edge(tmp_path: Path) -> None:
    keys = {"case": "c", "price_basis": "cost", "objective": findings.COST}
    pd.DataFrame([{**keys, "winner": "half"}]).to_csv(tmp_path / "winners.csv", index=False)
    edge = "spare_silicon_fraction=high"
    rows = [{**keys, "die_class": "half", "at_bound": f"clock_ghz=high;{edge}"},
            {**keys, "die_class": "full", "at_bound": edge}]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "classes.csv", index=False)
    with pytest.raises(findings.EdgeWinnerError, match="c cost cost per token: half at "
                       "spare_silicon_fraction=high"):  # fmt: skip
        findings.refuse_edge_winners(tmp_path)
    rows[0]["at_bound"] = "clock_ghz=high"  # a physical limit: accepted
    pd.DataFrame(rows).to_csv(tmp_path / "classes.csv", index=False)
    findings.refuse_edge_winners(tmp_path)


def test_cases_at_scale_hold_their_multiple_of_the_silicon(tmp_path: Path) -> None:
    assert {"llama3-8b-decode", "deepseek-r1-reasoning"} <= set(classes.CASES)
    for case, scale in classes.CASE_SCALE.items():
        job = classes.Job(case, "quarter", "cost")
        s = yaml.safe_load(classes.class_spec(job, tmp_path).read_text(encoding="utf-8"))
        n = eval(s["derived"]["cluster_size"], {}, {"die_area_mm2": 203.5})  # noqa: S307
        assert n == 256 * scale  # 1,024 H100-equivalents = 4,096 quarter dies for scale 16
    assert max(classes.CASE_SCALE.values()) * 64 >= 1024


def _evaluate(job: classes.Job, tmp_path: Path, **values: object) -> dict[str, Any]:
    """Every metric of one design of ``job``'s spec: HBM3e 36 GB stacks, CPO x2, 1.5 GHz,
    CoWoS-S, liquid, with ``values`` on top."""
    from dse import api

    model = api.load(classes.class_spec(job, tmp_path), sets=classes._sets(job, []))
    design = dict(hbm_tbps_per_stack=1.2288, hbm_gb_per_stack=36, optics_per_link=2,
                  link_type="cpo", clock_ghz=1.5, packaging="cowos-s", cooling="liquid",
                  **values)  # fmt: skip
    return model.evaluate(design, strict=False)


@pytest.mark.parametrize("case", sorted(classes.CASES))
def test_every_case_evaluates_a_design(case: str, tmp_path: Path) -> None:
    m = _evaluate(classes.Job(case, "half", "cost"), tmp_path, die_area_mm2=406.0,
                  hbm_stacks_per_die=4, links_per_gpu=9, scaleup_fabric="packet")  # fmt: skip
    assert float(m[classes.POWER]) > 0 and float(m[classes.COST]) > 0, case


def test_the_mixed_fleet_case_is_judged_on_the_fleet(tmp_path: Path) -> None:
    job = classes.Job("mixed-fleet", "quarter", "cost")
    s = _spec("quarter", tmp_path)  # a plain case, for comparison
    f = yaml.safe_load(classes.class_spec(job, tmp_path).read_text(encoding="utf-8"))
    assert [o["metric"] for o in f["objectives"]][:2] == [classes.FLEET_COST, classes.FLEET_POWER]
    assert "fleet.models_fit" in f["constraints"] and "perf.slo_met" not in f["constraints"]
    assert f["space"] == s["space"]  # the same freedom as every case
    m = _evaluate(job, tmp_path, die_area_mm2=203.0, hbm_stacks_per_die=2, links_per_gpu=4,
                  scaleup_fabric="ocs")  # fmt: skip
    assert float(m["fleet.mix_tokens_per_s"]) > 0
    assert 0 <= float(m["fleet.stranded_compute_fraction"]) <= 1
    assert classes.minimized(classes.FLEET_COST) and not classes.minimized(classes.FLEET_POWER)
