"""Loading a spec: YAML read safely, its shape checked by the models of :mod:`dse.spec.schema`
and every problem collected (``FILE:LINE: field.path: what is wrong``), so one run of
``dse validate`` lists them all."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from dse.errors import Problem, SpecError
from dse.spec.messages import choices_text
from dse.spec.pydantic_errors import pydantic_problems
from dse.spec.ranges import range_problems
from dse.spec.schema import LoadedSpec, StudySpec
from dse.spec.yamlio import loads_yaml

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


def collect_spec(
    path: str | Path, *, text: str | None = None
) -> tuple[LoadedSpec | None, list[Problem]]:
    """Load a spec and check its shape, collecting every problem instead of stopping at the
    first kind: parts pydantic rejects are left out (or replaced by placeholders) and the rest
    is still checked, so one run of ``dse validate`` lists them all.

    Returns the (possibly partial) spec, or None when the file is not a YAML mapping at all.
    ``text``: the spec's YAML already in hand (a catalog's preset spec), ``path`` its label.
    """
    path = Path(path)
    try:
        raw, lines = loads_yaml(text, filename=str(path))
    except SpecError as exc:
        return None, list(exc.problems)
    holder = LoadedSpec.__new__(LoadedSpec)
    object.__setattr__(holder, "path", path)
    object.__setattr__(holder, "lines", lines)
    problems: list[Problem] = list(lines.problems)
    if not isinstance(raw, dict):
        got = "an empty file" if raw is None else type(raw).__name__
        problems.append(Problem(str(path), 1, "", f"expected a mapping of spec fields, got {got}"))
        return None, problems
    fields = list(StudySpec.model_fields)
    if raw and not any(str(key) in fields for key in raw):  # some other YAML: one line, not 60
        keys = ", ".join(str(k) for k in list(raw)[:5]) + (", ..." if len(raw) > 5 else "")
        problems.append(
            Problem(
                str(path),
                1,
                "",
                f"not a study spec: none of its {len(raw)} top-level keys ({keys}) is a spec "
                f"field (valid fields: {choices_text(fields)})",
            )
        )
        return None, problems
    try:
        spec = StudySpec.model_validate(raw)
        placeheld: set[str] = set()
    except ValidationError as exc:
        problems += pydantic_problems(exc, raw, holder)
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
SPEC_CHECKS: list[Callable[[LoadedSpec], list[Problem]]] = [range_problems]
