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
