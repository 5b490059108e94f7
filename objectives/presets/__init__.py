"""Preset data files (technology nodes, GPUs, models, workload) and the context resolver.

Every constant in a preset file is written as ``name: {value: V, unit: U, source: "..."}`` so its
source stands next to it; the loader strips that to ``name: V``. The technology preset of a node
is the union of the fragments in ``presets/technology/*.yaml`` (silicon/cost, performance/power,
reliability), each with a ``common`` section and per-node sections; a key defined by two fragments
is an error, so each model owns its constants, and a node must be complete in every fragment.

Every file is checked against its kind's schema (objectives.presets.schema) when read. User
presets (a ``presets/`` folder beside the spec, then ``$DSE_PRESETS``) are searched before the
built-ins (objectives.presets.files; docs/presets.md).
"""

from __future__ import annotations

import copy
import math
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from difflib import get_close_matches
from functools import cache
from typing import Any

from objectives._die import die_edges_mm, reticle_fits
from objectives.errors import ContextError, unknown_name
from objectives.params import HBM_AUTO_ORDER, HBM_KEY_PREFIX, PARAMS
from objectives.presets.files import PresetFile, builtin_files, search_dirs, user_files
from objectives.presets.schema import (
    ModelPreset,
    PresetError,
    PresetProblem,
    WorkloadPreset,
    check,
    gpu_schema,
    technology_schema,
    unwrap,
)

DEFAULT_TECHNOLOGY = "n4"
#: ``technology: auto`` (or no technology): the node the GPU preset ships on (its ``technology``)
AUTO_TECHNOLOGY = "auto"


class NodeMismatchWarning(UserWarning):
    """A spec pins a technology node other than the one its GPU preset ships on."""


DEFAULT_GPU = "h100-sxm"
TECHNOLOGY_SECTIONS = ("common", "nodes")


@dataclass
class Catalog:
    """Every preset of one search path, checked."""

    technology: dict[str, dict[str, Any]] = field(default_factory=dict)
    gpus: dict[str, dict[str, Any]] = field(default_factory=dict)
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    workload: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    origin: dict[tuple[str, str], PresetFile] = field(default_factory=dict)  # (kind, name) -> file
    schemas: dict[str, Any] = field(default_factory=dict)  # kind -> pydantic schema


class _Collector:
    def __init__(self) -> None:
        self.problems: list[PresetProblem] = []
        self.reported: set[tuple[str, ...]] = set()

    def add(self, pf: PresetFile, loc: tuple[str, ...], message: str) -> None:
        self.problems.append(PresetProblem(pf.path, pf.line(loc), ".".join(loc), message))
        self.reported.add(loc)

    def known(self, loc: tuple[str, ...]) -> bool:
        """A problem at ``loc`` or above it was already reported (say it once)."""
        return any(loc[:i] in self.reported for i in range(len(loc) + 1))

    def strip(self, pf: PresetFile, loc: tuple[str, ...], section: Any) -> dict[str, Any]:
        if section is None:
            return {}
        if not isinstance(section, Mapping):
            self.add(pf, loc, f"expected a mapping, got {section!r}")
            return {}
        out: dict[str, Any] = {}
        for key, entry in section.items():
            value, problem = unwrap(entry)
            if problem:
                self.add(pf, (*loc, str(key)), problem)
                continue
            out[str(key)] = value
        return out

    def validate(
        self, pf: PresetFile, loc: tuple[str, ...], schema: Any, data: Mapping[str, Any], what: str
    ) -> None:
        for sub, message in check(schema, data, what=what):
            if not self.known((*loc, *sub)):
                self.add(pf, (*loc, *sub), message)

    def raise_if_any(self) -> None:
        if self.problems:
            raise PresetError(self.problems)


def _top_mapping(c: _Collector, pf: PresetFile) -> dict[str, Any]:
    if not isinstance(pf.data, Mapping):
        c.add(pf, (), f"expected a mapping of presets, got {type(pf.data).__name__}")
        return {}
    return _text_keys(c, pf, (), pf.data)


def _text_keys(
    c: _Collector, pf: PresetFile, loc: tuple[str, ...], section: Mapping[Any, Any]
) -> dict[str, Any]:
    """``section`` without its keys that are not text (``5:``, ``true:``), each said in one
    line: a spec names presets by text (``gpu: 5`` is a number, not a name), and the fields of
    an entry dropped here are not reported one by one."""
    out: dict[str, Any] = {}
    for key, value in section.items():
        if isinstance(key, str):
            out[key] = value
        else:
            c.add(
                pf,
                (*loc, str(key)),
                f"a name must be text, not {type(key).__name__} {key!r} (put it in quotes)",
            )
    return out


def _builtin_technology(
    c: _Collector, cat: Catalog, frags: list[PresetFile]
) -> tuple[dict[str, Any], set[str]]:
    """Merge the built-in fragments; return (every key -> built-in value, per-node keys)."""
    owner: dict[str, str] = {}
    common: dict[str, Any] = {}
    per_node: dict[str, dict[str, dict[str, Any]]] = {}  # file -> node -> values
    for pf in frags:
        data = _top_mapping(c, pf)
        for sec in data:
            if sec not in TECHNOLOGY_SECTIONS:
                c.add(pf, (str(sec),), f"unknown section {sec!r} (valid: common, nodes)")
        values = c.strip(pf, ("common",), data.get("common"))
        for key, entry in (data.get("common") or {}).items():
            cat.sources[key] = dict(entry) if isinstance(entry, Mapping) else {"value": entry}
        nodes = _text_keys(c, pf, ("nodes",), data.get("nodes") or {})
        per_node[pf.path] = {
            str(n): c.strip(pf, ("nodes", str(n)), body) for n, body in nodes.items()
        }
        keys = set(values) | {k for body in per_node[pf.path].values() for k in body}
        for key in sorted(keys):
            if key in owner and owner[key] != pf.path:
                c.add(
                    pf,
                    ("common",) if key in values else ("nodes",),
                    f"technology key {key!r} is also defined in {owner[key]}",
                )
            owner.setdefault(key, pf.path)
        common.update(values)
    # Completeness: a node defined in any fragment is defined, with the same keys, in every
    # fragment that has per-node sections.
    all_nodes = sorted({n for nodes in per_node.values() for n in nodes})
    node_keys: set[str] = set()
    by_file = {pf.path: pf for pf in frags}
    for path, nodes in per_node.items():
        if not nodes:
            continue
        keys = set().union(*(set(b) for b in nodes.values()))
        node_keys |= keys
        pf = by_file[path]
        for node in all_nodes:
            if node not in nodes:
                others = [p for p, n in per_node.items() if node in n]
                c.add(
                    pf,
                    ("nodes",),
                    f"node {node!r} is missing here but defined in "
                    f"{', '.join(others)}: a node must be complete in every fragment",
                )
                continue
            for key in sorted(keys - set(nodes[node])):
                c.add(pf, ("nodes", node), f"node {node!r} lacks {key!r} (other nodes set it)")
    builtin = dict(common)
    for nodes in per_node.values():
        for body in nodes.values():
            for key, value in body.items():
                builtin.setdefault(key, value)
    schema = technology_schema(builtin, required=set(builtin))
    cat.schemas["technology"] = schema
    for node in all_nodes:
        merged = dict(common)
        for nodes in per_node.values():
            merged.update(nodes.get(node, {}))
        cat.technology[node] = merged
        pf = next(by_file[p] for p, n in per_node.items() if node in n)
        cat.origin[("technology", node)] = pf
        c.validate(pf, ("nodes", node), schema, merged, "technology")
    return builtin, node_keys


def _user_technology(
    c: _Collector, cat: Catalog, pf: PresetFile, builtin: dict[str, Any], node_keys: set[str]
) -> None:
    data = _top_mapping(c, pf)
    for sec in data:
        if sec != "nodes":
            c.add(
                pf,
                (str(sec),),
                f"unknown section {sec!r} (a user technology file defines "
                "whole nodes under 'nodes:'; change common values per spec instead)",
            )
    schema = technology_schema(builtin, required=set(builtin))
    common = {k: v for k, v in builtin.items() if k not in node_keys}
    for node, body in _text_keys(c, pf, ("nodes",), data.get("nodes") or {}).items():
        node = str(node)
        values = c.strip(pf, ("nodes", node), body)
        for key in sorted(node_keys - set(values)):
            c.add(
                pf,
                ("nodes", node),
                f"node {node!r} lacks {key!r} (every node sets {', '.join(sorted(node_keys))})",
            )
        merged = {**common, **values}
        c.validate(pf, ("nodes", node), schema, merged, "technology")
        cat.technology[node] = merged
        cat.origin[("technology", node)] = pf


def _named(
    c: _Collector, cat: Catalog, pf: PresetFile, kind: str, schema: Any, table: dict[str, Any]
) -> None:
    for name, body in _top_mapping(c, pf).items():
        name = str(name)
        values = c.strip(pf, (name,), body)
        c.validate(pf, (name,), schema, values, kind)
        table[name] = values
        cat.origin[(kind, name)] = pf


def check_technology_fragments(frags: list[PresetFile]) -> None:
    """Check technology fragments (common + per-node sections) as the built-ins are checked."""
    c = _Collector()
    _builtin_technology(c, Catalog(), frags)
    c.raise_if_any()


@cache
def catalog(dirs: tuple[str, ...] = ()) -> Catalog:
    """Every preset on the search path ``dirs`` (user folders, most specific first) + built-ins.

    Raises PresetError listing every problem found in the files.
    """
    c = _Collector()
    cat = Catalog()
    builtin_tech, node_keys = _builtin_technology(c, cat, builtin_files("technology"))
    builtin_gpus = builtin_files("gpus")
    gpu_rows = [_top_mapping(c, pf) for pf in builtin_gpus]
    shared = set.intersection(*(set(b) for rows in gpu_rows for b in rows.values()))
    required = {k for k in shared if k in PARAMS and PARAMS[k].default is None}
    gschema = gpu_schema(required)
    cat.schemas.update({"GPU": gschema, "model": ModelPreset, "workload": WorkloadPreset})
    for pf in builtin_gpus:
        _named(c, cat, pf, "GPU", gschema, cat.gpus)
    for pf in builtin_files("models"):
        _named(c, cat, pf, "model", ModelPreset, cat.models)
    for folder in reversed(dirs):  # the most specific folder is applied last, so it wins
        for pf in user_files(folder, "technology"):
            _user_technology(c, cat, pf, builtin_tech, node_keys)
        for pf in user_files(folder, "gpus"):
            _named(c, cat, pf, "GPU", gschema, cat.gpus)
        for pf in user_files(folder, "models"):
            _named(c, cat, pf, "model", ModelPreset, cat.models)
    for name, gpu in cat.gpus.items():
        tech = gpu.get("technology") or DEFAULT_TECHNOLOGY
        pf = cat.origin[("GPU", name)]
        if tech not in cat.technology:
            c.add(pf, (name, "technology"), _unknown(tech, cat.technology, "technology node"))
            continue
        for problem in (
            _hbm_beyond_generation(gpu, cat.technology[tech]),
            _die_beyond_reticle(gpu, cat.technology[tech], tech),
        ):
            if problem is not None and not c.known((name, problem[0])):
                c.add(pf, (name, problem[0]), problem[1])
    (wpf,) = builtin_files("workload")
    cat.workload = c.strip(wpf, (), _top_mapping(c, wpf))
    c.validate(wpf, (), WorkloadPreset, cat.workload, "workload")
    c.raise_if_any()
    return cat


def _hbm_beyond_generation(
    gpu: Mapping[str, Any], node: Mapping[str, Any]
) -> tuple[str, str] | None:
    """(field, problem) when a GPU preset's HBM stacks exceed what their generation builds
    (a 36 GB stack is 12-high HBM3e, not 8-high HBM3e's 24 GB), else None: the preset check
    holds every preset to it, where the cost evaluator's ``hbm_fits_generation`` is a metric."""
    try:
        gb = float(gpu.get("hbm_gb_per_stack", 0.0))
        tbps = float(gpu.get("hbm_tbps_per_stack", 0.0))
    except (TypeError, ValueError):
        return None  # the schema says what is wrong with the value
    gen = str(gpu.get("hbm_generation") or "auto")
    if gen == "auto":
        gen = str(node.get("hbm_generation") or "auto")

    def limits(g: str) -> tuple[float, float]:
        p = HBM_KEY_PREFIX[g]
        return float(node[f"{p}_max_gb_per_stack"]), float(node[f"{p}_max_tbps_per_stack"])

    def holds(g: str) -> bool:
        max_gb, max_tbps = limits(g)
        return gb <= max_gb * (1 + 1e-9) and tbps <= max_tbps * (1 + 1e-9)

    fitting = [g for g in HBM_AUTO_ORDER if holds(g)]
    if gen == "auto":
        if fitting:
            return None
        max_gb, max_tbps = limits(HBM_AUTO_ORDER[-1])
        return (
            "hbm_gb_per_stack",
            f"{gb:g} GB at {tbps:g} TB/s per stack is beyond every HBM generation "
            f"(the largest, {HBM_AUTO_ORDER[-1]}, holds {max_gb:g} GB at {max_tbps:g} TB/s)",
        )
    if gen not in HBM_KEY_PREFIX or holds(gen):
        return None  # an unknown generation is the schema's to report
    max_gb, max_tbps = limits(gen)
    field_, have, cap, unit = (
        ("hbm_gb_per_stack", gb, max_gb, "GB")
        if gb > max_gb * (1 + 1e-9)
        else ("hbm_tbps_per_stack", tbps, max_tbps, "TB/s")
    )
    hint = f"; {fitting[0]} holds it" if fitting else ""
    return (
        field_,
        f"{have:g} {unit} per stack exceeds {gen}'s {cap:g} {unit}: set hbm_generation to a "
        f"generation that builds such stacks{hint}",
    )


def _die_beyond_reticle(
    gpu: Mapping[str, Any], node: Mapping[str, Any], tech: str
) -> tuple[str, str] | None:
    """(field, problem) when a GPU preset's compute die does not fit one scanner field at its
    aspect ratio, else None. A preset describes a GPU that ships, so its die was exposed in one
    field; the cost evaluator's ``reticle_fits`` is the same test on searched dies."""
    try:
        area = float(gpu.get("die_area_mm2", 0.0))
        aspect = float(gpu.get("die_aspect_ratio", 1.0))
        w, h = float(node["reticle_width_mm"]), float(node["reticle_height_mm"])
    except (TypeError, ValueError, KeyError):
        return None  # the schema says what is wrong with the value
    if not (area > 0 and aspect >= 1):
        return None
    if reticle_fits(area, aspect, w, h) == 1.0:
        return None
    field_long, field_short = max(w, h), min(w, h)
    long_mm, short_mm = (float(e) for e in die_edges_mm(area, aspect))
    field = f"the {w:g} x {h:g} mm scanner field ({tech}'s reticle_width_mm x reticle_height_mm)"
    if area > field_long * field_short * (1 + 1e-9):
        return ("die_area_mm2", f"{area:g} mm2 is larger than {field}")
    lo, hi = area / field_short**2, field_long**2 / area  # short edge / long edge at the field
    return (
        "die_aspect_ratio",
        f"a {area:g} mm2 die at aspect {aspect:g} is {short_mm:.2f} x {long_mm:.2f} mm, "
        f"beyond {field}; it fits at aspect {math.ceil(lo * 1e3) / 1e3:g}"
        f"-{math.floor(hi * 1e3) / 1e3:g}",
    )


def _unknown(name: Any, choices: Any, what: str) -> str:
    return unknown_name("", name, choices, what=what).message


def technology_presets(dirs: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """Node name -> flat technology dict (values only)."""
    return catalog(dirs).technology


def technology_sources() -> dict[str, dict[str, Any]]:
    """Key -> raw entry (value, unit, source) of the built-in common constants."""
    return catalog().sources


def gpu_presets(dirs: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """GPU name -> design-parameter defaults (values only)."""
    return catalog(dirs).gpus


def model_presets(dirs: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """Model name -> architecture dict (values only)."""
    return catalog(dirs).models


def workload_defaults() -> dict[str, Any]:
    return catalog().workload


def _resolve_named(
    value: Any,
    *,
    path: str,
    presets: Mapping[str, Mapping[str, Any]],
    default: str,
    what: str,
    schema: Any = None,
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
    if name not in presets:  # names are matched without regard to case: H100-SXM is h100-sxm
        name = {str(n).lower(): n for n in presets}.get(str(name).lower(), name)
    if name not in presets:
        where = path if isinstance(value, str) else f"{path}.preset"
        typed = str(name).lower()
        # what was typed begins a name (h100 -> h100-sxm), else the closest spelling
        starts = sorted(n for n in presets if str(n).lower().startswith(typed))
        close = starts[:1] or get_close_matches(typed, [str(n).lower() for n in presets], n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ContextError(
            where,
            f"unknown {what} preset {str(name)!r} ({hint}valid choices: "
            f"{', '.join(sorted(presets))}); 'dse presets' and docs/presets.md list them and "
            "say how to add your own",
            choices=sorted(presets),
        )
    resolved = copy.deepcopy(dict(presets[name]))
    for key, v in overrides.items():
        if key == "name":
            continue
        if key not in resolved:
            raise unknown_name(f"{path}.{key}", key, resolved, what=f"{what} field")
        resolved[key] = v
    if schema is not None and overrides:
        _check_overrides(schema, resolved, overrides, path=path, what=what)
    resolved["name"] = name
    return resolved


def _check_overrides(
    schema: Any, values: Mapping[str, Any], overrides: Mapping[str, Any], *, path: str, what: str
) -> None:
    """A spec's overrides of a preset obey the preset kind's schema (types and ranges)."""
    for loc, message in check(schema, values, what=what):
        if loc and loc[0] in overrides:
            raise ContextError(".".join((path, *loc)), message)


def resolve_context(
    fixed: Mapping[str, Any], *, spec_dir: str | os.PathLike[str] | None = None
) -> dict[str, Any]:
    """Expand preset names into full values and fill every design default.

    Order of precedence (last wins): parameter defaults, the GPU preset, explicit ``fixed``
    values. Searched parameters are applied by the caller on top of the result. Presets are
    looked up in ``spec_dir``/presets, then ``$DSE_PRESETS``, then the built-ins.
    """
    cat = catalog(search_dirs(spec_dir))
    fixed = dict(fixed)
    out: dict[str, Any] = {}
    for name, p in PARAMS.items():
        if p.default is not None:
            out[name] = p.default
    gpu = _resolve_named(
        fixed.pop("gpu", None),
        path="gpu",
        presets=cat.gpus,
        default=DEFAULT_GPU,
        what="GPU",
        schema=cat.schemas["GPU"],
    )
    gpu_name = gpu.pop("name")
    gpu.pop("description", None)
    gpu.pop("technology", None)
    out.update({k: v for k, v in gpu.items() if k in PARAMS})
    out["gpu"] = gpu_name
    tech_default = cat.gpus[gpu_name].get("technology") or DEFAULT_TECHNOLOGY
    pinned = fixed.pop("technology", None)
    pinned_name = pinned.get("preset") if isinstance(pinned, Mapping) else pinned
    if pinned_name == AUTO_TECHNOLOGY:  # the node the GPU ships on
        pinned = {**pinned, "preset": tech_default} if isinstance(pinned, Mapping) else None
    elif pinned_name in cat.technology and pinned_name != tech_default:
        warnings.warn(
            f"GPU {gpu_name!r} ships on technology {tech_default!r} but the spec pins "
            f"{pinned_name!r}: evaluating it on {pinned_name!r} (drop `technology:` for the "
            "GPU as it ships)",
            NodeMismatchWarning,
            stacklevel=2,
        )
    out["technology"] = _resolve_named(
        pinned,
        path="technology",
        presets=cat.technology,
        default=tech_default,
        what="technology",
        schema=cat.schemas["technology"],
    )
    out["workload"] = resolve_workload(fixed.pop("workload", None), catalog_=cat)
    auto = pinned_name in (None, AUTO_TECHNOLOGY)
    _pool_nodes(out, pinned if isinstance(pinned, Mapping) else {}, auto=auto, cat=cat)
    for key, value in fixed.items():
        if key not in PARAMS:
            raise unknown_name(
                key, key, [*PARAMS, "gpu", "technology", "workload"], what="fixed field"
            )
        out[key] = value
    return out


def resolve_workload(value: Any, *, catalog_: Catalog | None = None) -> dict[str, Any]:
    """The default workload with the spec's ``workload`` fields, its model resolved."""
    cat = catalog_ or catalog()
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise ContextError("workload", f"expected a mapping, got {value!r}")
    defaults = cat.workload
    out = copy.deepcopy(dict(defaults))
    for key, v in value.items():
        if key not in defaults:
            raise unknown_name(f"workload.{key}", key, defaults, what="workload field")
        out[key] = v
    _check_overrides(WorkloadPreset, out, value, path="workload", what="workload")
    out["model"] = _resolve_named(
        out.get("model"),
        path="workload.model",
        presets=cat.models,
        default=str(defaults.get("model")),
        what="model",
        schema=ModelPreset,
    )
    for key in POOL_KEYS:  # heterogeneous pools: each pool's GPU preset, resolved like `gpu:`
        pool = out.get(key)
        if isinstance(pool, Mapping) and pool.get("gpu") is not None:
            out[key] = {**pool, "gpu": _pool_gpu(pool["gpu"], f"workload.{key}.gpu", cat)}
    return out


#: Workload fields that give disaggregated serving's pools their own GPU (objectives/perf/pools.py)
POOL_KEYS = ("prefill_pool", "decode_pool")


def _pool_nodes(
    out: dict[str, Any], spec_tech: Mapping[str, Any], *, auto: bool, cat: Catalog
) -> None:
    """Each pool's technology node: its own ``technology`` when given; with the spec's node
    ``auto``, the node its GPU ships on, with the spec's technology overrides
    (``spec_tech``); else (a pinned node) the design's, as for the design's GPU."""
    tech_name = out["technology"]["name"]
    for key in POOL_KEYS:
        pool = out["workload"].get(key)
        if not isinstance(pool, Mapping):
            continue
        given = pool.get("technology")
        gpu = pool.get("gpu")
        if given is None and (not auto or not isinstance(gpu, Mapping)):
            continue
        if given is None:
            node = str(gpu.get("technology") or DEFAULT_TECHNOLOGY)  # type: ignore[union-attr]
            if node == tech_name:
                continue
            extra = {k: v for k, v in spec_tech.items() if k != "preset"}
            given = {**extra, "preset": node}
        if isinstance(given, Mapping) and "preset" not in given and "name" in given:
            given = {"preset": given["name"], **{k: v for k, v in given.items() if k != "name"}}
        out["workload"][key] = {**pool, "technology": _resolve_named(
            given, path=f"workload.{key}.technology", presets=cat.technology,
            default=tech_name, what="technology", schema=cat.schemas["technology"],
        )}  # fmt: skip


def _pool_gpu(value: Any, path: str, cat: Catalog) -> dict[str, Any]:
    """A pool's GPU preset as its fields (``name`` kept; a resolved one resolves to itself)."""
    if isinstance(value, Mapping) and "preset" not in value and "name" in value:
        value = {"preset": value["name"], **{k: v for k, v in value.items() if k != "name"}}
    return _resolve_named(
        value, path=path, presets=cat.gpus, default=DEFAULT_GPU, what="GPU",
        schema=cat.schemas["GPU"],
    )  # fmt: skip
