"""The study spec: pydantic models are the single source of truth for its schema.

``load_spec`` reads YAML safely, validates the shape with pydantic and reports every problem as
``FILE:LINE: field.path: what is wrong``. Semantic checks that need the evaluators (metric names,
presets, import paths) live in :mod:`dse.model.study_model`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
)

from dse.spec.errors import Problem, SpecError, choices_text, did_you_mean, short_repr
from dse.spec.yamlio import LineMap, Loc, load_yaml

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


#: ``name -> 'module:function'`` (a custom evaluator) or ``name -> null`` (an installed one).
EvaluatorSelection = Annotated[dict[str, ImportPath | None], BeforeValidator(_evaluator_list)]


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


#: Entry-point group of samplers (dse.search.sampler_plugin): the built-ins and installed ones.
SAMPLER_GROUP = "dse.samplers"


@cache
def installed_samplers() -> tuple[str, ...]:
    """Names of the samplers installed distributions register under :data:`SAMPLER_GROUP`
    (names only: nothing is imported until a study builds its sampler)."""
    return tuple(sorted({ep.name for ep in entry_points(group=SAMPLER_GROUP)}))


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
    lines: LineMap
    raw: dict[str, Any]

    def problem(self, loc: Loc, message: str) -> Problem:
        return Problem(str(self.path), self.lines.line(loc), ".".join(map(str, loc)), message)


def _fields_at(loc: Loc) -> list[str]:
    """Valid keys of the model at ``loc`` (for did-you-mean on unknown keys)."""
    model: type[BaseModel] | None = StudySpec
    in_list = False
    for part in loc[:-1]:
        if model is None:
            return []
        if in_list:  # an item of a list of models (objectives.1.metrc)
            in_list = False
            continue
        if model is StudySpec and part == "space":
            return []
        if model is SearchSpec and part == "sampler":
            model = SamplerRef
            continue
        f = model.model_fields.get(str(part))
        if f is None:
            return []
        ann = f.annotation
        if get_origin(ann) is list and get_args(ann):
            ann, in_list = get_args(ann)[0], True
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    if model is None:
        return []
    return list(model.model_fields)


def _param_fields(raw: Any, loc: Loc) -> list[str]:
    kind = raw.get("type") if isinstance(raw, dict) else None
    table = {"float": FloatParam, "int": IntParam, "categorical": CategoricalParam}
    model = table.get(str(kind))
    return list(model.model_fields) if model else []


_CHOICE_TAGS = ("bool", "int", "float", "str")


def _pydantic_problems(exc: ValidationError, raw: dict[str, Any], loaded: Any) -> list[Problem]:
    problems = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        # Drop the discriminator tag pydantic inserts for tagged unions (space.x.float.low).
        if len(loc) >= 3 and loc[0] == "space" and loc[2] in ("float", "int", "categorical"):
            loc = (loc[0], loc[1], *loc[3:])
        if loc[:2] == ("search", "sampler") and len(loc) >= 3 and loc[2] in ("name", "path"):
            loc = (*loc[:2], *loc[3:])  # and the tag of ``sampler: NAME | {path: ...}``
        msg = err["msg"]
        kind = err["type"]
        if len(loc) >= 4 and loc[0] == "space" and loc[2] == "choices" and loc[-1] in _CHOICE_TAGS:
            # One line per bad choice, not one per member of the Choice union.
            loc = loc[:-1]
            got = short_repr(err.get("input"))
            msg = f"a choice must be a number, a string or true/false (got {got})"
            kind = "value_error"
        if kind == "extra_forbidden":
            key = str(loc[-1])
            if len(loc) >= 3 and loc[0] == "space":
                sub = raw.get("space", {}).get(loc[1])
                valid = _param_fields(sub, loc)
            else:
                valid = _fields_at(loc)
            msg = f"unknown field {key!r} ({did_you_mean(key, valid)}valid fields: "
            msg += f"{choices_text(valid)})"
        elif kind == "union_tag_invalid" or kind == "union_tag_not_found":
            msg = "expected 'type' to be one of: categorical, float, int"
        elif kind == "literal_error":
            got = short_repr(err.get("input"))
            msg = f"invalid value {got} (expected one of: {err['ctx']['expected']})"
        elif kind == "missing":
            msg = "required field is missing"
        elif kind == "value_error":
            msg = msg.removeprefix("Value error, ")
        else:
            msg = f"{msg} (got {short_repr(err.get('input'))})"
        problems.append(loaded.problem(loc, msg))
    return problems


#: Integers Optuna keeps exactly: it stores every parameter as a float (and the records as
#: int64), so an integer bound beyond 2**53 would come back as another number.
MAX_EXACT_INT = 2**53


def _holdable_problems(loaded: LoadedSpec, loc: Loc, p: FloatParam | IntParam) -> list[Problem]:
    """Bounds the run can use: a float range numpy can span, integers a float holds exactly,
    and a step that divides the range (Optuna would move ``high`` without a word)."""
    if not (math.isfinite(p.low) and math.isfinite(p.high)) or p.low >= p.high:
        return []  # reported above
    span = p.high - p.low
    if isinstance(p, IntParam):
        big = max(abs(p.low), abs(p.high))
        if big > MAX_EXACT_INT:
            return [
                loaded.problem(
                    (*loc, "low" if abs(p.low) == big else "high"),
                    f"integer bounds must lie within +/-2**53 ({MAX_EXACT_INT:,}): Optuna stores "
                    "parameters as floats, which hold no larger integer exactly",
                )
            ]
        if span % p.step and p.step <= span and not p.log:  # else reported above
            last = p.low + span // p.step * p.step
            return [
                loaded.problem(
                    (*loc, "step"),
                    f"step ({p.step}) does not divide high - low ({span}): the last value would "
                    f"be {last}, not high ({p.high}); make high - low a multiple of step",
                )
            ]
        return []
    if not math.isfinite(span):
        return [
            loaded.problem(
                (*loc, "high"),
                f"high - low overflows a float ({p.low:g} to {p.high:g}); narrow the range",
            )
        ]
    if p.step is not None and p.step <= span and not p.log:  # else reported above
        count = span / p.step
        if count > MAX_EXACT_INT:  # Optuna's step arithmetic (Decimal) fails beyond ~1e28
            return [
                loaded.problem(
                    (*loc, "step"),
                    f"step ({p.step:g}) cuts high - low into {count:.3g} values, more than a "
                    "float tells apart (2**53); use a larger step, or none",
                )
            ]
        if abs(count - round(count)) > 1e-9 * max(1.0, count):
            last = p.low + math.floor(count + 1e-9) * p.step
            return [
                loaded.problem(
                    (*loc, "step"),
                    f"step ({p.step:g}) does not divide high - low ({span:g}): the last value "
                    f"would be {last:g}, not high ({p.high:g}); make high - low a multiple of "
                    "step",
                )
            ]
    return []


def _choice_problems(loaded: LoadedSpec, loc: Loc, choices: list[Any]) -> list[Problem]:
    """Choices the run can store: finite floats, integers a float holds exactly."""
    bad = [x for x in choices if isinstance(x, float) and not math.isfinite(x)]
    if bad:
        return [loaded.problem((*loc, "choices"), f"choices must be finite (got {bad[0]})")]
    big = [x for x in choices if isinstance(x, int) and abs(x) > MAX_EXACT_INT]
    if big:
        return [
            loaded.problem(
                (*loc, "choices"),
                f"integer choices must lie within +/-2**53 (got {short_repr(big[0])}): the "
                "records hold numbers as floats and 64-bit integers",
            )
        ]
    return []


def _first_equal_pair(choices: list[Any]) -> tuple[Any, Any] | None:
    """The first two choices Optuna cannot tell apart (it finds a choice by ==; 1, 1.0 and
    true are one), in one pass: equal numbers and strings hash alike."""
    seen: dict[Any, Any] = {}
    for x in choices:
        if x in seen:
            return seen[x], x
        seen[x] = x
    return None


def _range_problems(loaded: LoadedSpec) -> list[Problem]:
    problems = []
    for name, p in loaded.spec.space.items():
        loc: Loc = ("space", name)
        if isinstance(p, FloatParam | IntParam):
            if not math.isfinite(p.low) or not math.isfinite(p.high):
                problems.append(loaded.problem((*loc, "low"), "low and high must be finite"))
            elif p.low >= p.high:
                problems.append(
                    loaded.problem((*loc, "low"), f"low ({p.low}) must be below high ({p.high})")
                )
            if p.log and p.low <= 0:
                problems.append(
                    loaded.problem((*loc, "log"), f"log scale needs low > 0 (got {p.low})")
                )
            if p.log and isinstance(p, FloatParam) and p.step is not None:
                problems.append(
                    loaded.problem((*loc, "step"), "step cannot be combined with log: true")
                )
            if p.log and isinstance(p, IntParam) and p.step != 1:
                problems.append(
                    loaded.problem((*loc, "step"), "step must be 1 with log: true (Optuna)")
                )
            if p.step is not None and p.low < p.high and p.step > p.high - p.low:
                problems.append(
                    loaded.problem((*loc, "step"), f"step ({p.step}) is larger than high - low")
                )
            problems += _holdable_problems(loaded, loc, p)
        elif isinstance(p, CategoricalParam):
            # Optuna finds a choice by ==, so 1, 1.0 and true are one choice to it.
            c = p.choices
            problems += _choice_problems(loaded, loc, c)
            same = _first_equal_pair(c)
            if same:
                a, b = same
                problems.append(
                    loaded.problem(
                        (*loc, "choices"), f"choices must be distinct ({a!r} equals {b!r})"
                    )
                )
    search = loaded.spec.search
    if isinstance(search.sampler, SamplerRef) and search.sampler.options and search.options:
        problems.append(
            loaded.problem(
                ("search", "options"),
                "the sampler's options are given twice: keep them in search.sampler.options "
                "or here, not both",
            )
        )
    seen: dict[str, int] = {}
    for i, obj in enumerate(loaded.spec.objectives):
        if obj.metric in seen:
            problems.append(
                loaded.problem(
                    ("objectives", i, "metric"),
                    f"duplicate objective {obj.metric!r} (also objective {seen[obj.metric]}; "
                    "each metric can be optimised once)",
                )
            )
        seen.setdefault(obj.metric, i)
    return problems


#: Top-level fields whose bad items can be dropped one by one so the rest is still checked.
_ITEM_FIELDS = ("space", "evaluators", "objectives")
#: Placeholders for required fields that were missing or invalid: checking goes on, the
#: field's own problem is already reported.
_PLACEHOLDERS: dict[str, Any] = {
    "study": "invalid-study-name",
    "objectives": [{"metric": "invalid.metric", "direction": "minimize"}],
}


def _without_bad_parts(raw: dict[str, Any], exc: ValidationError) -> tuple[dict[str, Any], set]:
    """A copy of ``raw`` without the fields and items pydantic rejected (checked no further)."""
    data = dict(raw)
    bad_items: dict[str, set[Any]] = {}
    for err in exc.errors():
        loc = tuple(err["loc"])
        if not loc:
            continue
        top = str(loc[0])
        if top in _ITEM_FIELDS and len(loc) >= 2 and isinstance(data.get(top), dict | list):
            bad_items.setdefault(top, set()).add(loc[1])
        else:
            data.pop(top, None)
    for top, items in bad_items.items():
        value = data[top]
        if isinstance(value, dict):
            data[top] = {k: v for k, v in value.items() if k not in items}
        else:
            data[top] = [v for i, v in enumerate(value) if i not in items]
    placeheld = set()
    for key, value in _PLACEHOLDERS.items():
        if not data.get(key):
            data[key] = value
            placeheld.add(key)
    return data, placeheld


def collect_spec(path: str | Path) -> tuple[LoadedSpec | None, list[Problem]]:
    """Load a spec and check its shape, collecting every problem instead of stopping at the
    first kind: parts pydantic rejects are left out (or replaced by placeholders) and the rest
    is still checked, so one run of ``dse validate`` lists them all.

    Returns the (possibly partial) spec, or None when the file is not a YAML mapping at all.
    """
    path = Path(path)
    try:
        raw, lines = load_yaml(path)
    except SpecError as exc:
        return None, list(exc.problems)
    holder = LoadedSpec.__new__(LoadedSpec)
    object.__setattr__(holder, "path", path)
    object.__setattr__(holder, "lines", lines)
    problems: list[Problem] = list(getattr(lines, "problems", []))
    if not isinstance(raw, dict):
        got = "an empty file" if raw is None else type(raw).__name__
        problems.append(Problem(str(path), 1, "", f"expected a mapping of spec fields, got {got}"))
        return None, problems
    try:
        spec = StudySpec.model_validate(raw)
        placeheld: set[str] = set()
    except ValidationError as exc:
        problems += _pydantic_problems(exc, raw, holder)
        data, placeheld = _without_bad_parts(raw, exc)
        try:
            spec = StudySpec.model_validate(data)
        except ValidationError:  # nothing sensible is left to check further
            return None, problems
        if "objectives" in placeheld:
            spec = spec.model_copy(update={"objectives": []})
    loaded = LoadedSpec(spec=spec, path=path, lines=lines, raw=raw)
    for check in SPEC_CHECKS:
        try:
            problems += check(loaded)
        except SpecError as exc:
            problems += exc.problems
    return loaded, problems


#: Checks of a shape-valid spec, each returning its problems (or raising SpecError); every one
#: runs, so ``dse validate`` reports all problems in one pass. Append new checks here.
SPEC_CHECKS: list[Callable[[LoadedSpec], list[Problem]]] = [_range_problems]


def load_spec(path: str | Path) -> LoadedSpec:
    """Load and validate a spec's shape; raise SpecError listing every problem."""
    loaded, problems = collect_spec(path)
    if problems or loaded is None:
        raise SpecError(problems)
    return loaded


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a spec, for editors (``dse schema``)."""
    schema = StudySpec.model_json_schema()
    # The evaluators' list form (README, docs/evaluators.md) is accepted by a validator before
    # the model sees it, so pydantic's schema knows only the mapping: say both.
    mapping = schema["properties"]["evaluators"]
    listed = {
        "type": "array",
        "items": {
            "anyOf": [
                {"type": "string", "description": "An installed evaluator by name"},
                {
                    "type": "object",
                    "description": "name: 'module:function', a custom evaluator",
                    "additionalProperties": {"type": "string"},
                    "minProperties": 1,
                    "maxProperties": 1,
                },
            ]
        },
    }
    description = mapping.pop("description", None)
    schema["properties"]["evaluators"] = {
        "description": description,
        "anyOf": [{k: v for k, v in mapping.items() if k != "title"}, listed],
    }
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "litegpu-dse study spec"
    return schema
