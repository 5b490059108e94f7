"""The sampler plug-in point: what the engine needs of a sampler, and where samplers come from.

Samplers plug in the way evaluators do: an installed distribution registers one under the
``dse.samplers`` entry-point group and a spec names it (``sampler: nsga2``), or a spec gives an
import path (``sampler: {path: 'module:factory', options: {...}}``). The built-ins
(:mod:`dse.search.samplers._builtin`) are registered through the same group. An entry point or
path names a :class:`Sampler`, or a plain factory ``(*, seed, **options) -> optuna sampler``,
which is wrapped as ``Sampler(build=factory)``. ``dse.testing.check_sampler`` checks a sampler
against this contract (docs/search.md, "Your own sampler").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import optuna

from dse.errors import EvaluatorError
from dse.model.study_model import StudyModel
from dse.plugin import import_object
from dse.spec.entry_points import load_entry_point, wrap_plugin
from dse.spec.schema import SAMPLER_GROUP, ParamSpec, SearchSpec

_EXPECTED = (
    "sampler {origin}: expected a dse.search.Sampler or a factory (seed, **options) -> optuna "
    "sampler"
)
#: ``enqueue(space, seed, study, target) -> size``.
Enqueue = Callable[[Mapping[str, ParamSpec], "int | None", optuna.Study, int], int]


@dataclass(frozen=True, kw_only=True)
class Sampler:
    """A sampler as the engine uses it. Only ``build`` is required.

    The engine asks trials in batches and evaluates each batch in one vectorized call; how
    many a batch holds depends on what the sampler's proposals depend on, so that a batched
    run records exactly what a one-at-a-time run with the same seed records:

    - a genetic sampler (Optuna's ``BaseGASampler`` with a ``population_size``, as NSGA-II/III)
      is asked the rest of its current generation (found on the built object, nothing to
      declare);
    - an ``independent`` one, whose proposals never depend on results, up to 64 at a time;
    - any other one trial at a time (it learns from every result).

    Seeding: ``build`` gets the spec's ``seed`` (an int, or None when the spec says null);
    the same seed and the same results must give the same proposals, which is what makes a
    study reproducible and a batched run equal to a sequential one. Workers of one study
    (``--jobs``) build it with distinct seeds.
    """

    #: ``build(*, seed, **options) -> optuna.samplers.BaseSampler``; the spec's options are
    #: checked against its keyword parameters (any are accepted if it takes ``**kwargs``). A
    #: ``search_space`` parameter gets the study's ``{name: optuna distribution}``.
    build: Callable[..., optuna.samplers.BaseSampler]
    #: Proposals never depend on the results told (random, quasi-random, grid).
    independent: bool = False
    #: Options the engine passes unless the spec gives them (its tuned defaults).
    defaults: Mapping[str, Any] = field(default_factory=dict)
    #: ``{option: fn(yaml value) -> object}`` for options that name a Python object in YAML
    #: (``crossover: sbx``); ``fn`` raises ValueError listing the valid spellings.
    convert: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    #: ``check_space(space) -> {parameter: why}``: parameters it cannot search.
    check_space: Callable[[Mapping[str, ParamSpec]], dict[str, str]] | None = None
    #: ``enqueue(space, seed, study, target) -> size``: trials it queues in the study before
    #: the run (a grid's points), returning how many it can ever propose.
    enqueue: Enqueue | None = None
    #: Where it came from, for messages (set when it is loaded).
    origin: str = ""

    @classmethod
    def wrap(cls, obj: Any, origin: str) -> Sampler:
        """A :class:`Sampler` as it is, a plain factory wrapped; anything else is an error."""
        return wrap_plugin(
            cls, obj, origin, field="build", expected=_EXPECTED, error=EvaluatorError
        )


@cache
def _load_entry_point(name: str) -> Sampler:
    return Sampler.wrap(*load_entry_point(SAMPLER_GROUP, name, kind="sampler"))


def load_sampler(search: SearchSpec, *, spec_dir: Path | None = None) -> Sampler:
    """The spec's sampler: an installed one by name, or one by import path (the spec's folder
    searched first, as for evaluators)."""
    if isinstance(search.sampler, str):
        return _load_entry_point(search.sampler)
    path = search.sampler.path
    return Sampler.wrap(import_object(path, search_dirs=[spec_dir] if spec_dir else []), path)


def sampler_of(model: StudyModel) -> Sampler:
    """The sampler of a study's spec (an import path is looked up beside the spec first)."""
    return load_sampler(model.spec.search, spec_dir=model.loaded.path.parent)


def genetic_sampler(sampler: optuna.samplers.BaseSampler) -> Any:
    """The sampler when it is a genetic one with a population (NSGA-II/III), else None."""
    if isinstance(sampler, optuna.samplers.BaseGASampler) and sampler.population_size:
        return sampler
    return None
