from __future__ import annotations

import numpy as np
import pytest

from dse.errors import ExprError
from dse.spec.expr import parse_expr


def test_names_are_dotted_metrics_and_params() -> None:
    e = parse_expr("perf.package_power_w <= 1200 and die_area_mm2 > 100")
    assert e.names == {"perf.package_power_w", "die_area_mm2"}


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "open('x')",
        "perf.x[0] < 1",
        "'a' < 'b'",
        "lambda: 1",
        "[1, 2]",
        "x if y else z",
        "True",
    ],
)
def test_rejects_everything_outside_the_grammar(text: str) -> None:
    with pytest.raises(ExprError, match="not allowed|only numbers|cannot parse"):
        parse_expr(text)


def test_le_violation_is_relative_to_the_bound() -> None:
    e = parse_expr("p <= 1200")
    # 1300 W against 1200 W: (1300 - 1200) / 1200
    assert e.violation({"p": 1300.0}) == pytest.approx(100 / 1200)
    assert e.violation({"p": 600.0}) == pytest.approx(-0.5)


def test_ge_and_small_bounds_use_unit_scale() -> None:
    e = parse_expr("a >= 0.5")
    assert e.violation({"a": 0.2}) == pytest.approx(0.3)  # scale max(|0.5|, 1) = 1


def test_bare_name_is_feasible_when_nonzero() -> None:
    e = parse_expr("perf.model_fits")
    assert e.violation({"perf.model_fits": 1.0}) <= 0
    assert e.violation({"perf.model_fits": 0.0}) > 0
    assert parse_expr("not perf.model_fits").violation({"perf.model_fits": 0.0}) <= 0


def test_and_or_take_worst_and_best() -> None:
    env = {"a": 2.0, "b": 5.0}
    assert parse_expr("a <= 1 and b <= 10").violation(env) == pytest.approx(1.0)
    assert parse_expr("a <= 1 or b <= 10").violation(env) == pytest.approx(-0.5)


def test_vectorized_evaluation_matches_scalar() -> None:
    e = parse_expr("x * 2 + 1 <= y ** 2 and x != 3")
    xs = np.array([0.0, 1.0, 3.0, 10.0])
    ys = np.array([1.0, 1.0, 4.0, 2.0])
    batch = e.violation({"x": xs, "y": ys})
    scalar = [float(e.violation({"x": x, "y": y})) for x, y in zip(xs, ys, strict=True)]
    assert np.allclose(batch, scalar)
    assert list(batch <= 0) == [True, False, False, False]


def test_value_arithmetic() -> None:
    assert parse_expr("-(2 + 3) * 4 / 2 % 7").evaluate({}) == pytest.approx(-10 % 7)
