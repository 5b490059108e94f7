"""Plug-ins by entry point, for every kind (evaluators, samplers, storages): which are installed,
and loading one so that a broken plug-in names itself in one line."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from dse.errors import DseError, EvaluatorError


@cache
def installed_entry_points(group: str) -> dict[str, EntryPoint]:
    """The entry points installed distributions register under ``group``, by name (nothing
    is imported until one is loaded)."""
    return {ep.name: ep for ep in sorted(entry_points(group=group), key=lambda e: e.name)}


def load_entry_point(
    group: str, name: str, *, kind: str, error: type[DseError] = EvaluatorError
) -> tuple[Any, str]:
    """The object entry point ``name`` of ``group`` names, and its origin for messages; a
    plug-in that fails to load is named in one line (``kind`` says what it is)."""
    ep = installed_entry_points(group)[name]
    try:
        return ep.load(), f"entry point {ep.value}"
    except Exception as exc:  # a broken plug-in names itself
        raise error(f"{kind} entry point {name!r} ({ep.value}) failed: {exc}") from exc


def wrap_plugin(
    kind: Any, obj: Any, origin: str, *, field: str, expected: str, error: type[DseError]
) -> Any:
    """``obj`` as a ``kind`` (a frozen dataclass with an ``origin``): one as it is (its origin
    set if empty), a plain function as ``kind(field=obj)``; anything else is an ``error``
    saying what was ``expected`` (``{origin}`` in it is filled in)."""
    if isinstance(obj, kind):
        return obj if obj.origin else replace(obj, origin=origin)
    if not callable(obj):
        raise error(f"{expected.format(origin=origin)}, got {type(obj).__name__}")
    return kind(**{field: obj}, origin=origin)
