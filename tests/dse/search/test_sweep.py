"""dse sweep: the grid front equals brute force, chunking changes nothing, errors are clear."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dse import api
from dse.errors import SweepError
from dse.model.pareto import nondominated_mask
from dse.results.quality import front_hypervolume, reference_point
from dse.search.study.warm_start import warm_start_designs
from dse.search.sweep.sweep import grid_axes, halton, sweep
from tests.conftest import SPACES

SMALL_SPACE = {
    "die_area_mm2": {"type": "float", "low": 100, "high": 800, "step": 100},
    "hbm_stacks_per_die": {"type": "int", "low": 1, "high": 7, "step": 3},
    "optics_per_link": {"type": "categorical", "choices": [1, 4]},
    "cluster_size": {"type": "int", "low": 8, "high": 64, "log": True},
}


def _small_spec(tmp_path: Path, *, space: dict | None = None, name: str = "small") -> Path:
    raw = yaml.safe_load((SPACES / "litegpu.yaml").read_text())
    raw["study"] = name
    raw["space"] = space or SMALL_SPACE
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _keys(df: pd.DataFrame) -> set[tuple]:
    cols = sorted(c for c in df.columns if c.startswith("params."))
    return {tuple(float(v) for v in row) for row in df[cols].itertuples(index=False)}


@pytest.mark.slow  # 4-6 s: sweeps a grid into a study and a brute-force front
def test_grid_front_equals_brute_force_and_is_chunk_independent(
    tmp_path: Path, studies_dir: Path
) -> None:
    model = api.load(_small_spec(tmp_path))
    axes = grid_axes(dict(model.spec.space))
    assert len(axes["die_area_mm2"]) == 8 and list(axes["hbm_stacks_per_die"]) == [1, 4, 7]
    mesh = np.meshgrid(*axes.values(), indexing="ij")
    params = {k: m.ravel() for k, m in zip(axes, mesh, strict=True)}
    total = len(params["die_area_mm2"])
    metrics = model.evaluate(params, strict=False)
    obj = np.column_stack([metrics[k] for k in model.objective_names])
    ok = np.all(np.isfinite(obj), axis=1)
    for v in model.violations(params, metrics):
        ok &= np.asarray(v) <= 0
    idx = np.flatnonzero(ok)
    idx = idx[nondominated_mask(obj[idx], model.maximize)]
    expected = {
        tuple(float(params[k][i]) for k in sorted(params)) for i in idx
    }  # sorted names match sorted 'params.*' columns

    whole = sweep(model, chunk=10_000, write=False)
    tiny = sweep(model, chunk=7)
    assert whole.designs_evaluated == tiny.designs_evaluated == total == whole.space_size
    assert whole.feasible == int(ok.sum()) and 0 < whole.feasible < total
    assert _keys(whole.front) == expected == _keys(tiny.front)
    assert len(expected) >= 2

    written = pd.read_csv(studies_dir / "small" / "sweep_front.csv")
    assert _keys(written) == expected
    summary = json.loads((studies_dir / "small" / "sweep.json").read_text())
    assert summary["designs_evaluated"] == total
    assert summary["front_size"] == len(expected)
    assert summary["designs_per_s"] > 0


def test_continuous_float_is_refused_on_a_grid_but_sampled(
    tmp_path: Path, studies_dir: Path
) -> None:
    space = {**SMALL_SPACE, "die_area_mm2": {"type": "float", "low": 100, "high": 800}}
    model = api.load(_small_spec(tmp_path, space=space, name="cont"))
    with pytest.raises(SweepError, match="die_area_mm2"):
        sweep(model)
    a = sweep(model, samples=300, chunk=64, seed=3, write=False)
    b = sweep(model, samples=300, chunk=300, seed=3, write=False)
    assert a.designs_evaluated == 300 and a.mode == "samples"
    assert _keys(a.front) == _keys(b.front)  # chunking does not change the samples
    f = a.front
    assert f["params.die_area_mm2"].between(100, 800).all()
    assert f["params.cluster_size"].between(8, 64).all()
    assert set(f["params.hbm_stacks_per_die"]) <= {1, 4, 7}
    assert set(f["params.optics_per_link"]) <= {1, 4}


def test_halton_rows_are_the_radical_inverses_of_their_numbers_in_any_chunking() -> None:
    from fractions import Fraction

    def radical_inverse(k: int, base: int) -> float:  # exact, digit by digit
        r, f = Fraction(0), Fraction(1, base)
        while k:
            k, d = divmod(k, base)
            r += d * f
            f /= base
        return float(r)

    primes = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79]
    start = 4096 * 4096 - 700  # runs cross the table's cycles and a new digit group
    shift = np.random.default_rng(5).random(22)
    u = halton(start, 1500, 22, seed=5)
    for i in (0, 1, 699, 700, 701, 1499):
        for j, base in enumerate(primes):
            assert u[i, j] == pytest.approx(
                (radical_inverse(start + i + 1, base) + shift[j]) % 1.0, abs=1e-15
            )
    for cut in (1, 37, 700, 1499):  # any chunking gives the same rows, bit for bit
        parts = np.vstack(
            [halton(start, cut, 22, seed=5), halton(start + cut, 1500 - cut, 22, seed=5)]
        )
        assert np.array_equal(parts, u)
    assert halton(0, 0, 3, seed=1).shape == (0, 3)


def test_halton_is_low_discrepancy_and_seeded() -> None:
    u = halton(0, 1024, 3, seed=1)
    assert u.shape == (1024, 3) and (u >= 0).all() and (u < 1).all()
    # Every one of 16 equal bins per axis holds 64 +- 2 points (random sampling gives +- 8).
    for j in range(3):
        counts = np.bincount((u[:, j] * 16).astype(int), minlength=16)
        assert np.abs(counts - 64).max() <= 2
    assert np.array_equal(u[10:20], halton(10, 10, 3, seed=1))
    assert not np.array_equal(u, halton(0, 1024, 3, seed=2))


def test_warm_start_designs_are_the_coarse_front_subset_of_most_volume(
    tmp_path: Path, studies_dir: Path
) -> None:
    model = api.load(_small_spec(tmp_path, name="warm"))
    coarse = sweep(model, samples=400, seed=0, write=False).front
    designs = warm_start_designs(model, samples=400, k=4, seed=0)
    assert len(coarse) > 4 and len(designs) == 4
    assert all(set(d) == set(model.spec.space) for d in designs)
    assert all(type(d["hbm_stacks_per_die"]) is int for d in designs)  # enqueued as Optuna ints
    cols = sorted(f"params.{n}" for n in model.spec.space)
    key_of = {tuple(float(v) for v in r): i for i, r in enumerate(coarse[cols].to_numpy())}
    chosen = [key_of[tuple(float(d[n]) for n in sorted(d))] for d in designs]  # all on the front
    values = coarse[model.objective_names].to_numpy(dtype=float)
    ref = reference_point(thresholds=[None] * 3, maximize=model.maximize, reference_set=values)
    best = front_hypervolume(values[chosen], ref, model.maximize)
    rng = np.random.default_rng(0)
    for _ in range(30):  # greedy volume selection beats random subsets of the same size
        other = rng.choice(len(values), size=4, replace=False)
        assert best >= front_hypervolume(values[other], ref, model.maximize)


@pytest.mark.slow
def test_a_sweep_starts_no_more_processes_than_it_has_chunks(
    tmp_path: Path, studies_dir: Path
) -> None:
    """``--jobs 8`` on a one-chunk sweep evaluates in this process: seven workers would only
    start, wait and stop."""
    model = api.load(_small_spec(tmp_path))
    result = sweep(model, jobs=8, write=False)
    assert result.workers == 1
    assert result.designs_evaluated == len(
        np.meshgrid(*grid_axes(dict(model.spec.space)).values())[0].ravel()
    )
