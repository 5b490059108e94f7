"""A spec runs only the evaluators it selects (issue 16, item 1): ZDT1 with one custom
evaluator records only its own metrics and its own fixed fields; GPU specs keep every built-in."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from dse import api
from dse.errors import SpecError
from dse.testing import check_evaluator
from tests.conftest import ROOT

ZDT1 = ROOT / "spaces" / "zdt1" / "spec.yaml"


def zdt1_copy(tmp_path: Path, **changes: object) -> Path:
    """The shipped ZDT1 spec with top-level fields replaced, beside a copy of its module."""
    data = yaml.safe_load(ZDT1.read_text())
    data.update(changes)
    (tmp_path / "zdt1.py").write_text((ZDT1.parent / "zdt1.py").read_text())
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_zdt1_spec_runs_only_its_own_evaluator() -> None:
    model = api.load(ZDT1)
    assert list(model.evaluators) == ["zdt1"]
    assert sorted(model.metrics) == ["zdt1.f1", "zdt1.f2"]
    assert model.context == {"scale": 1.0}  # no preset resolution, no GPU defaults


def test_fixed_fields_no_selected_evaluator_reads_are_spec_errors(tmp_path: Path) -> None:
    spec = zdt1_copy(tmp_path, fixed={"scal": 2.0})
    with pytest.raises(SpecError) as err:
        api.load(spec)
    (problem,) = err.value.problems
    assert problem.field == "fixed.scal" and "did you mean 'scale'" in problem.message
    # ...and a GPU field means nothing to ZDT1 either.
    spec = zdt1_copy(tmp_path, fixed={"gpu": "h100-sxm"})
    with pytest.raises(SpecError, match="unknown fixed field 'gpu'"):
        api.load(spec)


def test_zdt1_evaluator_passes_the_conformance_check() -> None:
    model = api.load(ZDT1)
    fn = model.evaluators["zdt1"].fn
    design = {"scale": 1.0, **{f"x{i}": 0.3 for i in range(1, 6)}}
    check_evaluator(fn, design, batch={"x1": [0.0, 0.5, 1.0], "x2": [0.1, 0.2, 0.3]})


def test_gpu_specs_without_an_evaluators_entry_run_every_built_in() -> None:
    model = api.load(ROOT / "spaces" / "litegpu.yaml")
    assert list(model.evaluators) == ["availability", "cost", "perf"]


def test_installed_evaluators_by_name_and_by_the_metrics_a_spec_names(tmp_path: Path) -> None:
    (tmp_path / "mine_mod.py").write_text(
        "def f(design):\n    return {'w': float(design['die_area_mm2'])}\n"
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        textwrap.dedent("""
        study: sel
        fixed: {gpu: h100-sxm, cluster_size: 64}
        space:
          die_area_mm2: {type: float, low: 200, high: 800}
        evaluators: [perf, {mine: mine_mod:f}]
        objectives:
          - {metric: mine.w, direction: minimize}
          - {metric: cost.usd_per_pflops, direction: minimize}
        """)
    )
    model = api.load(spec)
    # perf by name, cost because an objective names one of its metrics; availability not.
    assert list(model.evaluators) == ["cost", "perf", "mine"]
    assert not any(m.startswith("availability.") for m in model.metrics)
    metrics = api.evaluate(model, {"die_area_mm2": 400.0})
    assert metrics["mine.w"] == 400.0 and metrics["cost.usd_per_pflops"] > 0


def test_an_unknown_installed_name_is_a_spec_error_with_did_you_mean(tmp_path: Path) -> None:
    spec = zdt1_copy(tmp_path, evaluators=["zdt1x", {"zdt1": "zdt1:zdt1"}])
    with pytest.raises(SpecError) as err:
        api.load(spec)
    (problem,) = err.value.problems
    assert problem.field == "evaluators.zdt1x"
    assert "no installed evaluator 'zdt1x'" in problem.message
    assert "availability, cost, perf" in problem.message


def test_each_spec_folder_imports_its_own_module_of_a_shared_name(tmp_path: Path) -> None:
    """Two specs, each beside its own ``lin.py`` (different functions), loaded in one process:
    the second spec gets its own module, not the first one's from ``sys.modules`` (a notebook
    or the in-process test runner loads many specs)."""
    paths = []
    for folder, fn, scale in (("a", "f", 1.0), ("b", "lin", 3.0)):
        d = tmp_path / folder
        d.mkdir()
        (d / "lin.py").write_text(
            f"def {fn}(design):\n    return {{'y': {scale} * float(design['x'])}}\n"
        )
        spec = {
            "study": f"lin-{folder}",
            "evaluators": {"lin": f"lin:{fn}"},
            "space": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
            "objectives": [{"metric": "lin.y", "direction": "minimize"}],
            "search": {"sampler": "random", "trials": 2, "seed": 0},
        }
        (d / "spec.yaml").write_text(yaml.safe_dump(spec))
        paths.append(d / "spec.yaml")
    first, second = (api.load(p) for p in paths)
    assert first.evaluate({"x": 0.5})["lin.y"] == pytest.approx(0.5, rel=1e-12)
    assert second.evaluate({"x": 0.5})["lin.y"] == pytest.approx(1.5, rel=1e-12)
