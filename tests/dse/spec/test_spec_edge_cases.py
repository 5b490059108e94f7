"""Regression tests for spec and constraint edge cases found in review."""

from __future__ import annotations

from pathlib import Path

import pytest

from dse import api
from dse.errors import SpecError
from dse.spec.expr import parse_expr
from tests.dse.spec.test_spec_errors import GOOD


def _problems(tmp_path: Path, text: str) -> list[str]:
    p = tmp_path / "spec.yaml"
    p.write_text(text)
    with pytest.raises(SpecError) as info:
        api.load(p)
    return [str(x) for x in info.value.problems]


@pytest.mark.parametrize("text", ["&a [1, *a]\n", "a: &a\n  b: *a\n"])
def test_recursive_yaml_alias_is_a_spec_error(tmp_path: Path, text: str) -> None:
    assert "recursive alias" in _problems(tmp_path, text)[0]


def test_duplicate_yaml_key_is_reported_with_its_line(tmp_path: Path) -> None:
    text = GOOD.replace(
        "  hbm_stacks_per_die: {type: int, low: 1, high: 8}\n",
        "  hbm_stacks_per_die: {type: int, low: 1, high: 8}\n"
        "  die_area_mm2: {type: float, low: 100, high: 200}\n",
    )
    (line,) = _problems(tmp_path, text)
    assert ":8: space.die_area_mm2: duplicate key" in line


def test_unknown_field_in_a_list_item_suggests_the_valid_ones(tmp_path: Path) -> None:
    text = GOOD.replace("direction: minimize}", "direction: minimize, treshold: 3}")
    (line,) = _problems(tmp_path, text)
    assert "objectives.0.treshold" in line and "did you mean 'threshold'" in line


@pytest.mark.parametrize("choices", ["[1, 1.0, 2]", "[1, true]"])
def test_categorical_choices_equal_to_optuna_are_not_distinct(
    tmp_path: Path, choices: str
) -> None:
    text = GOOD.replace(
        "  hbm_stacks_per_die: {type: int, low: 1, high: 8}\n",
        f"  optics_per_link: {{type: categorical, choices: {choices}}}\n",
    )
    assert "choices must be distinct" in _problems(tmp_path, text)[0]


def test_strict_comparison_at_equality_is_violated() -> None:
    assert parse_expr("x < 5").violation({"x": 5.0}) > 0
    assert parse_expr("x > 5").violation({"x": 5.0}) > 0
    assert parse_expr("x <= 5").violation({"x": 5.0}) <= 0
    assert parse_expr("x < 5").violation({"x": 4.0}) == pytest.approx(-0.2)
    assert parse_expr("x > 5").violation({"x": 6.0}) == pytest.approx(-0.2)
