"""A sampler backed by pymoo (Blank & Deb, "pymoo: Multi-Objective Optimization in Python",
IEEE Access 8, 2020): any of its population-based algorithms run through its ask-and-tell
interface, one Optuna trial per individual. An example of a sampler from outside litegpu-dse,
named by import path in ``pymoo.yaml`` beside this file (docs/search.md, "Your own sampler").

pymoo searches the unit cube, one axis per parameter: a float maps linearly (logarithmically
with ``log``) onto its range, an int or stepped float onto its steps, a categorical onto its
choices in equal bins. A generation is told to pymoo once all its trials have finished; a failed
trial counts as infeasible, and a design's constraint violation is its largest Optuna
constraint value (feasible when <= 0). Trials are asked one at a time (the sampler is not
``independent``), so a study records what pymoo proposes. pymoo's ``setup(seed=...)`` also
seeds numpy's global generator. SPEA2 is left out: it proposed other designs on a second run
with the same seed (``dse.testing.check_sampler`` finds it).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState
from pymoo.core.evaluator import Evaluator
from pymoo.core.problem import Problem
from pymoo.core.termination import NoTermination
from pymoo.problems.static import StaticProblem

#: A failed trial's objectives and violation: worse than any design pymoo will meet.
_WORST = 1e300


#: pymoo's algorithms this sampler runs, by name: (module, class), imported when chosen.
ALGORITHMS = {
    "nsga2": ("pymoo.algorithms.moo.nsga2", "NSGA2"),
    "smsemoa": ("pymoo.algorithms.moo.sms", "SMSEMOA"),
}


def decode(u: float, d: BaseDistribution) -> Any:
    """A point of [0, 1] as a value of ``d``."""
    u = min(max(float(u), 0.0), 1.0)
    if isinstance(d, CategoricalDistribution):
        return d.choices[min(int(u * len(d.choices)), len(d.choices) - 1)]
    if isinstance(d, IntDistribution | FloatDistribution) and d.log:
        v = math.exp(math.log(d.low) + u * (math.log(d.high) - math.log(d.low)))
        return min(max(round(v), d.low), d.high) if isinstance(d, IntDistribution) else v
    step = d.step if isinstance(d, IntDistribution | FloatDistribution) else None
    if step is not None:
        n = int(round((d.high - d.low) / step))
        k = min(int(round(u * n)), n)
        return d.low + k * step
    return d.low + u * (d.high - d.low)


class PymooSampler(optuna.samplers.BaseSampler):
    """Optuna's side of a pymoo algorithm (built by :func:`pymoo_sampler`)."""

    def __init__(
        self, algorithm: Any, search_space: dict[str, BaseDistribution], seed: int | None
    ) -> None:
        self._algorithm = algorithm
        self._space = dict(search_space)
        self._seed = seed
        self._fallback = optuna.samplers.RandomSampler(seed=seed)
        self._generation: Any = None  # the population pymoo was last asked for
        self._first = 0  # the trial number of its first individual

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return self._space

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        if not search_space:
            return {}
        if self._generation is None:
            self._setup(study)
            self._ask(trial.number)
        elif trial.number - self._first >= len(self._generation):
            self._tell(study)
            self._ask(trial.number)
        row = self._generation.get("X")[trial.number - self._first]
        return {n: decode(u, d) for (n, d), u in zip(self._space.items(), row, strict=True)}

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        return self._fallback.sample_independent(study, trial, param_name, param_distribution)

    def _setup(self, study: optuna.Study) -> None:
        self._sign = np.array(
            [-1.0 if d == StudyDirection.MAXIMIZE else 1.0 for d in study.directions]
        )
        self._problem = Problem(
            n_var=len(self._space), n_obj=len(study.directions), n_ieq_constr=1, xl=0.0, xu=1.0
        )
        self._algorithm.setup(
            self._problem, termination=NoTermination(), seed=self._seed, verbose=False
        )

    def _ask(self, number: int) -> None:
        self._generation = self._algorithm.ask()
        self._first = number

    def _tell(self, study: optuna.Study) -> None:
        """The last generation's results to pymoo (its trials have all finished: asked one at
        a time, each is told before the next is asked)."""
        numbers = range(self._first, self._first + len(self._generation))
        by_number = {t.number: t for t in study.get_trials(deepcopy=False)}
        F, G = zip(*(self._result(by_number.get(n)) for n in numbers), strict=True)
        static = StaticProblem(self._problem, F=np.array(F), G=np.array(G))
        Evaluator().eval(static, self._generation)
        self._algorithm.tell(infills=self._generation)

    def _result(self, t: FrozenTrial | None) -> tuple[Sequence[float], Sequence[float]]:
        n_obj = len(self._sign)
        if t is None or t.state != TrialState.COMPLETE or t.values is None:
            return [_WORST] * n_obj, [_WORST]
        violation = max(t.constraints.values(), default=0.0)
        return list(self._sign * np.asarray(t.values, dtype=float)), [violation]


def pymoo_sampler(
    *,
    search_space: dict[str, BaseDistribution],
    seed: int | None = None,
    algorithm: str = "nsga2",
    pop_size: int = 20,
) -> PymooSampler:
    """``sampler: {path: 'pymoo_sampler:pymoo_sampler', options: {algorithm: nsga2,
    pop_size: 20}}``; algorithms: nsga2, smsemoa (pymoo's defaults for the
    rest of their settings)."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown pymoo algorithm {algorithm!r} (valid: {', '.join(ALGORITHMS)})")
    if pop_size < 2:
        raise ValueError(f"pop_size must be at least 2, got {pop_size}")
    module, name = ALGORITHMS[algorithm]
    cls = getattr(importlib.import_module(module), name)
    return PymooSampler(cls(pop_size=pop_size), search_space, seed)
