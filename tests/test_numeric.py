from __future__ import annotations

import base64

import numpy as np

from tests.numeric import first_difference


def test_last_bits_of_floats_are_tolerated() -> None:
    assert first_difference('{"x": 0.35404397213303707}', '{"x": 0.3540439721330371}') is None


def test_rounded_figure_may_move_one_unit_in_last_place() -> None:
    assert first_difference("cost 3.37x", "cost 3.38x") is None
    assert first_difference("cost 3.37x", "cost 3.39x") is not None


def test_integers_and_real_changes_are_caught() -> None:
    assert first_difference("500 trials", "501 trials") is not None
    assert first_difference("a=0.5", "a=0.6") is not None
    assert first_difference("front 12", "front 12 extra") is not None
    assert first_difference("value: NaN", "value: 1.0") is not None


def _plotly_array(values: list[float]) -> str:
    raw = base64.b64encode(np.asarray(values, dtype="<f8").tobytes()).decode()
    return '{"x":{"dtype":"f8","bdata":"' + raw.replace("/", "\\u002f") + '"}}'


def test_plotly_base64_arrays_compare_number_by_number() -> None:
    a = _plotly_array([0.35404397213303707, 1.0, 2.5])
    b = _plotly_array([0.3540439721330371, 1.0, 2.5])
    assert a != b
    assert first_difference(a, b) is None
    assert first_difference(a, _plotly_array([0.36, 1.0, 2.5])) is not None
