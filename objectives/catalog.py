"""What the built-in domain offers someone who has only the installed package: its presets
(GPUs, models, technology nodes) with units and sources, its design parameters, the example
specs shipped in ``objectives/examples/`` and a minimal spec for a GPU preset name.

Registered as the ``dse.catalogs`` entry point ``objectives``; the engine reads it through
that contract only (``dse presets``, ``dse params``, ``dse init``, ``dse evaluate h100-sxm``),
so another domain package can offer the same. Plain data, no engine import.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from importlib import resources
from typing import Any

from objectives.params import PARAMS
from objectives.presets import (
    DEFAULT_TECHNOLOGY,
    gpu_presets,
    model_presets,
    technology_presets,
)
from objectives.presets.files import builtin_files, search_dirs, user_files

__all__ = [
    "STARTER",
    "detail",
    "examples",
    "headline",
    "kinds",
    "params",
    "plausibility",
    "rows",
    "spec_for",
]

#: The example ``dse init`` writes by default: the Lite-GPU study.
STARTER = "litegpu"

_KINDS = {
    "gpus": "GPU presets: a spec's `fixed: {gpu: NAME}`",
    "models": "model presets: `workload: {model: NAME}`",
    "nodes": "technology nodes: `technology: NAME` (or {preset: NAME, field: value})",
}
_FILE_KIND = {"gpus": "gpus", "models": "models", "nodes": "technology"}


def kinds() -> dict[str, str]:
    """Each kind of preset and where a spec names one."""
    return dict(_KINDS)


def _dirs() -> tuple[str, ...]:
    """User presets as a spec in this folder would see them (``presets/``, ``$DSE_PRESETS``)."""
    return search_dirs(os.getcwd())


def rows(kind: str) -> list[dict[str, Any]]:
    """One row per preset of ``kind``: its name and the few values that tell them apart."""
    dirs = _dirs()
    if kind == "gpus":
        return [
            {
                "name": name,
                "description": str(gpu.get("description", "")),
                "node": str(gpu.get("technology") or DEFAULT_TECHNOLOGY),
                "die_area_mm2": gpu.get("die_area_mm2"),
                "dies_per_gpu": gpu.get("dies_per_gpu"),
                "hbm_stacks_per_die": gpu.get("hbm_stacks_per_die"),
            }
            for name, gpu in gpu_presets(dirs).items()
        ]
    if kind == "models":
        return [
            {"name": name, "description": str(m.get("description", ""))}
            for name, m in model_presets(dirs).items()
        ]
    if kind == "nodes":
        return [
            {
                "name": name,
                "wafer_cost_usd": t.get("wafer_cost_usd"),
                "defect_density_per_cm2": t.get("defect_density_per_cm2"),
            }
            for name, t in technology_presets(dirs).items()
        ]
    raise KeyError(kind)


def _entry(raw: Any) -> tuple[Any, str, str]:
    """(value, unit, source) of one preset field as written in its file."""
    if isinstance(raw, Mapping) and "value" in raw:
        return raw["value"], str(raw.get("unit", "")), str(raw.get("source", ""))
    return raw, "", ""


def detail(kind: str, name: str) -> list[dict[str, Any]]:
    """Every field of one preset with its value, unit and source, as its file writes it."""
    dirs = _dirs()
    if kind == "nodes":
        if name not in technology_presets(dirs):
            raise KeyError(name)
        out: dict[str, dict[str, Any]] = {}
        files = [*builtin_files("technology")]
        for folder in reversed(dirs):
            files += list(user_files(folder, "technology"))
        for pf in files:
            data = pf.data if isinstance(pf.data, Mapping) else {}
            for section in (data.get("common") or {}, (data.get("nodes") or {}).get(name) or {}):
                for key, raw in section.items():
                    value, unit, source = _entry(raw)
                    out[str(key)] = {
                        "field": str(key), "value": value, "unit": unit, "source": source
                    }  # fmt: skip
        return list(out.values())
    file_kind = _FILE_KIND.get(kind)
    if file_kind is None:
        raise KeyError(kind)
    files = [*builtin_files(file_kind)]
    for folder in reversed(dirs):
        files += list(user_files(folder, file_kind))
    body: Mapping[str, Any] | None = None
    for pf in files:  # the most specific file last: a user preset shadows a built-in
        data = pf.data if isinstance(pf.data, Mapping) else {}
        if isinstance(data.get(name), Mapping):
            body = data[name]
    if body is None:
        raise KeyError(name)
    rows_: list[dict[str, Any]] = []
    for key, raw in body.items():
        value, unit, source = _entry(raw)
        rows_.append({"field": str(key), "value": value, "unit": unit, "source": source})
    return rows_


def params() -> list[dict[str, Any]]:
    """The design parameters a spec may fix or search, with unit, default and meaning (a
    parameter without a default takes the GPU preset's value)."""
    return [
        {
            "name": name,
            "unit": p.unit,
            "default": "(from the GPU preset)" if p.default is None else p.default,
            "meaning": p.description,
        }
        for name, p in PARAMS.items()
    ]


def examples() -> dict[str, str]:
    """The example specs shipped in the package, by name, as YAML text."""
    folder = resources.files("objectives").joinpath("examples")
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".yaml"))
    return {n.removesuffix(".yaml"): folder.joinpath(n).read_text(encoding="utf-8") for n in names}


def spec_for(name: str) -> str | None:
    """A minimal spec (YAML text) evaluating GPU preset ``name`` as an 8-GPU node at its own
    technology node; None when ``name`` is no GPU preset (matched without regard to case)."""
    gpus = gpu_presets(_dirs())
    found = {g.lower(): g for g in gpus}.get(name.lower())
    if found is None:
        return None
    gpu = gpus[found]
    node = gpu.get("technology") or DEFAULT_TECHNOLOGY
    return (
        f"# The {found} preset as one 8-GPU node (`dse evaluate {found}`)\n"
        f"study: {found}\n"
        f"description: {json.dumps(str(gpu.get('description', found)))}\n"
        f"fixed: {{gpu: {found}, technology: {node}, cluster_size: 8}}\n"
    )


def _plausible() -> dict[str, dict[str, Any]]:
    from dse.spec import safe_yaml

    folder = resources.files("objectives.presets")
    text = folder.joinpath("plausible.yaml").read_text(encoding="utf-8")
    data = safe_yaml.parse(text, "plausible.yaml").data
    return {str(k): dict(v) for k, v in (data or {}).items()}


def plausibility(context: Mapping[str, Any]) -> list[str]:
    """Warnings for values of the resolved context outside their plausible range (most
    likely a unit slip), each naming the field, the range and its source."""
    out = []
    for path, rng in _plausible().items():
        node: Any = context
        for part in path.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(node, bool) or not isinstance(node, int | float):
            continue
        if not rng["low"] <= node <= rng["high"]:
            out.append(
                f"{path} = {node:g} {rng['unit']} is outside the plausible "
                f"{rng['low']:g}-{rng['high']:g} {rng['unit']} (a unit slip?); "
                f"{rng['source']}"
            )
    return out


def headline(context: Mapping[str, Any]) -> str | None:
    """The assumptions every figure rests on, said above the numbers: the price basis
    (``price_basis``: at manufacturing cost, or at each vendor's market margin), a shipped
    product's own host bill where it carries one (``host_usd_per_gpu``: a designed GPU's host
    is sized by its power, which can decide a close comparison with a product), and under
    Poisson arrivals how requests reach the replicas (``workload.dispatch``: it can decide
    between few large replicas and many small ones)."""
    basis = context.get("price_basis")
    parts: list[str] = []
    if basis == "cost":
        parts.append(
            "prices at cost: hardware at its manufacturing cost, no vendor margin "
            "(--set price_basis=market prices each vendor at its cited gross margin)"
        )
    elif basis == "market":
        parts.append(
            "prices at market: each GPU vendor's and each class of network gear's cited "
            "gross margin on its cost (price_basis=market)"
        )
    host = context.get("host_usd_per_gpu")
    if isinstance(host, int | float) and host > 0:
        parts.append(
            f"host: the platform's own bill, ${host:,.0f} per GPU (host_usd_per_gpu; "
            "0 sizes it by GPU power at technology.host_usd_per_gpu_kw, as a designed GPU's)"
        )
    wl = context.get("workload")
    if isinstance(wl, Mapping) and wl.get("arrivals") == "poisson":
        if wl.get("dispatch", "random") == "shortest_queue":
            parts.append("poisson arrivals join the least-loaded replica (one queue for all)")
        else:
            parts.append(
                "poisson arrivals split at random, each replica queuing alone "
                "(--set workload.dispatch=shortest_queue joins the least-loaded)"
            )
    return "; ".join(parts) or None
