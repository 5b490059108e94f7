"""Name checks of string choices: one name (a batch that shares it) and a batch of names."""

from __future__ import annotations

import numpy as np
import pytest

from objectives.choices import check_in, checked
from objectives.errors import ContextError

LINKS = ("electrical", "pluggable", "cpo")


@pytest.mark.parametrize(
    "names",
    [np.asarray("cpo"), np.asarray(["cpo"]), np.asarray(["cpo", "pluggable", "electrical"])],
)
def test_known_names_pass(names: np.ndarray) -> None:
    assert check_in(names, LINKS, "link_type", "link type") is None


@pytest.mark.parametrize(
    "names",
    [np.asarray("cpoo"), np.asarray(["cpoo"]), np.asarray(["cpo", "cpoo", "electrical"])],
)
def test_the_first_unknown_name_is_named(names: np.ndarray) -> None:
    with pytest.raises(ContextError, match="unknown link type 'cpoo' \\(did you mean 'cpo'"):
        check_in(names, LINKS, "link_type", "link type")


def test_checked_gives_one_value_for_a_shared_name() -> None:
    out = checked(np.broadcast_to(np.asarray("cpo"), (5,)), LINKS, "link_type", "link type")
    assert out.ndim == 0 and str(out) == "cpo"
    with pytest.raises(ContextError) as err:
        checked(np.broadcast_to(np.asarray("copper"), (5,)), LINKS, "link_type", "link type")
    assert err.value.path == "link_type"


def test_select_of_one_choice_is_np_select() -> None:
    """evaluator.select looks the choice up where every condition is one value: np.select's
    values, shape and dtype, the default where none holds, and masks where they vary."""
    from objectives._evaluator import select

    arr, one = np.array([1.5, 2.5, 3.5]), np.asarray(4.0)
    cases = [
        ([np.bool_(False), np.bool_(True)], [one, arr], 0.0),
        ([np.asarray(True), np.asarray(False)], [1.0, arr], -1.0),
        ([np.asarray(False)] * 2, [one, 2.0], np.nan),
        ([np.asarray(False), np.asarray(True)], [0, 1], -1),
        ([arr > 2, arr > 3], [one, arr], 7.0),
    ]
    for conds, choices, default in cases:
        got, want = select(conds, choices, default), np.select(conds, choices, default)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        assert got.flags.writeable
