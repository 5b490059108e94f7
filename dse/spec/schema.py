"""The study spec: pydantic models are the single source of truth for its schema.

:mod:`dse.spec.collect` reads YAML safely, validates the shape with these models and reports
every problem as ``FILE:LINE: field.path: what is wrong``. Semantic checks that need the
evaluators (metric names, presets, import paths) live in :mod:`dse.model.study_model`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
)

from dse.errors import Problem
from dse.spec.entry_points import installed_entry_points
from dse.spec.messages import choices_text, did_you_mean
from dse.spec.safe_yaml import YamlDoc
from dse.spec.yamlio import Loc

STUDY_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"


#: Bounded work for any input: at most this many constraints, each at most MAX_EXPR_CHARS long
#: (dse.spec.expr caps their nodes, depth and exponents).
MAX_CONSTRAINTS = 100


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _not_bool(v: Any) -> Any:
    # YAML's true/false would pass as 1/0 (Python bools are ints); a count is never a bool.
    if isinstance(v, bool):
        raise ValueError(f"expected a number, got {str(v).lower()} (a boolean)")
    return v


def _finite(v: Any) -> Any:
    if v is not None and not math.isfinite(v):
        raise ValueError(f"must be a finite number (got {v})")
    return v


Int = Annotated[int, BeforeValidator(_not_bool)]
Float = Annotated[float, BeforeValidator(_not_bool)]
FiniteFloat = Annotated[float, BeforeValidator(_not_bool), AfterValidator(_finite)]


class FloatParam(_Model):
    """A float parameter, as Optuna's ``FloatDistribution``."""

    type: Literal["float"]
    low: Float
    high: Float
    step: FiniteFloat | None = Field(default=None, gt=0)
    log: bool = False


class IntParam(_Model):
    """An integer parameter, as Optuna's ``IntDistribution``."""

    type: Literal["int"]
    low: Int
    high: Int
    step: Int = Field(default=1, ge=1)
    log: bool = False


Choice = bool | int | float | str


def _import_path(v: str) -> str:
    module, _, func = v.partition(":")
    if not module or not func:
        raise ValueError(f"expected 'module:function', got {v!r}")
    return v


ImportPath = Annotated[str, AfterValidator(_import_path)]


def _evaluator_list(v: Any) -> Any:
    """The list form ``[cost, perf, {mine: 'mod:fn'}]`` as the mapping form
    ``{cost: null, perf: null, mine: 'mod:fn'}`` (null: the installed evaluator of that name)."""
    if not isinstance(v, list):
        return v
    out: dict[Any, Any] = {}
    for item in v:
        if isinstance(item, str):
            out[item] = None
        elif isinstance(item, dict):
            out.update(item)
        else:
            raise ValueError(
                f"each entry is an installed evaluator's name or {{name: 'module:function'}}, "
                f"got {item!r}"
            )
    return out


#: One item of the list form, as the JSON Schema says it (the validator turns the list into
#: the mapping before the model sees it).
_ListedEvaluator = (
    Annotated[str, Field(description="An installed evaluator by name")]
    | Annotated[
        dict[str, str],
        Field(
            description="name: 'module:function', a custom evaluator", min_length=1, max_length=1
        ),
    ]
)
#: ``name -> 'module:function'`` (a custom evaluator) or ``name -> null`` (an installed one).
EvaluatorSelection = Annotated[
    dict[str, ImportPath | None],
    BeforeValidator(
        _evaluator_list, json_schema_input_type=dict[str, str | None] | list[_ListedEvaluator]
    ),
]


class CategoricalParam(_Model):
    """A categorical parameter, as Optuna's ``CategoricalDistribution``."""

    type: Literal["categorical"]
    choices: list[Choice] = Field(min_length=1)


ParamSpec = Annotated[FloatParam | IntParam | CategoricalParam, Field(discriminator="type")]


class ObjectiveSpec(_Model):
    metric: str = Field(description="A published metric, `<evaluator>.<metric>`")
    direction: Literal["minimize", "maximize"]
    threshold: FiniteFloat | None = Field(
        default=None, description="Worst acceptable value; the hypervolume reference point"
    )


#: Entry-point group of samplers (dse.search.samplers.plugin): the built-ins and installed ones.
SAMPLER_GROUP = "dse.samplers"


@cache
def installed_samplers() -> tuple[str, ...]:
    """Names of the samplers installed distributions register under :data:`SAMPLER_GROUP`
    (names only: nothing is imported until a study builds its sampler)."""
    return tuple(installed_entry_points(SAMPLER_GROUP))


def _installed_sampler(v: str) -> str:
    names = installed_samplers()
    if v in names:
        return v
    if not names:
        raise ValueError(
            f"unknown sampler {v!r}: no sampler is registered under {SAMPLER_GROUP!r} (an "
            "install from before samplers were plug-ins; reinstall: pip install -e .)"
        )
    raise ValueError(
        f"unknown sampler {v!r} ({did_you_mean(v, names)}valid choices: {choices_text(names)}; "
        "or {path: 'module:factory'} for your own)"
    )


class SamplerRef(_Model):
    """A sampler that is not installed, by import path (docs/search.md, "Your own sampler")."""

    path: ImportPath = Field(
        description="'module:factory': a dse.search.Sampler, or a function "
        "(seed, **options) -> optuna sampler; the spec's folder is searched first"
    )
    options: dict[str, Any] = Field(default_factory=dict, description="The factory's options")


#: ``sampler: nsga2`` (an installed one by name) or ``sampler: {path: 'module:factory'}``.
SamplerChoice = Annotated[
    Annotated[Annotated[str, AfterValidator(_installed_sampler)], Tag("name")]
    | Annotated[SamplerRef, Tag("path")],
    Discriminator(lambda v: "name" if isinstance(v, str) else "path"),
]


class SearchSpec(_Model):
    sampler: SamplerChoice = Field(
        default="nsga2",
        description="An installed sampler by name, or {path: 'module:factory', options: {...}}",
    )
    trials: Int = Field(
        default=500, ge=1, le=10**9, description="Total finished trials of the study"
    )
    seed: Int | None = Field(default=0, ge=0, le=2**32 - 1)
    options: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments of the named sampler's factory"
    )
    warm_start: Int | None = Field(
        default=None,
        ge=0,
        le=10**7,
        description="Designs of a quasi-random vectorized sweep whose feasible front seeds the "
        "first trials (one population); 0: off; unset: 20,000 when every evaluator is "
        "vectorized, the sampler has a population and no trial_timeout_s is set, else off. "
        "See docs/search.md",
    )
    trial_timeout_s: float | None = Field(
        default=None,
        gt=0,
        le=7 * 86400,
        allow_inf_nan=False,
        description="Longest one design's evaluation may take; a trial past it fails (its "
        "design is not tried again) and the study goes on. Also bounds the evaluator probe of "
        "'dse validate'. null: no limit (evaluations run in-process)",
    )

    @property
    def sampler_name(self) -> str:
        """The sampler as messages name it: its installed name or its import path."""
        return self.sampler if isinstance(self.sampler, str) else self.sampler.path

    @property
    def sampler_options(self) -> dict[str, Any]:
        """The spec's options of the sampler (``search.options`` or ``sampler.options``)."""
        if isinstance(self.sampler, SamplerRef):
            return {**self.options, **self.sampler.options}
        return dict(self.options)


class RobustSpec(_Model):
    """Robust objectives as spec data: every design evaluated under ``samples`` draws of the
    uncertain assumptions (``{dist: ...}`` values in ``fixed``); see docs/robust.md."""

    samples: Int = Field(
        ge=2, le=100_000, description="K scenarios each design is evaluated under"
    )
    statistic: Literal["mean", "p10", "p90", "pessimistic", "optimistic"] = Field(
        default="mean", description="How an objective's K values become one number"
    )


class DropDefaults(_Model):
    """The domain's default constraints but these (``default_constraints: {drop: [...]}``)."""

    drop: list[str] = Field(
        min_length=1,
        max_length=MAX_CONSTRAINTS,
        description="Default constraints this spec does not hold, as the domain writes them "
        "(`cost.hbm_fits_generation`)",
    )


#: ``default_constraints: true | false`` or ``{drop: [...]}``: one member's errors, one line.
DefaultConstraints = Annotated[
    Annotated[bool, Tag("bool")] | Annotated[DropDefaults, Tag("mapping")],
    Discriminator(lambda v: "mapping" if isinstance(v, dict) else "bool"),
]


class StudySpec(_Model):
    """A declarative design-space study."""

    study: str = Field(pattern=STUDY_NAME_PATTERN, description="Study name (folder in studies/)")
    description: str = ""
    fixed: dict[str, Any] = Field(
        default_factory=dict,
        description="Fixed values: the evaluators' context (their presets and constants)",
    )
    space: dict[str, ParamSpec] = Field(default_factory=dict)
    evaluators: EvaluatorSelection = Field(
        default_factory=dict,
        description="The evaluators this study runs: installed ones by name, custom ones as "
        "name: 'module:function' (a list or a mapping; null value = installed). Omitted: every "
        "installed evaluator. Installed evaluators whose metrics the objectives or constraints "
        "name run too. See docs/evaluators.md",
    )
    objectives: list[ObjectiveSpec] = Field(min_length=1)
    constraints: list[str] = Field(default_factory=list, max_length=MAX_CONSTRAINTS)
    default_constraints: DefaultConstraints = Field(
        default=True,
        description="Hold the constraints the evaluators' domains declare by default (the "
        "built-in domain's physical checks); false: none of them; {drop: [...]}: all but "
        "these. `dse validate --json` lists the constraints held",
    )
    derived: dict[str, str] = Field(
        default_factory=dict,
        max_length=MAX_CONSTRAINTS,
        description="Design values computed from the searched ones, in order, by the "
        "constraints' expression language (`count: 52096 // area` keeps count x area "
        "about fixed while area is searched)",
    )
    search: SearchSpec = Field(default_factory=SearchSpec)
    robust: RobustSpec | None = Field(
        default=None,
        description="Run robust objectives (the study is recorded as "
        "<study>-robust-<statistic>-k<samples>); 'dse run --robust K' sets the same from the "
        "command line. Workers ('--jobs', 'dse worker') read it from the spec",
    )
    storage: str | None = Field(
        default=None,
        description="Optuna storage URL: journal:PATH, sqlite:///PATH or postgresql://USER@HOST/DB;"
        " default: journal file in studies/<study>/",
    )
    journal_outside_studies: bool = Field(
        default=False,
        description="Allow a journal:PATH storage outside the studies folder (refused by default "
        "so a typo cannot append to an unrelated file)",
    )


@dataclass(frozen=True)
class LoadedSpec:
    """A validated spec with where it came from, for error messages."""

    spec: StudySpec
    path: Path
    lines: YamlDoc
    raw: dict[str, Any]

    def problem(self, loc: Loc, message: str) -> Problem:
        return Problem(str(self.path), self.lines.line(loc), ".".join(map(str, loc)), message)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a spec, for editors (``dse schema``)."""
    schema = StudySpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "litegpu-dse study spec"
    return schema
