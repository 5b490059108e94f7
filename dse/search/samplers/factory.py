"""Building a study's sampler, and what it searches: Optuna distributions.

The sampler comes from the plug-in point (:mod:`dse.search.samplers.plugin`); the seed is always
explicit (Optuna 5 changed the defaults) and the spec's options are checked against the
factory's parameters, listing the valid ones.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from dse.errors import EvaluatorError, Problem, SpecError
from dse.model.study_model import StudyModel
from dse.search.samplers._builtin import GA_DEFAULTS as GA_DEFAULTS  # the default search's
from dse.search.samplers.plugin import Sampler, load_sampler
from dse.spec.messages import short_repr
from dse.spec.schema import FloatParam, IntParam, ParamSpec, SearchSpec
from dse.spec.yamlio import Loc


def distribution(p: ParamSpec) -> BaseDistribution:
    if isinstance(p, FloatParam):
        return FloatDistribution(p.low, p.high, step=p.step, log=p.log)
    if isinstance(p, IntParam):
        return IntDistribution(p.low, p.high, step=p.step, log=p.log)
    return CategoricalDistribution(p.choices)


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


def sampler_options(search: SearchSpec, *, spec_dir: Path | None = None) -> dict[str, Any]:
    """The sampler's options as run: the sampler's defaults for it, then the spec's."""
    return {**load_sampler(search, spec_dir=spec_dir).defaults, **search.sampler_options}


def make_sampler(
    model: StudyModel, search: SearchSpec | None = None
) -> optuna.samplers.BaseSampler:
    """Build the spec's sampler (the seed is always explicit: Optuna 5 changed the defaults)."""
    search = search or model.spec.search
    loaded = model.loaded
    by_name = isinstance(search.sampler, str)
    try:
        sampler = load_sampler(search, spec_dir=loaded.path.parent)
    except EvaluatorError as exc:
        loc: Loc = ("search", "sampler") if by_name else ("search", "sampler", "path")
        raise SpecError([loaded.problem(loc, str(exc))]) from None
    return build_sampler(
        sampler,
        name=search.sampler_name,
        options=search.sampler_options,
        seed=search.seed,
        space=model.spec.space,
        problem=loaded.problem,
        options_at=(
            ("search", "options")
            if by_name or search.options
            else ("search", "sampler", "options")
        ),
    )


def build_sampler(
    sampler: Sampler,
    *,
    name: str,
    options: Mapping[str, Any],
    seed: int | None,
    space: Mapping[str, ParamSpec],
    problem: Callable[[Loc, str], Problem],
    options_at: Loc = ("search", "options"),
) -> optuna.samplers.BaseSampler:
    """``sampler.build(seed=seed, **options)`` with the options checked against its
    parameters and converted, and the space checked; every problem raised as one SpecError
    (``problem(loc, message)`` locates each; options are at ``options_at``)."""
    at = options_at
    problems = [problem((*at, k), why) for k, why in _option_problems(sampler, name, options)]
    kwargs: dict[str, Any] = {**sampler.defaults, **options}
    for key, convert in sampler.convert.items():
        if key in kwargs:
            try:
                kwargs[key] = convert(kwargs[key])
            except ValueError as exc:
                problems.append(problem((*at, key), str(exc)))
    if sampler.check_space is not None:
        problems += [problem(("space", n), why) for n, why in sampler.check_space(space).items()]
    if problems:
        raise SpecError(problems)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            if "search_space" in inspect.signature(sampler.build).parameters:
                kwargs["search_space"] = {n: distribution(p) for n, p in space.items()}
            built = sampler.build(seed=seed, **kwargs)
    except ImportError as exc:
        raise SpecError([problem(("search", "sampler"), str(exc))]) from None
    except (TypeError, ValueError) as exc:
        raise SpecError([problem(at, str(exc))]) from None
    if not isinstance(built, optuna.samplers.BaseSampler):
        why = f"sampler {name!r} built a {type(built).__name__}, not an Optuna sampler"
        raise SpecError([problem(("search", "sampler"), why)])
    return built


#: Parameters of a factory that the engine fills (or that a spec cannot give).
_ENGINE_PARAMS = ("seed", "search_space", "constraints_func")


def _option_problems(
    sampler: Sampler, name: str, options: Mapping[str, Any]
) -> list[tuple[str, str]]:
    """``(option, why)`` for each option the factory does not take or whose YAML value does
    not fit its annotation (options the sampler converts are checked by their converter)."""
    params = inspect.signature(sampler.build).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return []
    valid = [n for n in params if n not in _ENGINE_PARAMS]
    bad = [
        (k, f"unknown option {k!r} for sampler {name!r} (valid options: {', '.join(valid)})")
        for k in options
        if k not in valid
    ]
    if bad:
        return bad
    return [
        (k, f"{why.format(got=short_repr(v))} (option of sampler {name!r})")
        for k, v in options.items()
        if k not in sampler.convert and (why := _option_type_problem(params[k], v))
    ]
