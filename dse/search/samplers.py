"""Samplers and what they search: Optuna distributions, named samplers, grid and warm start.

The seed is always explicit (Optuna 5 changed the defaults) and sampler options are checked
against the constructor, listing the valid ones.
"""

from __future__ import annotations

import inspect
import itertools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from dse.model.study_model import StudyModel
from dse.search.stored import STALE_ATTR, plain
from dse.search.sweep import warm_start_designs
from dse.spec.errors import SpecError, did_you_mean, short_repr
from dse.spec.schema import CategoricalParam, FloatParam, IntParam, ParamSpec, SearchSpec


def distribution(p: ParamSpec) -> BaseDistribution:
    if isinstance(p, FloatParam):
        return FloatDistribution(p.low, p.high, step=p.step, log=p.log)
    if isinstance(p, IntParam):
        return IntDistribution(p.low, p.high, step=p.step, log=p.log)
    return CategoricalDistribution(p.choices)


def grid_values(p: ParamSpec) -> list[Any] | None:
    """The grid of a discrete parameter; None for a continuous float."""
    if isinstance(p, CategoricalParam):
        return list(p.choices)
    if isinstance(p, IntParam):
        return list(range(p.low, p.high + 1, p.step))
    if p.step is None:
        return None
    n = int(np.floor((p.high - p.low) / p.step + 1e-9))
    return [float(p.low + i * p.step) for i in range(n + 1)]


def _sampler_classes() -> dict[str, Callable[..., optuna.samplers.BaseSampler]]:
    return {
        "nsga2": optuna.samplers.NSGAIISampler,
        "nsga3": optuna.samplers.NSGAIIISampler,
        "tpe": optuna.samplers.TPESampler,
        "random": optuna.samplers.RandomSampler,
        "grid": optuna.samplers.GridSampler,
        "gp": optuna.samplers.GPSampler,
    }


#: Annotation words YAML values can satisfy, and the check for each.
_YAML_TYPES: dict[str, Callable[[Any], bool]] = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "None": lambda v: v is None,
}


def _option_type_problem(param: inspect.Parameter, value: Any) -> str | None:
    """Why ``value`` does not fit the constructor's annotation (``'int'``, ``'float | None'``),
    with ``{got}`` for the value; None when it fits. Optuna's annotations are strings; a part
    naming a type YAML cannot spell (a callable, a mutation object) accepts only null."""
    ann = param.annotation
    if ann is inspect.Parameter.empty:
        return None
    text = ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann))
    parts = [part.strip() for part in text.split("|")]
    if any(_YAML_TYPES.get(part, lambda v: False)(value) for part in parts):
        return None
    if parts == ["float"] or set(parts) == {"float", "None"}:
        expected = "a number"
    else:
        spelled = [p for p in parts if p in _YAML_TYPES]
        objects = [p for p in parts if p not in _YAML_TYPES]
        words = {
            "int": "an integer",
            "float": "a number",
            "bool": "true or false",
            "str": "a string",
            "None": "null",
        }
        expected = " or ".join(words[p] for p in spelled) or "nothing"
        if objects:
            return (
                f"expected {expected}, got {{got}}: it takes a Python object "
                f"({' | '.join(objects)}) that YAML cannot spell"
            )
    return f"expected {expected}, got {{got}}"


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
#: Options given by name (checked by _operator, not by the constructor's annotations).
OPERATOR_OPTIONS = ("crossover", "mutation")


def sampler_options(search: SearchSpec) -> dict[str, Any]:
    """The sampler's options as run: the engine's defaults for it, then the spec's."""
    return {**GA_DEFAULTS.get(search.sampler, {}), **search.options}


def _operator(kind: str, value: Any, table: dict[str, str | None]) -> Any:
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


def make_sampler(
    model: StudyModel, search: SearchSpec | None = None
) -> optuna.samplers.BaseSampler:
    """Build the named sampler; the seed is always explicit (Optuna 5 changed the defaults)."""
    search = search or model.spec.search
    loaded = model.loaded
    cls = _sampler_classes()[search.sampler]
    valid = [
        n
        for n in inspect.signature(cls).parameters
        if n not in ("seed", "search_space", "constraints_func")
    ]
    bad = [k for k in search.options if k not in valid]
    if bad:
        raise SpecError(
            [
                loaded.problem(
                    ("search", "options", k),
                    f"unknown option {k!r} for sampler {search.sampler!r} "
                    f"(valid options: {', '.join(valid)})",
                )
                for k in bad
            ]
        )
    params = inspect.signature(cls).parameters
    wrong = [
        (k, v, why)
        for k, v in search.options.items()
        if not (k in OPERATOR_OPTIONS and search.sampler in ("nsga2", "nsga3"))
        and (why := _option_type_problem(params[k], v))
    ]
    if wrong:
        raise SpecError(
            [
                loaded.problem(
                    ("search", "options", k),
                    f"{why.format(got=short_repr(v))} (option of sampler {search.sampler!r})",
                )
                for k, v, why in wrong
            ]
        )
    kwargs: dict[str, Any] = sampler_options(search)
    for key, table in (("crossover", CROSSOVERS), ("mutation", MUTATIONS)):
        if key in kwargs and search.sampler in ("nsga2", "nsga3"):
            try:
                kwargs[key] = _operator(key, kwargs[key], table)
            except ValueError as exc:
                raise SpecError([loaded.problem(("search", "options", key), str(exc))]) from None
    if search.sampler == "grid":
        cont = [n for n, p in model.spec.space.items() if grid_values(p) is None]
        if cont:
            raise SpecError(
                [
                    loaded.problem(
                        ("space", n), "the grid sampler needs a 'step' for float parameters"
                    )
                    for n in cont
                ]
            )
        # Grid points are enqueued by the runner (see enqueue_grid); Optuna's GridSampler
        # calls study.stop(), which only works inside study.optimize, not with ask/tell.
        cls = optuna.samplers.RandomSampler
    if search.sampler == "gp":
        try:
            import scipy  # noqa: F401
            import torch  # noqa: F401
        except ImportError:
            raise SpecError(
                [
                    loaded.problem(
                        ("search", "sampler"),
                        "sampler 'gp' needs torch and scipy: "
                        "pip install 'litegpu-dse[gp]' (or choose nsga2, nsga3, tpe, "
                        "random, grid)",
                    )
                ]
            ) from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return cls(seed=search.seed, **kwargs)
    except (TypeError, ValueError) as exc:
        raise SpecError([loaded.problem(("search", "options"), str(exc))]) from None


def grid_points(model: StudyModel) -> list[dict[str, Any]]:
    """Every point of a discrete space, in a seeded shuffled order (as Optuna's GridSampler)."""
    names = list(model.spec.space)
    axes = [grid_values(model.spec.space[n]) or [] for n in names]
    points = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*axes)]
    order = np.random.default_rng(model.spec.search.seed).permutation(len(points))
    return [points[i] for i in order]


def enqueue_grid(model: StudyModel, study: optuna.Study, target: int) -> int:
    """Queue the grid points not yet tried, up to ``target`` trials; return the grid size."""
    points = grid_points(model)
    seen = {
        tuple(sorted(t.params.items()))
        for t in study.get_trials(deepcopy=False)
        if not t.user_attrs.get(STALE_ATTR)
    }
    for p in points[:target]:
        if tuple(sorted(p.items())) not in seen:
            study.enqueue_trial(p)
    return len(points)


#: Study attributes: the warm start's designs (stored before any is enqueued), and that all
#: of them were enqueued.
WARM_START_ATTR = "dse.warm_start"
WARM_START_DONE_ATTR = "dse.warm_start_done"


def enqueue_warm_start(model: StudyModel, study: optuna.Study) -> None:
    """Seed a new study's first population from a coarse vectorized sweep (dse.search.sweep).

    The designs are stored in the study before the first is enqueued, so a run killed while
    enqueueing leaves the rest to the next run, which enqueues what is missing; a study that
    has trials but no stored designs predates warm start and gets none.
    """
    attrs = study.user_attrs
    if attrs.get(WARM_START_DONE_ATTR):
        return
    designs = attrs.get(WARM_START_ATTR)
    if designs is None:
        if study.get_trials(deepcopy=False):
            return
        search = model.spec.search
        k = int(sampler_options(search).get("population_size", 50))
        designs = plain(
            warm_start_designs(model, samples=search.warm_start, k=k, seed=search.seed)
        )
        study.set_user_attr(WARM_START_ATTR, designs)
    for p in designs:
        study.enqueue_trial(p, skip_if_exists=True)
    study.set_user_attr(WARM_START_DONE_ATTR, True)
