"""The JSON Schema ``dse schema`` prints: the spec's own schema, with ``fixed`` typed by the
installed evaluators that describe their keys, and every number there also accepting an
uncertain assumption (a distribution)."""

from __future__ import annotations

from typing import Any

from dse.model.registry import builtin_evaluators, domain_hooks
from dse.model.uncertain import DIST_KEY, DISTRIBUTIONS
from dse.spec.schema import json_schema


def spec_json_schema() -> dict[str, Any]:
    """``dse schema``: the JSON Schema of a study spec, with ``fixed`` typed by the installed
    evaluators that describe their keys (their ``fixed_schema`` hook)."""
    schema = json_schema()
    fixed = schema["properties"]["fixed"]
    for fixed_schema in domain_hooks(builtin_evaluators().values(), "fixed_schema"):
        part = fixed_schema()
        fixed.setdefault("properties", {}).update(part.get("properties", {}))
        schema.setdefault("$defs", {}).update(part.get("$defs", {}))
    _allow_distributions(fixed.get("properties", {}), schema)
    return schema


def _allow_distributions(props: dict[str, Any], schema: dict[str, Any]) -> None:
    """Any number in ``fixed`` may be an uncertain assumption (``{dist: lognormal, ...}``,
    :mod:`dse.model.uncertain`): each numeric field also accepts a distribution."""
    schema.setdefault("$defs", {})["Distribution"] = {
        "description": "An uncertain assumption: "
        + "; ".join(f"{k} ({', '.join(v)})" for k, v in DISTRIBUTIONS.items()),
        "type": "object",
        "required": [DIST_KEY],
        "properties": {DIST_KEY: {"enum": list(DISTRIBUTIONS)}}
        | {p: {"type": "number"} for ps in DISTRIBUTIONS.values() for p in ps},
        "additionalProperties": False,
    }
    dist = {"$ref": "#/$defs/Distribution"}

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
            return
        if not isinstance(node, dict):
            return
        for name, sub in list(node.get("properties", {}).items()):
            if isinstance(sub, dict) and sub.get("type") in ("number", "integer"):
                about = {k: sub[k] for k in ("description", "default") if k in sub}
                node["properties"][name] = {**about, "anyOf": [sub, dist]}
            else:
                walk(sub)
        for key in ("anyOf", "oneOf", "allOf", "items", "additionalProperties"):
            if key in node:
                walk(node[key])

    walk({"properties": props})
