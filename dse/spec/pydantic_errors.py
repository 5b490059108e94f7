"""Pydantic's validation errors as the spec's one-line problems: the location without
pydantic's union tags, unknown keys with a did-you-mean, and plain words for its error kinds."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from dse.errors import Problem
from dse.spec.messages import choices_text, did_you_mean, short_repr
from dse.spec.schema import (
    CategoricalParam,
    DropDefaults,
    FloatParam,
    IntParam,
    ObjectiveSpec,
    RobustSpec,
    SamplerRef,
    SearchSpec,
    StudySpec,
)
from dse.spec.yamlio import Loc

#: The model at each place of a spec that holds one (an item of a list: ``int``), for the
#: valid keys an unknown key is matched against; a parameter's model follows its ``type``.
_MODELS: dict[tuple[object, ...], type[BaseModel]] = {
    (): StudySpec,
    ("search",): SearchSpec,
    ("search", "sampler"): SamplerRef,
    ("robust",): RobustSpec,
    ("default_constraints",): DropDefaults,
    ("objectives", int): ObjectiveSpec,
}
_PARAMS: dict[str, type[BaseModel]] = {
    "float": FloatParam,
    "int": IntParam,
    "categorical": CategoricalParam,
}


def _fields_at(loc: Loc, raw: dict[str, Any]) -> list[str]:
    """Valid keys of the model at ``loc`` (for did-you-mean on unknown keys)."""
    model: type[BaseModel] | None
    if len(loc) >= 3 and loc[0] == "space":
        param = raw.get("space", {}).get(loc[1])
        model = _PARAMS.get(str(param.get("type"))) if isinstance(param, dict) else None
    else:
        model = _MODELS.get(tuple(int if isinstance(p, int) else p for p in loc[:-1]))
    return list(model.model_fields) if model else []


_CHOICE_TAGS = ("bool", "int", "float", "str")


def pydantic_problems(exc: ValidationError, raw: dict[str, Any], loaded: Any) -> list[Problem]:
    problems = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        # Drop the discriminator tag pydantic inserts for tagged unions (space.x.float.low).
        if len(loc) >= 3 and loc[0] == "space" and loc[2] in ("float", "int", "categorical"):
            loc = (loc[0], loc[1], *loc[3:])
        if loc[:2] == ("search", "sampler") and len(loc) >= 3 and loc[2] in ("name", "path"):
            loc = (*loc[:2], *loc[3:])  # and the tag of ``sampler: NAME | {path: ...}``
        if loc[:1] == ("default_constraints",) and len(loc) >= 2 and loc[1] in ("bool", "mapping"):
            loc = (loc[0], *loc[2:])  # and of ``default_constraints: BOOL | {drop: [...]}``
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
            valid = _fields_at(loc, raw)
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
