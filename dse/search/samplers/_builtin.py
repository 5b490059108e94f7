"""The built-in samplers, registered under the ``dse.samplers`` entry-point group (pyproject)
like anyone's: Optuna's NSGA-II/III, TPE, random, GP, and an exhaustive grid."""

from __future__ import annotations

import functools
import inspect
import itertools
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import optuna

from dse.search.samplers.plugin import Sampler
from dse.search.stored import STALE_ATTR
from dse.search.study.recovery import enqueue_trials
from dse.search.sweep.chunks import grid_axis
from dse.spec.messages import did_you_mean
from dse.spec.schema import ParamSpec

#: The default search (docs/search.md, "Which sampler, and why"): NSGA-II with a small
#: population, simulated binary crossover (eta 15) and polynomial mutation (eta 10) of each
#: parameter with probability 1/n (Deb & Agrawal 1995; Deb et al. 2002), as pymoo's NSGA-II
#: does. Optuna's own defaults (population 50, uniform crossover, mutation by resampling)
#: reach 73 % of ZDT1's hypervolume in 1,000 trials, these 98 % (benchmarks/RESULTS.md). A
#: spec's ``options`` override each key; ``crossover: uniform``, ``mutation: resample`` and
#: ``population_size: 50`` give Optuna's defaults back.
GA_DEFAULTS: dict[str, dict[str, Any]] = {
    "nsga2": {
        "population_size": 20,
        "crossover": {"name": "sbx", "eta": 15},
        "mutation": {"name": "polynomial", "eta": 10},
    },
}
CROSSOVERS = {
    "sbx": "SBXCrossover",
    "uniform": "UniformCrossover",
    "blxalpha": "BLXAlphaCrossover",
    "spx": "SPXCrossover",
    "undx": "UNDXCrossover",
    "vsbx": "VSBXCrossover",
}
MUTATIONS = {"polynomial": "PolynomialMutation", "resample": None}


def _operator(kind: str, table: Mapping[str, str | None], value: Any) -> Any:
    """``sbx`` or ``{name: sbx, eta: 15}`` -> an Optuna crossover/mutation object."""
    if not isinstance(value, str | dict):
        return value
    spec = {"name": value} if isinstance(value, str) else dict(value)
    name = spec.pop("name", None)
    if name not in table:
        raise ValueError(
            f"unknown {kind} {name!r} ({did_you_mean(str(name), table)}valid choices: "
            f"{', '.join(table)}; write {kind}: NAME or {{name: NAME, eta: ...}})"
        )
    cls_name = table[name]
    if cls_name is None:
        if spec:
            raise ValueError(f"{kind} {name!r} takes no options, got {', '.join(spec)}")
        return None
    cls = getattr(optuna.samplers.nsgaii, cls_name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return cls(**spec)
    except TypeError as exc:
        valid = [p for p in inspect.signature(cls).parameters]
        raise ValueError(f"{kind} {name!r}: {exc} (valid options: {', '.join(valid)})") from None


_GA_OPERATORS: dict[str, Callable[[Any], Any]] = {
    "crossover": functools.partial(_operator, "crossover", CROSSOVERS),
    "mutation": functools.partial(_operator, "mutation", MUTATIONS),
}


def grid_values(p: ParamSpec) -> list[Any] | None:
    """The grid of a discrete parameter as Python values; None for a continuous float."""
    axis = grid_axis(p)
    return None if axis is None else axis.tolist()


def grid_points(space: Mapping[str, ParamSpec], seed: int | None) -> list[dict[str, Any]]:
    """Every point of a discrete space, in a seeded shuffled order (as Optuna's GridSampler)."""
    names = list(space)
    axes = [grid_values(space[n]) or [] for n in names]
    points = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*axes)]
    order = np.random.default_rng(seed).permutation(len(points))
    return [points[i] for i in order]


def enqueue_grid(
    space: Mapping[str, ParamSpec], seed: int | None, study: optuna.Study, target: int
) -> int:
    """Queue the grid points not yet tried, up to ``target`` trials; return the grid size."""
    points = grid_points(space, seed)
    seen = {
        tuple(sorted(t.params.items()))
        for t in study.get_trials(deepcopy=False)
        if not t.user_attrs.get(STALE_ATTR)
    }
    enqueue_trials(study, [p for p in points[:target] if tuple(sorted(p.items())) not in seen])
    return len(points)


def _grid_space(space: Mapping[str, ParamSpec]) -> dict[str, str]:
    return {
        n: "the grid sampler needs a 'step' for float parameters"
        for n, p in space.items()
        if grid_values(p) is None
    }


def _gp(**kwargs: Any) -> optuna.samplers.BaseSampler:
    """Optuna's GPSampler, with what to install when its optional dependencies are missing."""
    try:
        import scipy  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        raise ImportError(
            "sampler 'gp' needs torch and scipy: pip install 'litegpu-dse[gp]' (or choose "
            "nsga2, nsga3, tpe, random, grid)"
        ) from None
    return optuna.samplers.GPSampler(**kwargs)


# The options a spec may give are GPSampler's.
_gp.__signature__ = inspect.signature(optuna.samplers.GPSampler)  # type: ignore[attr-defined]

NSGA2 = Sampler(
    build=optuna.samplers.NSGAIISampler, defaults=GA_DEFAULTS["nsga2"], convert=_GA_OPERATORS
)
NSGA3 = Sampler(build=optuna.samplers.NSGAIIISampler, convert=_GA_OPERATORS)
TPE = Sampler(build=optuna.samplers.TPESampler)
RANDOM = Sampler(build=optuna.samplers.RandomSampler, independent=True)
GP = Sampler(build=_gp)
#: Grid points are enqueued before the run (``enqueue``) and the random sampler only draws
#: them in order: Optuna's GridSampler calls study.stop(), which only works inside
#: study.optimize, not with ask/tell.
GRID = Sampler(
    build=optuna.samplers.RandomSampler,
    independent=True,
    check_space=_grid_space,
    enqueue=enqueue_grid,
)
