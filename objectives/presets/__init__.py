"""Preset data files (technology nodes, GPUs, models) and the context resolver.

Every constant in a preset file is written as ``name: {value: V, unit: U, source: "..."}`` so its
source stands next to it; the loader strips that to ``name: V``. The technology preset of a node
is the union of the fragments in ``presets/technology/*.yaml`` (silicon/cost, performance/power,
reliability), each with a ``common`` section and per-node sections; a key defined by two fragments
is an error, so each model owns its constants.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

import yaml

from objectives.errors import ContextError, unknown_name
from objectives.params import PARAMS

DEFAULT_TECHNOLOGY = "n4"
DEFAULT_GPU = "h100-sxm"


def _read(rel: str) -> dict[str, Any]:
    text = resources.files("objectives.presets").joinpath(rel).read_text(encoding="utf-8")
    return yaml.safe_load(text) or {}


def _strip(entry: Any) -> Any:
    """``{value: V, source: ...}`` -> V; anything else unchanged."""
    if isinstance(entry, Mapping) and "value" in entry:
        return entry["value"]
    return entry


def _strip_all(section: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: _strip(v) for k, v in (section or {}).items()}


@cache
def _technology_fragments() -> dict[str, dict[str, Any]]:
    folder = resources.files("objectives.presets").joinpath("technology")
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".yaml"))
    return {name: _read(f"technology/{name}") for name in names}


@cache
def technology_presets() -> dict[str, dict[str, Any]]:
    """Node name -> flat technology dict (values only)."""
    frags = _technology_fragments()
    nodes = sorted({n for f in frags.values() for n in (f.get("nodes") or {})})
    owner: dict[str, str] = {}
    for fname, frag in frags.items():
        keys = set(frag.get("common") or {})
        for node_section in (frag.get("nodes") or {}).values():
            keys |= set(node_section or {})
        for key in keys:
            if key in owner:
                raise RuntimeError(f"technology key {key!r} defined in {owner[key]} and {fname}")
            owner[key] = fname
    out: dict[str, dict[str, Any]] = {}
    for node in nodes:
        merged: dict[str, Any] = {}
        for frag in frags.values():
            merged.update(_strip_all(frag.get("common")))
            merged.update(_strip_all((frag.get("nodes") or {}).get(node)))
        out[node] = merged
    return out


@cache
def technology_sources() -> dict[str, dict[str, Any]]:
    """Key -> raw entry (value, unit, source) for documentation; node sections win."""
    out: dict[str, dict[str, Any]] = {}
    for frag in _technology_fragments().values():
        for key, entry in (frag.get("common") or {}).items():
            out[key] = entry if isinstance(entry, Mapping) else {"value": entry}
    return out


@cache
def gpu_presets() -> dict[str, dict[str, Any]]:
    """GPU name -> design-parameter defaults (values only)."""
    return {name: _strip_all(body) for name, body in _read("gpus.yaml").items()}


@cache
def model_presets() -> dict[str, dict[str, Any]]:
    """Model name -> architecture dict (values only)."""
    return {name: _strip_all(body) for name, body in _read("models.yaml").items()}


@cache
def workload_defaults() -> dict[str, Any]:
    return _strip_all(_read("workload.yaml"))


def _resolve_named(
    value: Any,
    *,
    path: str,
    presets: Mapping[str, Mapping[str, Any]],
    default: str,
    what: str,
) -> dict[str, Any]:
    """Resolve ``name`` or ``{preset: name, field: override, ...}`` against a preset table."""
    if value is None:
        value = default
    if isinstance(value, str):
        name, overrides = value, {}
    elif isinstance(value, Mapping):
        overrides = dict(value)
        name = overrides.pop("preset", default)
    else:
        raise ContextError(path, f"expected a {what} preset name or a mapping, got {value!r}")
    if name not in presets:
        raise unknown_name(
            path if isinstance(value, str) else f"{path}.preset",
            name,
            presets,
            what=f"{what} preset",
        )
    resolved = copy.deepcopy(dict(presets[name]))
    for key, v in overrides.items():
        if key == "name":
            continue
        if key not in resolved:
            raise unknown_name(f"{path}.{key}", key, resolved, what=f"{what} field")
        resolved[key] = v
    resolved["name"] = name
    return resolved


def resolve_context(fixed: Mapping[str, Any]) -> dict[str, Any]:
    """Expand preset names into full values and fill every design default.

    Order of precedence (last wins): parameter defaults, the GPU preset, explicit ``fixed``
    values. Searched parameters are applied by the caller on top of the result.
    """
    fixed = dict(fixed)
    out: dict[str, Any] = {}
    for name, p in PARAMS.items():
        if p.default is not None:
            out[name] = p.default
    gpu = _resolve_named(
        fixed.pop("gpu", None), path="gpu", presets=gpu_presets(), default=DEFAULT_GPU, what="GPU"
    )
    gpu_name = gpu.pop("name")
    gpu.pop("description", None)
    gpu.pop("technology", None)
    out.update({k: v for k, v in gpu.items() if k in PARAMS})
    out["gpu"] = gpu_name
    tech_default = gpu_presets()[gpu_name].get("technology", DEFAULT_TECHNOLOGY)
    out["technology"] = _resolve_named(
        fixed.pop("technology", None),
        path="technology",
        presets=technology_presets(),
        default=tech_default,
        what="technology",
    )
    out["workload"] = resolve_workload(fixed.pop("workload", None))
    for key, value in fixed.items():
        if key not in PARAMS:
            raise unknown_name(
                key, key, [*PARAMS, "gpu", "technology", "workload"], what="fixed field"
            )
        out[key] = value
    return out


def resolve_workload(value: Any) -> dict[str, Any]:
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise ContextError("workload", f"expected a mapping, got {value!r}")
    defaults = workload_defaults()
    out = copy.deepcopy(dict(defaults))
    for key, v in value.items():
        if key not in defaults:
            raise unknown_name(f"workload.{key}", key, defaults, what="workload field")
        out[key] = v
    out["model"] = _resolve_named(
        out.get("model"),
        path="workload.model",
        presets=model_presets(),
        default=str(defaults.get("model")),
        what="model",
    )
    return out
