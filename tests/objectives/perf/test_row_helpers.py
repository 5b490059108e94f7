"""Row-wise stand-ins for np.where in the serving timing give numpy's values bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from objectives.perf.network import plus_where, where_zero

_ODD = np.array([0.0, -0.0, 1.5, np.inf, -np.inf, np.nan, 1e-310, 3.0])


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(
        np.asarray(a, float).view(np.uint64), np.asarray(b, float).view(np.uint64)
    )


@pytest.mark.parametrize(
    "cond_shape, x_shape", [((8, 1), (8, 5)), ((8, 1), (1, 5)), ((8, 5), (8, 5)), ((1, 5), (8, 5))]
)
def test_where_zero_and_plus_where_match_numpy(
    cond_shape: tuple[int, int], x_shape: tuple[int, int]
) -> None:
    rng = np.random.default_rng(0)
    cond = rng.random(cond_shape) < 0.5
    cond.flat[0], cond.flat[-1] = False, True
    base = rng.choice(_ODD, size=(8, 5))
    extra = rng.choice(_ODD, size=x_shape)
    with np.errstate(invalid="ignore"):
        assert _same(plus_where(base, cond, extra), base + np.where(cond, extra, 0.0))
        fresh = rng.choice(_ODD, size=np.broadcast_shapes(cond_shape, x_shape))
        expected = np.where(cond, fresh, 0.0)
        assert _same(where_zero(cond, fresh.copy()), expected)
