"""Building a study's sampler, and what it searches: Optuna distributions and warm start.

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

from dse.model.study_model import EvaluationError, StudyModel
from dse.search.optuna_private import genetic_sampler
from dse.search.samplers._builtin import GA_DEFAULTS as GA_DEFAULTS  # the default search's
from dse.search.samplers.plugin import Sampler, load_sampler
from dse.search.stored import plain
from dse.search.study.recovery import enqueue_trials
from dse.search.sweep.sweep import warm_start_designs
from dse.spec.errors import EvaluatorError, Problem, SpecError, short_repr
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


#: Study attributes: the warm start's designs (stored before any is enqueued), and that all
#: of them were enqueued.
WARM_START_ATTR = "dse.warm_start"
WARM_START_DONE_ATTR = "dse.warm_start_done"


#: The warm start a spec gets when it sets none and the search can afford one (the sweep
#: the shipped example spec of three objectives sets). On that space NSGA-II without it
#: stalled on the thin feasible front for some seeds (worst of 100 seeds 48 % of the exact
#: hypervolume at 1,000 trials); with it the worst of 50 seeds reached 98.9 %
#: (benchmarks/RESULTS.md, issue 28).
AUTO_WARM_START = 20_000


def warm_start_samples(model: StudyModel) -> int:
    """How many designs the warm start sweeps: the spec's ``warm_start``, else
    :data:`AUTO_WARM_START` when the sweep is cheap and useful (every evaluator vectorized,
    no per-trial time limit, not robust, a sampler with a first population), else 0 (off)."""
    from dse.model.robust import RobustStudyModel

    search = model.spec.search
    if isinstance(model, RobustStudyModel):
        return 0  # a robust model scores one design at a time over its scenarios: no sweep
    if search.warm_start is not None:
        return search.warm_start
    if search.trial_timeout_s is not None or model.spec.robust is not None:
        return 0  # each design alone in a deadline child / many draws per design
    if not model.evaluators or not all(ev.vectorized for ev in model.evaluators.values()):
        return 0
    if genetic_sampler(make_sampler(model)) is None:
        return 0
    return AUTO_WARM_START


def enqueue_warm_start(model: StudyModel, study: optuna.Study) -> None:
    """Seed a new study's first population from a coarse vectorized sweep (dse.search.sweep.sweep).

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
        options = sampler_options(search, spec_dir=model.loaded.path.parent)
        k = int(options.get("population_size", 50))
        try:
            samples = warm_start_samples(model)
            designs = plain(warm_start_designs(model, samples=samples, k=k, seed=search.seed))
        except EvaluationError:
            if search.warm_start is not None:
                raise
            designs = []  # the automatic one skips an evaluator that fails on some designs
        study.set_user_attr(WARM_START_ATTR, designs)
    enqueue_trials(study, designs)
    study.set_user_attr(WARM_START_DONE_ATTR, True)
