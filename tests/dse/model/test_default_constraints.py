"""A domain's default constraints hold unless a spec opts out (issue 36, item 1): the engine adds
``Domain.default_constraints`` of the evaluators a spec runs; ``default_constraints: false`` or
``{drop: [...]}`` opts out explicitly; the built-in domain's physical checks make an
unbuildable design infeasible on a spec that lists no constraint."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from dse import api
from dse.errors import EvaluatorError, SpecError
from dse.model.load import lock_dict
from dse.plugin import Domain
from dse.search.spec_lock import differences
from tests.conftest import ROOT

MODULE = """
from types import SimpleNamespace

DOMAIN = SimpleNamespace(
    name="toy",
    params=["x"],
    default_constraints=["e.ok", "e.y <= 0.9", "other.z"],
)


def f(design):
    x = float(design["x"])
    return {"ok": float(x > 0.5), "y": x}


f.metrics = {"ok": ("0/1", "1 if x > 0.5"), "y": ("1", "x itself")}
f.domain = DOMAIN
"""


def toy_spec(tmp_path: Path, **changes: object) -> Path:
    (tmp_path / "toydom.py").write_text(textwrap.dedent(MODULE))
    spec = {
        "study": "toy",
        "fixed": {"x": 0.3},
        "evaluators": {"e": "toydom:f"},
        "objectives": [{"metric": "e.y", "direction": "minimize"}],
        "constraints": ["e.y >= 0"],
        "search": {"sampler": "random", "trials": 1, "seed": 0},
    }
    spec.update(changes)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def held(path: Path) -> list[str]:
    return [c.source for c in api.load(path).constraints]


def test_defaults_join_after_the_specs_own(tmp_path: Path) -> None:
    # other.z names an evaluator the spec does not run: left out, not an error.
    assert held(toy_spec(tmp_path)) == ["e.y >= 0", "e.ok", "e.y <= 0.9"]


def test_a_default_makes_the_design_infeasible(tmp_path: Path) -> None:
    ev = api.evaluate(api.load(toy_spec(tmp_path)))
    assert not ev.feasible and ev.violated == ["e.ok"]
    ev = api.evaluate(api.load(toy_spec(tmp_path, default_constraints=False)))
    assert ev.feasible


def test_opting_out_whole_or_by_name(tmp_path: Path) -> None:
    assert held(toy_spec(tmp_path, default_constraints=False)) == ["e.y >= 0"]
    kept = held(toy_spec(tmp_path, default_constraints={"drop": ["e.ok"]}))
    assert kept == ["e.y >= 0", "e.y <= 0.9"]


def test_a_default_the_spec_writes_is_held_once(tmp_path: Path) -> None:
    assert held(toy_spec(tmp_path, constraints=["e.ok"])) == ["e.ok", "e.y <= 0.9"]


def test_dropping_a_name_that_is_no_default_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as err:
        api.load(toy_spec(tmp_path, default_constraints={"drop": ["e.okk"]}))
    (problem,) = err.value.problems
    assert problem.field == "default_constraints.drop.0"
    assert "did you mean 'e.ok'" in problem.message and "e.y <= 0.9" in problem.message


def test_the_lock_records_the_defaults_held(tmp_path: Path) -> None:
    lock = lock_dict(api.load(toy_spec(tmp_path)), "journal:x")
    assert lock["constraints"] == ["e.y >= 0"]
    assert lock["default_constraints_held"] == ["e.ok", "e.y <= 0.9"]
    assert "default_constraints" not in lock  # the default reads as a lock from before it
    off = lock_dict(api.load(toy_spec(tmp_path, default_constraints=False)), "journal:x")
    assert "default_constraints_held" not in off and off["default_constraints"] is False
    # resuming under other defaults is a difference; the same spec is none
    assert "default_constraints_held (removed)" in differences(lock, off)
    assert differences(lock, lock_dict(api.load(toy_spec(tmp_path)), "journal:x")) == []


def test_a_domain_refuses_defaults_that_are_not_text() -> None:
    with pytest.raises(EvaluatorError, match="default_constraints"):
        Domain(name="d", default_constraints=[3])  # type: ignore[list-item]
    with pytest.raises(EvaluatorError, match="default_constraints"):
        Domain(name="d", default_constraints="e.ok")  # type: ignore[arg-type]


def test_builtin_physical_checks_hold_without_a_constraints_list(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "spaces" / "h100.yaml").read_text())
    assert "constraints" not in data
    path = tmp_path / "h100.yaml"
    path.write_text(yaml.safe_dump(data))
    assert set(held(path)) == {
        "cost.reticle_fits",
        "cost.interposer_fits",
        "cost.hbm_fits_generation",
        "perf.topology_ok",
        "perf.model_fits",
        "perf.slo_met",
    }
    assert api.evaluate(api.load(path)).feasible
    # 48 GB stacks on HBM3 (24 GB per stack at most) and a die beyond the reticle.
    ev = api.evaluate(api.load(path, sets={"hbm_gb_per_stack": 48}))
    assert ev.violated == ["cost.hbm_fits_generation"]
    ev = api.evaluate(api.load(path, sets={"die_area_mm2": 900}))
    assert ev.violated == ["cost.reticle_fits"]
    data["default_constraints"] = False
    path.write_text(yaml.safe_dump(data))
    assert api.evaluate(api.load(path, sets={"die_area_mm2": 900})).feasible
