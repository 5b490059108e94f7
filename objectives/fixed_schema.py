"""JSON Schema of a spec's ``fixed`` mapping for the built-in evaluators (``dse schema``).

Editors complete ``gpu``, ``technology`` and ``workload`` (a preset name, or a mapping of the
preset's fields, each typed) and every design parameter of :data:`objectives.params.PARAMS`
with its unit. Built from the preset schemas the loader validates with, so the two agree.
"""

from __future__ import annotations

import copy
from typing import Any

from objectives.params import (
    COOLING,
    HBM_GENERATIONS,
    LINK_TYPES,
    MEMORY_POOLS,
    PACKAGINGS,
    PARAMS,
    PRICE_BASES,
    VENDORS,
)

_CHOICES = {
    "link_type": LINK_TYPES,
    "cooling": COOLING,
    "hbm_generation": HBM_GENERATIONS,
    "packaging": PACKAGINGS,
    "vendor": VENDORS,
    "price_basis": PRICE_BASES,
    "memory_pool": MEMORY_POOLS,
}


def _partial(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A preset's schema as an override: every field optional, its $defs hoisted to ``defs``."""
    s = copy.deepcopy(schema)
    defs.update(s.pop("$defs", {}))
    s.pop("required", None)
    s.pop("title", None)
    return s


def _param(name: str) -> dict[str, Any]:
    p = PARAMS[name]
    out: dict[str, Any] = {"description": f"{p.description} [{p.unit}]"}
    if name in _CHOICES:
        out["enum"] = list(_CHOICES[name])
    elif isinstance(p.default, bool):
        out["type"] = "boolean"
    elif isinstance(p.default, int):
        out["type"] = "integer"
    elif isinstance(p.default, str):
        out["type"] = "string"
    else:
        out["type"] = "number"
    if p.default is not None:
        out["default"] = p.default
    return out


def fixed_json_schema() -> dict[str, Any]:
    """``{"properties": {...}, "$defs": {...}}`` for ``fixed`` (unknown keys stay allowed here:
    a spec's own evaluators may read more; the loader names typos with did-you-mean)."""
    from objectives.presets import catalog
    from objectives.presets.files import search_dirs

    cat = catalog(search_dirs(None))
    defs: dict[str, Any] = {}
    props: dict[str, Any] = {}
    named = {
        "gpu": ("GPU", cat.gpus, "A GPU preset (gpus.yaml) or its fields"),
        "technology": ("technology", cat.technology, "A technology preset or its fields"),
        "workload": ("workload", None, "The serving/training workload's fields"),
    }
    for key, (schema_name, presets, what) in named.items():
        fields = _partial(cat.schemas[schema_name].model_json_schema(), defs)
        if presets:
            # technology: auto is the node the GPU ships on (objectives.presets.AUTO_TECHNOLOGY)
            auto = ["auto"] if key == "technology" else []
            names = {"type": "string", "enum": sorted(presets) + auto}
            # {preset: NAME, field: override, ...}: a preset refined field by field
            fields.setdefault("properties", {})["preset"] = {
                **names,
                "description": "The preset these fields refine",
            }
            props[key] = {"description": what, "anyOf": [names, fields]}
        else:
            props[key] = {"description": what, **fields}
    model = props["workload"].get("properties", {}).get("model")
    if model is not None:
        fields = _partial(cat.schemas["model"].model_json_schema(), defs)
        names = {"type": "string", "enum": sorted(cat.models)}
        fields.setdefault("properties", {})["preset"] = {**names, "description": "The preset"}
        model.clear()
        model.update(description="A model preset (models.yaml) or its fields",
                     anyOf=[names, fields])  # fmt: skip
    for name in PARAMS:
        props.setdefault(name, _param(name))
    return {"properties": props, "$defs": defs}
