"""Pydantic's validation errors as the spec's one-line problems: the location without
pydantic's union tags, unknown keys with a did-you-mean, and plain words for its error kinds."""

from __future__ import annotations

from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError

from dse.errors import Problem
from dse.spec.messages import choices_text, did_you_mean, short_repr
from dse.spec.schema import (
    CategoricalParam,
    DropDefaults,
    FloatParam,
    IntParam,
    SamplerRef,
    SearchSpec,
    StudySpec,
)
from dse.spec.yamlio import Loc


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
        if model is StudySpec and part == "default_constraints":
            model = DropDefaults
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
    table: dict[str, type[BaseModel]] = {
        "float": FloatParam,
        "int": IntParam,
        "categorical": CategoricalParam,
    }
    model = table.get(str(kind))
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
