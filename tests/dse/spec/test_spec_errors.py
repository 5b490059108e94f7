"""Every kind of bad spec is reported as FILE:LINE: field: message, and never starts a study."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dse import api
from dse.errors import SpecError
from dse.spec.collect import collect_spec
from dse.spec.schema import json_schema

GOOD = """\
study: t
fixed:
  gpu: h100-sxm
  cluster_size: 64
space:
  die_area_mm2: {type: float, low: 100, high: 858}
  hbm_stacks_per_die: {type: int, low: 1, high: 8}
objectives:
  - {metric: cost.usd_per_mtok, direction: minimize}
  - {metric: perf.tokens_per_joule, direction: maximize}
constraints:
  - perf.model_fits
search: {sampler: nsga2, trials: 10, seed: 0}
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "spec.yaml"
    p.write_text(text)
    return p


def _problems(tmp_path: Path, text: str) -> list[str]:
    path = _write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        api.load(path)
    lines = [str(p) for p in info.value.problems]
    assert all(line.startswith(f"{path}:") for line in lines), lines
    return lines


def test_good_spec_loads(tmp_path: Path) -> None:
    model = api.load(_write(tmp_path, GOOD))
    assert model.objective_names == ["cost.usd_per_mtok", "perf.tokens_per_joule"]


# (replace this, with this) -> (line, field, fragment of the message)
CASES = {
    # Bad fixed values that only the models can judge are caught by probing the midpoint design.
    "bad_link_type": (
        ("cluster_size: 64", "cluster_size: 64\n  link_type: fibre"),
        5,
        "fixed.link_type",
        "valid choices: cpo, electrical, pluggable",
    ),
    "zero_cluster": (("cluster_size: 64", "cluster_size: 0"), 4, "fixed.cluster_size", "whole"),
    "bad_batch": (
        ("gpu: h100-sxm", "gpu: h100-sxm\n  workload: {batch: -4}"),
        4,
        "fixed.workload.batch",
        "",
    ),
    "yaml_syntax": (("space:\n", "space:\n  bad: [1, 2\n"), 7, "", "invalid YAML"),
    "unknown_top_key": (("search:", "serch: {}\nsearch:"), 13, "serch", "did you mean 'search'"),
    "unknown_param_key": (
        ("{type: float, low: 100, high: 858}", "{type: float, low: 100, hihg: 858}"),
        6,
        "space.die_area_mm2.hihg",
        "did you mean 'high'",
    ),
    "wrong_type": (("trials: 10", "trials: ten"), 13, "search.trials", "integer"),
    "low_ge_high": (
        ("low: 100, high: 858", "low: 900, high: 858"),
        6,
        "space.die_area_mm2.low",
        "must be below high",
    ),
    "bad_param_type": (
        ("{type: int, low: 1, high: 8}", "{type: integer, low: 1, high: 8}"),
        7,
        "space.hbm_stacks_per_die",
        "categorical, float, int",
    ),
    "bad_direction": (
        ("direction: minimize", "direction: minimise"),
        9,
        "objectives.0.direction",
        "'minimize' or 'maximize'",
    ),
    "bad_sampler": (("sampler: nsga2", "sampler: nsga4"), 13, "search.sampler", "nsga2"),
    "unknown_metric": (
        ("cost.usd_per_mtok", "cost.usd_per_mtk"),
        9,
        "objectives.0.metric",
        "did you mean 'cost.usd_per_mtok'",
    ),
    "unknown_metric_in_constraint": (
        ("  - perf.model_fits", "  - perf.model_fit"),
        12,
        "constraints.0",
        "unknown name 'perf.model_fit'",
    ),
    "constraint_call": (
        ("  - perf.model_fits", "  - __import__('os')"),
        12,
        "constraints.0",
        "function call is not allowed",
    ),
    "unknown_preset": (("gpu: h100-sxm", "gpu: h100-pcie"), 3, "fixed.gpu", "valid choices"),
    "unknown_fixed_key": (
        ("cluster_size: 64", "clustr_size: 64"),
        4,
        "fixed.clustr_size",
        "did you mean 'cluster_size'",
    ),
    "unknown_space_param": (
        ("die_area_mm2: {", "die_aera_mm2: {"),
        6,
        "space.die_aera_mm2",
        "did you mean 'die_area_mm2'",
    ),
    "bad_import_path": (
        ("constraints:", "evaluators:\n  x: no_such_mod:f\nconstraints:"),
        12,
        "evaluators.x",
        "cannot import module 'no_such_mod'",
    ),
    "import_path_shape": (
        ("constraints:", "evaluators:\n  x: justamodule\nconstraints:"),
        12,
        "evaluators.x",
        "module:function",
    ),
    "missing_objectives": (("objectives:", "objectivez:"), 8, "", ""),
    "bad_study_name": (("study: t", "study: ../evil"), 1, "study", "pattern"),
    "log_low_zero": (
        ("{type: int, low: 1, high: 8}", "{type: int, low: 0, high: 8, log: true}"),
        7,
        "space.hbm_stacks_per_die.log",
        "low > 0",
    ),
    "unknown_technology_field": (
        ("gpu: h100-sxm", "gpu: h100-sxm\n  technology: {preset: n4, defect_densty_per_cm2: 0.1}"),
        4,
        "fixed.technology",
        "did you mean 'defect_density_per_cm2'",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_spec_reports_file_line_field(tmp_path: Path, case: str) -> None:
    (old, new), line, field, fragment = CASES[case]
    assert old in GOOD
    problems = _problems(tmp_path, GOOD.replace(old, new, 1))
    hit = [p for p in problems if f":{line}:" in p and field in p and fragment in p]
    assert hit, problems


def test_empty_file_and_non_mapping(tmp_path: Path) -> None:
    assert "expected a mapping" in _problems(tmp_path, "")[0]
    assert "expected a mapping" in _problems(tmp_path, "- a\n- b\n")[0]


def test_all_problems_reported_at_once(tmp_path: Path) -> None:
    text = (
        GOOD.replace("trials: 10", "trials: ten")
        .replace("serch", "x")
        .replace("direction: maximize", "direction: max")
    )
    assert len(_problems(tmp_path, text)) == 2


def test_empty_space_is_one_fixed_design(tmp_path: Path) -> None:
    text = GOOD.split("space:")[0] + "objectives:" + GOOD.split("objectives:")[1]
    model = api.load(_write(tmp_path, text))
    assert model.spec.space == {}


def test_safe_loader_refuses_python_tags(tmp_path: Path) -> None:
    lines = _problems(
        tmp_path, GOOD.replace("study: t", "study: !!python/object/apply:os.system ['true']")
    )
    assert "invalid YAML" in lines[0]


def test_schema_is_json_and_names_fields() -> None:
    schema = json_schema()
    json.dumps(schema)
    assert {"study", "space", "objectives", "constraints", "search"} <= set(schema["properties"])


def test_shipped_specs_validate() -> None:
    root = Path(__file__).resolve().parents[3] / "spaces"
    specs = [p for p in root.rglob("*.yaml")]
    assert len(specs) >= 3
    for p in specs:
        assert collect_spec(p)[1] == [], p
        api.load(p)


def test_a_field_rejected_by_several_evaluators_is_reported_once(tmp_path: Path) -> None:
    # cost, perf and availability all evaluate the link type; the user sees one line.
    lines = _problems(
        tmp_path, GOOD.replace("cluster_size: 64", "cluster_size: 64\n  link_type: x")
    )
    assert len(lines) == 1 and "fixed.link_type" in lines[0]
