"""The default search is strong on plain problems: ZDT1 and DTLZ2 hypervolume within 1,000 trials.

The example specs (spaces/zdt1, spaces/dtlz2) name only their own evaluator and leave the
sampler's options to the engine's defaults (dse.search.samplers.factory.GA_DEFAULTS). Each
generation is asked, evaluated vectorized through the study model and told, as the runner does; the
hypervolume of every feasible design after 1,000 trials is compared with the true front's
(reference point: the specs' thresholds, 1.1 per objective). Seed 0 as in the specs;
benchmarks/bench_search.py measures more seeds (docs/search.md).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import optuna
import pytest

from dse import api
from dse.model.pareto import reference_point
from dse.results.quality import front_hypervolume
from dse.search.samplers.factory import distribution, make_sampler, sampler_options
from tests.conftest import SPACES

R = 1.1
TRUE_HV = {
    # ZDT1 front f2 = 1 - sqrt(f1), f1 in [0, 1]: the integral of R - f2 plus the strip f1 > 1.
    "zdt1": (R - 1 + 2 / 3) + (R - 1) * R,
    # DTLZ2 front: the unit sphere's positive octant, volume pi/6, inside the cube [0, R]^3.
    "dtlz2": R**3 - math.pi / 6,
}


def hypervolume_fraction(spec: str, trials: int) -> float:
    model = api.load(spec)
    search = model.spec.search
    study = optuna.create_study(
        directions=[o.direction for o in model.spec.objectives], sampler=make_sampler(model)
    )
    dists = {n: distribution(p) for n, p in model.spec.space.items()}
    generation = int(sampler_options(search)["population_size"])
    values = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        while sum(len(v) for v in values) < trials:
            asked = [study.ask(dists) for _ in range(generation)]
            params = {n: np.array([t.params[n] for t in asked]) for n in dists}
            metrics = model.evaluate(params, strict=False)
            obj = np.column_stack([metrics[k] for k in model.objective_names])
            for t, row in zip(asked, obj, strict=True):
                study.tell(t, [float(x) for x in row])
            values.append(obj)
    points = np.vstack(values)[:trials]
    ref = reference_point(
        thresholds=[o.threshold for o in model.spec.objectives],
        maximize=model.maximize,
        reference_set=None,
    )
    assert np.allclose(ref, R)
    return front_hypervolume(points, ref, model.maximize) / TRUE_HV[model.spec.study]


@pytest.mark.parametrize(("problem", "target"), [("zdt1", 0.95), ("dtlz2", 0.85)])
def test_default_search_reaches_the_target_hypervolume(problem: str, target: float) -> None:
    spec = SPACES / problem / "spec.yaml"
    model = api.load(str(spec))
    assert model.spec.search.sampler == "nsga2" and not model.spec.search.options
    assert model.spec.search.trials == 1000
    assert hypervolume_fraction(str(spec), 1000) >= target


def test_true_hypervolumes_by_sampling_the_fronts() -> None:
    # Independent check of the closed forms: dense samples of each true front.
    f1 = np.linspace(0, 1, 20001)
    zdt1 = np.column_stack([f1, 1 - np.sqrt(f1)])
    assert front_hypervolume(zdt1, np.array([R, R]), [False, False]) == pytest.approx(
        TRUE_HV["zdt1"], rel=1e-4
    )
    u, v = np.meshgrid(np.linspace(0, np.pi / 2, 300), np.linspace(0, np.pi / 2, 300))
    sphere = np.column_stack(
        [(np.cos(u) * np.cos(v)).ravel(), (np.cos(u) * np.sin(v)).ravel(), np.sin(u).ravel()]
    )
    hv = front_hypervolume(sphere, np.array([R, R, R]), [False] * 3)
    assert hv == pytest.approx(TRUE_HV["dtlz2"], rel=5e-3) and hv <= TRUE_HV["dtlz2"]


def _with_search(tmp_path, **search: object) -> str:
    import yaml

    data = yaml.safe_load((SPACES / "dtlz2" / "spec.yaml").read_text())
    data["search"] = {"sampler": "nsga2", "trials": 40, "seed": 0, **search}
    (tmp_path / "dtlz2.py").write_text((SPACES / "dtlz2" / "dtlz2.py").read_text())
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _second_generation(spec: str) -> list[list[float]]:
    model = api.load(spec)
    study = optuna.create_study(directions=["minimize"] * 3, sampler=make_sampler(model))
    dists = {n: distribution(p) for n, p in model.spec.space.items()}
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        for _ in range(40):
            t = study.ask(dists)
            m = model.evaluate({n: np.array([t.params[n]]) for n in dists}, strict=False)
            study.tell(t, [float(m[k][0]) for k in model.objective_names])
            rows.append([t.params[n] for n in dists])
    return rows[20:]


def test_ga_operators_are_named_in_the_spec(tmp_path) -> None:
    from dse.errors import SpecError
    from dse.search.samplers.factory import GA_DEFAULTS

    model = api.load(_with_search(tmp_path))
    sampler = make_sampler(model)
    assert isinstance(sampler, optuna.samplers.NSGAIISampler)
    assert sampler_options(model.spec.search) == GA_DEFAULTS["nsga2"]
    # Names, or a mapping with the operator's own options; each key overrides the default.
    opts = {"crossover": "uniform", "mutation": {"name": "polynomial", "eta": 5}}
    model = api.load(_with_search(tmp_path, options=opts))
    run = sampler_options(model.spec.search)
    assert run["population_size"] == 20 and run["crossover"] == "uniform"
    # The operators are used: same seed, other operators -> other children from generation 2.
    first = _second_generation(_with_search(tmp_path))
    assert _second_generation(_with_search(tmp_path)) == first
    assert _second_generation(_with_search(tmp_path, options=opts)) != first
    for bad, fragment in [
        ({"crossover": "sbxx"}, "unknown crossover 'sbxx' (did you mean 'sbx'?"),
        ({"mutation": {"name": "polynomial", "etta": 3}}, "mutation 'polynomial':"),
        ({"mutation": {"name": "resample", "eta": 3}}, "takes no options"),
    ]:
        model = api.load(_with_search(tmp_path, options=bad))
        with pytest.raises(SpecError, match="search.options") as err:
            make_sampler(model)
        assert fragment in str(err.value), str(err.value)
