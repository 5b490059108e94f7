"""A sampler from outside litegpu-dse: Latin hypercube designs (McKay, Beckman & Conover 1979,
Technometrics 21(2)), registered under the ``dse.samplers`` entry-point group as ``lhs``.

Trials come in rounds of ``round_size``; within a round every parameter's range is cut into
``round_size`` equal strata and each stratum holds exactly one trial. A trial's design is a
function of the seed, its number and the parameter's name only, so the sampler is
independent of results (the engine asks it in batches).
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from dse.search.samplers.plugin import Sampler


class LatinHypercubeSampler(optuna.samplers.BaseSampler):
    def __init__(self, *, seed: int | None = None, round_size: int = 16) -> None:
        if round_size < 1:
            raise ValueError(f"round_size must be at least 1, got {round_size}")
        self._seed = int(np.random.SeedSequence().entropy % 2**32) if seed is None else seed
        self._round_size = round_size

    def infer_relative_search_space(self, study, trial):  # type: ignore[no-untyped-def]
        return {}

    def sample_relative(self, study, trial, search_space):  # type: ignore[no-untyped-def]
        return {}

    def unit(self, number: int, name: str) -> float:
        """The trial's point in [0, 1) on this parameter's axis."""
        k, i = divmod(number, self._round_size)
        rng = np.random.default_rng([self._seed, k, zlib.crc32(name.encode())])
        stratum = rng.permutation(self._round_size)[i]
        return (stratum + rng.random(self._round_size)[i]) / self._round_size

    def sample_independent(
        self, study, trial, param_name: str, param_distribution: BaseDistribution
    ):  # type: ignore[no-untyped-def]
        u = self.unit(trial.number, param_name)
        d = param_distribution
        if isinstance(d, CategoricalDistribution):
            return d.choices[min(int(u * len(d.choices)), len(d.choices) - 1)]
        if isinstance(d, IntDistribution):
            n = (d.high - d.low) // d.step + 1
            return d.low + d.step * min(int(u * n), n - 1)
        assert isinstance(d, FloatDistribution)
        if d.log:
            return math.exp(math.log(d.low) + u * (math.log(d.high) - math.log(d.low)))
        if d.step is not None:
            n = int(round((d.high - d.low) / d.step)) + 1
            return d.low + d.step * min(int(u * n), n - 1)
        return d.low + u * (d.high - d.low)


def latin(*, seed: int | None = None, round_size: int = 16) -> LatinHypercubeSampler:
    """The plain-factory form (``sampler: {path: 'dse_outside:latin'}``)."""
    return LatinHypercubeSampler(seed=seed, round_size=round_size)


#: The registered form: it declares that its proposals never depend on results.
LHS = Sampler(build=LatinHypercubeSampler, independent=True)
