"""The serving search's product grid: hardware groups laid out on small axes give every design
bit for bit what the groups' own rows give (objectives.perf.search.product_grid)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import objectives.perf as perf_mod
import objectives.perf.search as search_mod
from dse import api
from dse.search.sweep.sweep import _sample_chunks
from objectives._groups import same_bits
from objectives.perf import evaluate_perf
from objectives.perf.network import plus_where, where_zero
from objectives.perf.search import product_grid
from objectives.perf.serving import Serving

_ODD = np.array([0.0, -0.0, 1.5, np.inf, -np.inf, np.nan, 1e-310, 3.0])


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=float).view(np.uint64)


def test_grid_gives_every_group_its_own_bits() -> None:
    rng = np.random.default_rng(0)
    a, b, c = rng.integers(0, 30, 4000), rng.integers(0, 6, 4000), rng.integers(0, 3, 4000)
    rows = {
        "area": np.array([0.0, -0.0, np.nan, *range(1, 28)], dtype=float)[a],  # -0.0 is not 0.0
        "tflops": (a * 1.5)[:],  # a function of area's axis: no axis of its own
        "hbm": (b + 0.25),
        "hbm_gb": b * 24.0,  # likewise, of hbm's
        "net": np.array([1.0, 2.0, 4.0])[c],
        "one": np.full(4000, 7.0),  # one value: no axis
    }
    grid = product_grid(rows, k=10)
    assert grid is not None
    assert sorted(grid.shape) == [3, 6, 30] and grid.shape[-1] == 30  # the longest last
    for key, v in rows.items():
        assert grid.rows[key].ndim == 4 and grid.rows[key].shape[0] == 1
        on_grid = np.broadcast_to(grid.rows[key], (1, *grid.shape)).reshape(-1)
        assert np.array_equal(_bits(on_grid[grid.col]), _bits(v)), key


def test_grid_refused_where_the_product_is_mostly_empty_or_one_axis() -> None:
    rng = np.random.default_rng(1)
    x, y = rng.random(500), rng.random(500)  # 500 groups, 250,000 points
    assert product_grid({"x": x, "y": y}, k=4) is None
    assert product_grid({"x": x, "x2": 2 * x}, k=4) is None  # one axis: the rows as they are


@pytest.mark.parametrize(
    "cond_shape, x_shape", [((6, 1, 1, 1), (6, 2, 3, 4)), ((6, 1, 1), (1, 3, 4))]
)
def test_row_helpers_on_grid_shapes_match_numpy(
    cond_shape: tuple[int, ...], x_shape: tuple[int, ...]
) -> None:
    rng = np.random.default_rng(2)
    cond = rng.random(cond_shape) < 0.5
    cond.flat[0], cond.flat[-1] = False, True
    shape = np.broadcast_shapes(cond_shape, x_shape)
    base = rng.choice(_ODD, size=shape)
    extra = rng.choice(_ODD, size=x_shape)
    with np.errstate(invalid="ignore"):
        assert np.array_equal(
            _bits(plus_where(base, cond, extra)), _bits(base + np.where(cond, extra, 0.0))
        )
        fresh = rng.choice(_ODD, size=shape)
        assert np.array_equal(
            _bits(where_zero(cond, fresh.copy())), _bits(np.where(cond, fresh, 0.0))
        )


def test_grid_search_equals_group_rows_and_one_design_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = api.load("spaces/litegpu.yaml")
    (_, p), *_ = _sample_chunks(dict(model.spec.space), 30000, 30000, 3)
    design = model.design(p)
    used: list[bool] = []
    real = perf_mod._grid

    def spy(pr: object, g: object) -> object:
        grid = real(pr, g)  # type: ignore[arg-type]
        used.append(grid is not None)
        return grid

    monkeypatch.setattr(perf_mod, "_grid", spy)
    on_grid = evaluate_perf(design)
    assert used == [True]
    monkeypatch.setattr(perf_mod, "_grid", lambda pr, g: None)
    on_rows = evaluate_perf(design)
    assert on_grid.keys() == on_rows.keys()
    for key in on_grid:
        assert np.array_equal(_bits(on_grid[key]), _bits(on_rows[key])), key
    for i in range(0, 30000, 3000):  # one design at a time, as a trial evaluates it
        alone = evaluate_perf(model.design({k: v[i : i + 1] for k, v in p.items()}))
        for key in on_grid:
            assert np.array_equal(_bits(alone[key]), _bits(on_grid[key][i : i + 1])), (key, i)


def test_same_bits_compares_values_bit_for_bit() -> None:
    assert same_bits(
        {"a": [1.0, np.nan], "b": np.arange(3.0)}, {"b": np.arange(3.0), "a": [1.0, np.nan]}
    )
    assert not same_bits(0.0, -0.0)  # equal, not the same bits
    assert not same_bits(np.array([0.0]), np.array([-0.0]))
    assert not same_bits(np.arange(3.0), np.arange(3))  # same values, another dtype
    assert not same_bits([1.0, 2.0], (1.0, 2.0))
    assert not same_bits(1, 1.0) and not same_bits(True, 1)
    serving = Serving(bytes_per_elem=1.0, input_tokens=2048.0, output_tokens=128.0, phase="serve")
    assert same_bits(serving, dataclasses.replace(serving))
    assert not same_bits(serving, dataclasses.replace(serving, output_tokens=128))


def test_grid_timing_reused_for_the_same_inputs_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep's next batch on the same hardware axes reuses the last grid's timing and gets
    bit for bit what a fresh timing gives; a changed technology constant is timed again."""
    model = api.load("spaces/litegpu.yaml")
    (_, p1), (_, p2) = _sample_chunks(dict(model.spec.space), 60000, 30000, 4)
    timed: list[int] = []
    real = search_mod.timing

    def spy(*args: object, **kwargs: object) -> object:
        timed.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    def fresh(design: dict) -> dict:
        search_mod._LAST_GRID_TIMING.clear()
        return evaluate_perf(design)

    monkeypatch.setattr(search_mod, "timing", spy)
    monkeypatch.setattr(search_mod, "_LAST_GRID_TIMING", [])  # not an earlier test's grid
    d1, d2 = model.design(p1), model.design(p2)
    evaluate_perf(d1)
    assert len(timed) == 1
    reused = evaluate_perf(d2)
    assert len(timed) == 1  # the same grid, workload and technology: not timed again
    alone = fresh(d2)
    for key in alone:
        assert np.array_equal(_bits(reused[key]), _bits(alone[key])), key
    tech = dict(d2["technology"])
    tech["collective_step_latency_s"] = 2 * tech["collective_step_latency_s"]
    slower = {**d2, "technology": tech}
    timed.clear()
    changed = evaluate_perf(slower)
    assert len(timed) == 1  # a constant the timing reads changed: timed again
    alone = fresh(slower)
    for key in alone:
        assert np.array_equal(_bits(changed[key]), _bits(alone[key])), key
    assert not np.array_equal(changed["tpot_s"], reused["tpot_s"])
