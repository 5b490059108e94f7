from __future__ import annotations

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
