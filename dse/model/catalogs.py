"""Catalogs: what an installed domain package offers a user with no repository at hand.

A catalog is a plug-in registered under the entry-point group ``dse.catalogs`` (the built-in
domain registers ``objectives = "objectives.catalog"``). It is a module or object with any of:

- ``kinds() -> {kind: meaning}`` and ``rows(kind) -> [row]``, ``detail(kind, name) -> [row]``
  (``dse presets [KIND [NAME]]``; a row is a mapping of column -> value);
- ``params() -> [row]`` (``dse params``);
- ``examples() -> {name: yaml_text}`` and ``STARTER`` (``dse init``);
- ``spec_for(name) -> yaml_text | None``: a minimal spec for a preset name
  (``dse evaluate NAME``).

The engine knows no domain: it lists what the catalogs say.
"""

from __future__ import annotations

from typing import Any

from dse.errors import DseError
from dse.spec.entry_points import installed_entry_points, load_entry_point
from dse.spec.messages import choices_text

__all__ = [
    "CatalogError",
    "closest",
    "examples",
    "headlines",
    "installed_catalogs",
    "params",
    "plausibility",
    "preset_detail",
    "preset_kinds",
    "preset_rows",
    "spec_for",
    "starter",
]

GROUP = "dse.catalogs"


class CatalogError(DseError):
    """A preset kind, preset or example name that no installed catalog has."""


def closest(name: str, names: list[str] | dict[str, Any]) -> str:
    """``"did you mean 'x'? "`` or ``""``, ignoring case and preferring a name that starts
    with what was typed (``ab`` -> ``ab-x``, not ``bb``)."""
    from difflib import get_close_matches

    low = {str(n).lower(): str(n) for n in names}
    typed = name.lower()
    starts = sorted(n for n in low if n.startswith(typed))
    close = starts[:1] or get_close_matches(typed, list(low), n=1)
    return f"did you mean {low[close[0]]!r}? " if close else ""


def installed_catalogs() -> dict[str, Any]:
    """Every installed catalog, by entry-point name (loaded on first use)."""
    return {
        name: load_entry_point(GROUP, name, kind="catalog", error=CatalogError)[0]
        for name in installed_entry_points(GROUP)
    }


def _each(hook: str) -> list[Any]:
    return [getattr(c, hook) for c in installed_catalogs().values() if hasattr(c, hook)]


def _merged(hook: str) -> dict[str, str]:
    """Every catalog's ``hook()`` mapping, merged in catalog order."""
    return {k: v for fn in _each(hook) for k, v in fn().items()}


def preset_kinds() -> dict[str, str]:
    """Kind -> where a spec names a preset of that kind."""
    return _merged("kinds")


def _kind(kind: str) -> str:
    kinds = preset_kinds()
    if kind in kinds:
        return kind
    low = {k.lower(): k for k in kinds}
    for typed in (kind.lower(), kind.lower() + "s"):  # a singular kind names its plural
        if typed in low:
            return low[typed]
    if not kinds:
        raise CatalogError("no installed package offers presets (entry points 'dse.catalogs')")
    raise CatalogError(
        f"unknown preset kind {kind!r} ({closest(kind, kinds)}valid: {choices_text(kinds)})"
    )


def preset_rows(kind: str) -> list[dict[str, Any]]:
    """One row per preset of ``kind`` from every catalog that has that kind."""
    kind = _kind(kind)
    out: list[dict[str, Any]] = []
    for c in installed_catalogs().values():
        if kind in getattr(c, "kinds", dict)():
            out += c.rows(kind)
    return out


def preset_detail(kind: str, name: str) -> list[dict[str, Any]]:
    """Every field of one preset with value, unit and source."""
    kind = _kind(kind)
    names = [str(r["name"]) for r in preset_rows(kind)]
    match = {n.lower(): n for n in names}.get(name.lower())
    if match is None:
        raise CatalogError(
            f"unknown {kind} preset {name!r} ({closest(name, names)}valid: {choices_text(names)})"
        )
    for c in installed_catalogs().values():
        if kind in getattr(c, "kinds", dict)():
            try:
                return list(c.detail(kind, match))
            except KeyError:
                continue
    raise CatalogError(f"no catalog describes {kind} preset {match!r}")  # pragma: no cover


def params() -> list[dict[str, Any]]:
    """Every design parameter the installed catalogs describe."""
    return [row for fn in _each("params") for row in fn()]


def examples() -> dict[str, str]:
    """Example specs (name -> YAML text) of every catalog."""
    return _merged("examples")


def starter() -> str | None:
    """The example ``dse init`` writes when none is named."""
    names = [getattr(c, "STARTER", None) for c in installed_catalogs().values()]
    return next((n for n in names if n), None)


def headlines(context: Any) -> list[str]:
    """The assumptions the catalogs say every reader of a result must see (a price basis)."""
    return [h for fn in _each("headline") if (h := fn(context))]


def plausibility(context: Any) -> list[str]:
    """Every catalog's warnings for implausible values of a resolved context (a unit slip,
    say): notes for the user, never errors."""
    return [w for fn in _each("plausibility") for w in fn(context)]


def spec_for(name: str) -> str | None:
    """A minimal spec for a preset ``name`` (the first catalog that knows it), else None."""
    for fn in _each("spec_for"):
        text = fn(name)
        if text is not None:
            return str(text)
    return None
