"""Is a value physically possible for a design parameter? (the evaluator contract's
``check_value``): the engine asks it about every fixed value and the ends of every searched
range, so ``hbm_stacks_per_die: -2`` or ``spare_fraction: {low: -0.5, ...}`` is refused before
a study starts instead of giving plausible-looking numbers.

The ranges themselves have one home, :data:`objectives.presets.schema.PARAM_TYPES`.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from objectives.presets.schema import PARAM_TYPES


@cache
def _adapter(name: str) -> TypeAdapter[Any]:
    return TypeAdapter(PARAM_TYPES[name])


def check_param_value(name: str, value: Any) -> str | None:
    """Why ``value`` is impossible for design parameter ``name``; None if it is possible (or
    the parameter has no declared range)."""
    if name not in PARAM_TYPES:
        return None
    try:
        _adapter(name).validate_python(value)
    except ValidationError as exc:
        errors = exc.errors()
        msg = "; ".join(dict.fromkeys(e["msg"].removeprefix("Value error, ") for e in errors))
        return msg[:1].lower() + msg[1:]
    return None
