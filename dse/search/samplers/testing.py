"""A conformance check for samplers, as ``check_evaluator`` is for evaluators.

Run it on your own sampler in your test suite::

    from dse.testing import check_sampler
    check_sampler(MY_SAMPLER, options={"population_size": 8})

It runs small two-objective studies through the engine's own batching and checks what the
engine relies on (:class:`dse.search.samplers.plugin.Sampler`): the factory builds an Optuna
sampler from the options, every proposal lies in the space, the same seed gives the same
proposals and another seed other ones, a batched run proposes what a one-at-a-time run does,
and a sampler that claims ``independent`` proposes the same whatever results it is told.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import optuna
from optuna.trial import FrozenTrial

from dse.errors import ConformanceError, Problem, SpecError
from dse.search.samplers.factory import build_sampler, distribution
from dse.search.samplers.plugin import Sampler, load_sampler
from dse.search.study.batch import BatchPlanner
from dse.spec.schema import (
    CategoricalParam,
    FloatParam,
    IntParam,
    ParamSpec,
    SearchSpec,
    installed_samplers,
)

#: The default space: a stepped float (so a grid can search it too), an int and a categorical.
SPACE: dict[str, ParamSpec] = {
    "x": FloatParam(type="float", low=0.0, high=1.0, step=0.05),
    "n": IntParam(type="int", low=1, high=8),
    "c": CategoricalParam(type="categorical", choices=["a", "b", "c"]),
}

Values = Callable[[Mapping[str, Any]], list[float]]


def _values(p: Mapping[str, Any]) -> list[float]:
    """Two conflicting objectives of every parameter (a numeric axis per parameter)."""
    x = float(p.get("x", 0.5))
    n = float(p.get("n", 1))
    c = float(["a", "b", "c"].index(p["c"])) if p.get("c") in ("a", "b", "c") else 0.0
    return [x + 0.01 * n, (1.0 - x) ** 2 + 0.1 * c + 0.02 * n]


def _other_values(p: Mapping[str, Any]) -> list[float]:
    return [-v for v in _values(p)]


def check_sampler(
    sampler: Sampler | Callable[..., optuna.samplers.BaseSampler] | str,
    *,
    options: Mapping[str, Any] | None = None,
    space: Mapping[str, ParamSpec] | None = None,
    trials: int = 40,
    seed: int = 0,
) -> Sampler:
    """Check ``sampler`` (a :class:`Sampler`, a plain factory, or an installed sampler's name)
    with ``options`` on ``space``; return it as the engine wraps it. Raises
    :class:`ConformanceError` naming the rule it breaks."""
    if isinstance(sampler, str):
        if sampler not in installed_samplers():
            raise ConformanceError(f"no sampler {sampler!r} is installed under 'dse.samplers'")
        plugin = load_sampler(SearchSpec(sampler=sampler))
    else:
        plugin = Sampler.wrap(sampler, getattr(sampler, "__qualname__", "under test"))
    name = sampler if isinstance(sampler, str) else plugin.origin
    space = dict(space or SPACE)
    runs = _Runs(plugin, name, dict(options or {}), space, trials)
    first = runs.proposals(seed)
    for number, params in enumerate(first):
        _check_in_space(name, number, params, space)
    if runs.proposals(seed) != first:
        raise ConformanceError(f"{name}: the same seed gave other proposals (seed it)")
    if runs.proposals(seed + 1) == first:
        raise ConformanceError(
            f"{name}: seeds {seed} and {seed + 1} gave the same proposals (workers of one "
            "study get distinct seeds and would propose the same designs)"
        )
    batched = runs.proposals(seed, batched=True)
    if batched != first:
        at = next(i for i, (a, b) in enumerate(zip(batched, first, strict=False)) if a != b)
        raise ConformanceError(
            f"{name}: asked in the engine's batches, trial {at} is {batched[at]} but one at a "
            f"time it is {first[at]} (a batch must propose what one-at-a-time asks do)"
        )
    if plugin.independent and runs.proposals(seed, values=_other_values) != first:
        raise ConformanceError(
            f"{name}: claims independent=True but other results gave other proposals"
        )
    return plugin


class _Runs:
    """Small in-memory studies of one sampler, run through the engine's batch planner."""

    def __init__(
        self,
        plugin: Sampler,
        name: str,
        options: dict[str, Any],
        space: dict[str, ParamSpec],
        trials: int,
    ) -> None:
        self.plugin, self.name, self.options, self.space = plugin, name, options, space
        self.trials = trials
        self.dists = {n: distribution(p) for n, p in space.items()}

    def build(self, seed: int) -> optuna.samplers.BaseSampler:
        def problem(loc: tuple[Any, ...], message: str) -> Problem:
            return Problem(self.name, None, ".".join(map(str, loc)), message)

        try:
            return build_sampler(
                self.plugin,
                name=self.name,
                options=self.options,
                seed=seed,
                space=self.space,
                problem=problem,
            )
        except SpecError as exc:
            why = "; ".join(f"{p.field}: {p.message}" for p in exc.problems)
            raise ConformanceError(f"{self.name}: cannot be built: {why}") from None

    def proposals(
        self, seed: int, *, batched: bool = False, values: Values = _values
    ) -> list[dict[str, Any]]:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.create_study(directions=["minimize"] * 2, sampler=self.build(seed))
        trials = self.trials
        if self.plugin.enqueue is not None:
            trials = min(trials, self.plugin.enqueue(self.space, seed, study, trials))
        planner = BatchPlanner(self.plugin)
        done: list[FrozenTrial] = []
        while len(done) < trials:
            size = planner.size(study, trials - len(done)) if batched else 1
            asked = [study.ask(self.dists) for _ in range(size)]
            done += [study.tell(trial, values(trial.params)) for trial in asked]
        return [t.params for t in done]


def _check_in_space(
    name: str, number: int, params: Mapping[str, Any], space: Mapping[str, ParamSpec]
) -> None:
    if set(params) != set(space):
        raise ConformanceError(
            f"{name}: trial {number} has parameters {sorted(params)}, expected {sorted(space)}"
        )
    for key, p in space.items():
        v = params[key]
        if isinstance(p, CategoricalParam):
            ok = v in p.choices
        else:
            ok = p.low <= v <= p.high
            if ok and p.step is not None:
                k = (v - p.low) / p.step
                ok = abs(k - round(k)) < 1e-6
        if not ok:
            raise ConformanceError(f"{name}: trial {number} proposes {key}={v!r}, outside {p}")
