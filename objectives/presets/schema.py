"""Schemas of the preset kinds (technology node, GPU, model, workload) and their checks.

A preset file is data a user may write, so every field is checked when it is read: unknown keys
are errors with a did-you-mean, values have the right type and a physical range (counts and
prices non-negative, fractions in [0, 1], densities positive, everything finite), and a
technology node is complete. The same schemas check a spec's overrides
(``technology: {preset: n4, defect_density_per_cm2: -1}`` is refused). Problems in a file are
reported as ``FILE:LINE: preset.field: problem``; in a spec, as the spec field's path.

Design parameters (the GPU preset fields) take their range from :data:`PARAM_TYPES`, the one
home of each parameter's physical range. Technology fields are typed by the unit convention of
their names (``_fraction``/``_efficiency`` in [0, 1]; prices, FIT rates, energies and times
>= 0; everything else > 0), with the few string choices listed in :data:`TECHNOLOGY_CHOICES`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    model_validator,
)

from objectives.errors import ContextError
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

ENTRY_KEYS = ("value", "unit", "source")


@dataclass(frozen=True)
class PresetProblem:
    """One problem in a preset file."""

    file: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        field = f" {self.path}:" if self.path else ""
        return f"{where}:{field} {self.message}"


class PresetError(ContextError):
    """Problems in preset files, each located by file and line (``problems``)."""

    def __init__(self, problems: list[PresetProblem]) -> None:
        first = problems[0]
        super().__init__(first.path, first.message)
        self.problems = problems
        self.file = first.file
        self.line = first.line

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)


def _strict(kind: type, **bounds: Any) -> Any:
    return Annotated[kind, Field(strict=True, allow_inf_nan=False, **bounds)]


def _whole(value: Any) -> Any:
    """Counts: integers, or floats with no fraction (331.0); never booleans or strings."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a whole number, got {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"expected a whole number, got {value!r}")
        return int(value)
    return value


def _int(**bounds: Any) -> Any:
    return Annotated[int, BeforeValidator(_whole), Field(**bounds)]


Positive = _strict(float, gt=0)
NonNegative = _strict(float, ge=0)
Fraction = _strict(float, ge=0, le=1)

PARAM_TYPES: dict[str, Any] = {
    "die_area_mm2": Positive,
    "die_aspect_ratio": _strict(float, ge=1),
    "dies_per_gpu": _int(ge=1),
    "hbm_stacks_per_die": _int(ge=0),
    "hbm_tbps_per_stack": NonNegative,
    "hbm_gb_per_stack": NonNegative,
    "hbm_generation": Literal[HBM_GENERATIONS],
    "packaging": Literal[PACKAGINGS],
    "base_dies_per_gpu": _int(ge=0),
    "base_die_area_mm2": NonNegative,
    "d2d_tbps": NonNegative,
    "tensor_density_factor": Positive,
    "fp4_flops_multiplier": NonNegative,
    "compute_power_factor": Positive,
    "scaleup_domain_gpus": _int(ge=0),
    "links_per_gpu": _int(ge=0),
    "optics_per_link": _int(ge=1),
    "lane_gbps": Positive,
    "link_type": Literal[LINK_TYPES],
    "clock_ghz": Positive,
    "cooling": Literal[COOLING],
    "power_limit_w": NonNegative,
    "cluster_size": _int(ge=1),
    "disaggregated": bool | Literal[0, 1],
    "prefill_gpus": _int(ge=0),
    "spare_fraction": NonNegative,
    "test_insertions": NonNegative,
    "host_usd_per_gpu": NonNegative,
    "spare_silicon_fraction": Fraction,
    "memory_pool": Literal[MEMORY_POOLS],
    "memory_pool_gb_per_gpu": NonNegative,
    "memory_pool_tbps_per_gpu": NonNegative,
    # objectives.fabric.topology.CHOICES (not imported: fabric imports the presets)
    "scaleup_fabric": Literal["auto", "switched", "packet", "ocs", "direct", "rack", "mesh"],
    "vendor": Literal[VENDORS],
    "price_basis": Literal[PRICE_BASES],
}
"""Physical range of each design parameter a GPU preset sets (a parameter not listed is
accepted as any value, so new parameters work before their range is written here)."""

TECHNOLOGY_CHOICES: dict[str, tuple[str, ...]] = {
    "yield_model": ("poisson", "murphy", "seeds", "negative_binomial"),
    "hbm_generation": HBM_GENERATIONS,
    "optical_fabric": ("circuit", "packet"),
    "fleet_kind": ("dedicated", "research", "cloud"),
}

_FRACTION_WORDS = ("fraction", "efficiency", "bond_yield", "activity_floor", "gross_margin")
_NON_NEGATIVE_WORDS = (
    "usd",
    "cost_of_capital",
    "fit",
    "defect_density",
    "spare",
    "reserve",
    "overhead",
    "latency",
    "pj_per_bit",
    "_w_per_",
    "power_per",
    "static",
)


def technology_field_type(key: str, value: Any) -> Any:
    """The type and range of a technology field, from its name and its built-in value."""
    if key in TECHNOLOGY_CHOICES:
        return Literal[TECHNOLOGY_CHOICES[key]]
    if isinstance(value, bool):
        return _strict(bool)
    if isinstance(value, str):
        return str
    if isinstance(value, list):
        if all(isinstance(v, int) for v in value):
            return Annotated[list[_int(ge=1)], Field(min_length=1)]  # type: ignore[misc]
        return Annotated[list[Positive], Field(min_length=1)]  # type: ignore[valid-type]
    if value is None:
        return Any
    if "markup" in key:  # price / cost: below 1 would sell below cost
        return _strict(float, ge=1)
    if any(w in key for w in _FRACTION_WORDS):
        return Fraction
    if any(w in key for w in _NON_NEGATIVE_WORDS) or key.endswith("_s"):
        return NonNegative
    return Positive


class _Forbid(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelPreset(_Forbid):
    """A transformer architecture (models.yaml)."""

    description: str | None = None
    params_b: _strict(float, gt=0)  # type: ignore[valid-type]
    layers: _int(ge=1)  # type: ignore[valid-type]
    hidden: _int(ge=1)  # type: ignore[valid-type]
    heads: _int(ge=1)  # type: ignore[valid-type]
    kv_heads: _int(ge=1)  # type: ignore[valid-type]
    ffn: _int(ge=1)  # type: ignore[valid-type]
    vocab: _int(ge=1)  # type: ignore[valid-type]
    ffn_matrices: Literal[2, 3]
    experts: _int(ge=1)  # type: ignore[valid-type]
    experts_per_token: _int(ge=1)  # type: ignore[valid-type]
    qk_head_dim: _int(ge=1) | None = None  # type: ignore[valid-type]
    v_head_dim: _int(ge=1) | None = None  # type: ignore[valid-type]
    shared_experts: _int(ge=0) | None = None  # type: ignore[valid-type]
    dense_layers: _int(ge=0) | None = None  # type: ignore[valid-type]
    dense_ffn: _int(ge=1) | None = None  # type: ignore[valid-type]
    kv_lora_rank: _int(ge=1) | None = None  # type: ignore[valid-type]
    q_lora_rank: _int(ge=1) | None = None  # type: ignore[valid-type]
    qk_rope_head_dim: _int(ge=1) | None = None  # type: ignore[valid-type]
    active_params_b: _strict(float, gt=0) | None = None  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _consistent(self) -> ModelPreset:
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads ({self.kv_heads}) must divide heads ({self.heads})")
        if self.experts_per_token > self.experts:
            raise ValueError(
                f"experts_per_token ({self.experts_per_token}) must be <= experts ({self.experts})"
            )
        return self


class PoolSpec(_Forbid):
    """One pool of heterogeneous disaggregated serving (``workload.prefill_pool`` /
    ``decode_pool``, objectives/perf/pools.py): its GPU, GPU count and parallelism."""

    gpu: str | dict[str, Any] | None = None  # a GPU preset (or its fields); None: the design's
    technology: str | dict[str, Any] | None = None  # None: the node the pool's GPU ships on
    gpus: _int(ge=1) | Literal["auto"] = "auto"  # type: ignore[valid-type]
    tp: _int(ge=1) | Literal["auto"] = "auto"  # type: ignore[valid-type]
    pp: _int(ge=1) | Literal["auto"] = "auto"  # type: ignore[valid-type]
    ep: _int(ge=1) | Literal["auto"] = "auto"  # type: ignore[valid-type]
    attention_dp: bool | Literal["auto"] = "auto"


class WorkloadPreset(_Forbid):
    """The serving/training workload (workload.yaml and a spec's ``workload``)."""

    model: str | dict[str, Any]
    scheduler: Literal["continuous", "static"]
    kv_precision: Literal["auto", "bf16", "fp8", "fp4"]
    weight_precision: Literal["auto", "bf16", "fp8", "fp4"] = "auto"
    quantized_weights: Literal["all", "experts"] = "all"
    disaggregated: bool | Literal[0, 1]
    prefill_pool: PoolSpec | None = None
    decode_pool: PoolSpec | None = None
    max_batch: _int(ge=1) | None = None  # type: ignore[valid-type]
    arrivals: Literal["saturated", "poisson"] = "saturated"
    dispatch: Literal["random", "shortest_queue"] = "random"
    prefill_batching: Literal["mixed", "separate"] = "mixed"
    slo_percentile: _strict(float, gt=0, lt=100) = 99.0  # type: ignore[valid-type]
    input_tokens_cv: NonNegative = 0.0  # type: ignore[valid-type]
    output_tokens_cv: NonNegative = 0.0  # type: ignore[valid-type]
    arrival_rate_per_s: Positive | None = None  # type: ignore[valid-type]
    latency_statistic: Literal["percentile", "mean"] = "percentile"
    phase: Literal["serve", "prefill", "decode", "train"]
    precision: Literal["bf16", "fp8", "fp4"]
    input_tokens: _int(ge=1)  # type: ignore[valid-type]
    output_tokens: _int(ge=1)  # type: ignore[valid-type]
    batch: _int(ge=1) | Literal["auto"]  # type: ignore[valid-type]
    ttft_slo_s: Positive | None = None  # type: ignore[valid-type]
    tpot_slo_s: Positive | None = None  # type: ignore[valid-type]
    tp: _int(ge=1) | Literal["auto"]  # type: ignore[valid-type]
    pp: _int(ge=1) | Literal["auto"]  # type: ignore[valid-type]
    ep: _int(ge=1) | Literal["auto"] = "auto"  # type: ignore[valid-type]
    attention_dp: bool | Literal["auto"] = "auto"
    mtp_tokens: _int(ge=0) = 0  # type: ignore[valid-type]
    mtp_acceptance: Fraction = 0.85  # type: ignore[valid-type]
    cuda_graphs: bool = True
    recompute: Literal["none", "selective", "full", "auto"]
    zero_stage: _int(ge=0, le=3)  # type: ignore[valid-type]
    pp_interleave: _int(ge=1)  # type: ignore[valid-type]
    cp: _int(ge=1) = 1  # type: ignore[valid-type]
    micro_batch: _int(ge=1) = 1  # type: ignore[valid-type]
    recompute_layers: _int(ge=0) | None = None  # type: ignore[valid-type]
    tp_comm_overlap: bool = False
    lora_rank: _int(ge=0) = 0  # type: ignore[valid-type]
    software: Literal["megatron", "pytorch-fsdp"] = "megatron"


def gpu_schema(required: set[str]) -> type[BaseModel]:
    """The GPU preset schema: every design parameter, ``required`` ones without a default."""
    fields: dict[str, Any] = {
        "description": (str | None, None),
        "technology": (str | None, None),
    }
    for name in PARAMS:
        kind = PARAM_TYPES.get(name, Any)
        fields[name] = (kind, ...) if name in required else (kind | None, None)
    return create_model("GpuPreset", __config__=ConfigDict(extra="forbid"), **fields)


def technology_schema(
    builtin: Mapping[str, Any],
    required: set[str] = frozenset(),  # type: ignore[assignment]
) -> type[BaseModel]:
    """The technology node schema: every built-in key, typed by :func:`technology_field_type`."""
    fields: dict[str, Any] = {}
    for key, value in builtin.items():
        kind = technology_field_type(key, value)
        fields[key] = (kind, ...) if key in required else (kind | None, None)
    return create_model("TechnologyPreset", __config__=ConfigDict(extra="forbid"), **fields)


def _plain(value: Any) -> bool:
    """Values the schemas check; arrays (robust samples) are checked by the models."""
    return not isinstance(value, np.ndarray | np.generic)


def _message(err: Mapping[str, Any], known: list[str], what: str) -> str:
    if err["type"] == "extra_forbidden":
        name = str(err["loc"][-1])
        close = get_close_matches(name, known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return f"unknown {what} field {name!r} ({hint}valid fields: {', '.join(sorted(known))})"
    if err["type"] == "missing":
        return "missing (every preset of this kind sets it)"
    if err["type"] == "literal_error":
        expected = str(err.get("ctx", {}).get("expected", ""))
        choices = [c.strip("'") for c in re.split(r", | or ", expected) if c]
        close = get_close_matches(str(err["input"]), choices, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return (
            f"{err['input']!r} is not a valid choice ({hint}valid choices: {', '.join(choices)})"
        )
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] in ("value_error", "assertion_error"):
        return msg
    return f"{msg[:1].lower()}{msg[1:]}, got {err['input']!r}"


def _nested(schema: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model of a nested mapping field (``PoolSpec``) when ``loc`` points inside one."""
    if len(loc) < 2 or not isinstance(loc[1], str) or loc[0] not in schema.model_fields:
        return None
    ann = schema.model_fields[loc[0]].annotation
    for kind in (ann, *getattr(ann, "__args__", ())):
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            return kind
    return None


def check(
    schema: type[BaseModel], data: Mapping[str, Any], *, what: str
) -> list[tuple[tuple[str, ...], str]]:
    """Validate ``data``; return ``(field path, problem)`` pairs (empty when valid)."""
    plain = {k: v for k, v in data.items() if _plain(v)}
    skipped = {str(k) for k in data if k not in plain}
    try:
        schema.model_validate(plain)
    except ValidationError as exc:
        known = list(schema.model_fields)
        out = []
        missing: list[str] = []
        for err in exc.errors():
            # A union reports each branch; keep the field, not the branch name.
            loc = tuple(str(p) for p in err["loc"][:1])
            if loc and loc[0] in skipped:
                continue
            if err["type"] == "missing" and loc:
                missing.append(loc[0])
            inner = _nested(schema, err["loc"])
            if inner is not None:  # a field of a nested mapping (workload.prefill_pool.tp)
                loc = (*loc, str(err["loc"][1]))
                out.append((loc, _message(err, list(inner.model_fields), "pool")))
                continue
            out.append((loc, _message(err, known, what)))
        if len(missing) > 1:  # a preset written from scratch: one line, not one per field
            out = [p for p in out if not (p[0] and p[0][0] in missing)]
            # last: a problem at the preset's own place hides the ones below it
            fields = ", ".join(dict.fromkeys(missing))
            out.append(((), f"missing {len(missing)} fields every {what} preset sets: {fields}"))
        return list(dict.fromkeys(out))
    return []


def unwrap(entry: Any) -> tuple[Any, str | None]:
    """``{value: V, unit: U, source: S}`` -> (V, problem or None); anything else unchanged."""
    if isinstance(entry, Mapping) and ("value" in entry or {"unit", "source"} & set(entry)):
        bad = [k for k in entry if k not in ENTRY_KEYS]
        if bad:
            close = get_close_matches(str(bad[0]), ENTRY_KEYS, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            return None, (
                f"unknown entry key {bad[0]!r} ({hint}an entry is "
                "{value: V, unit: U, source: '...'})"
            )
        if "value" not in entry:
            return None, "entry has no 'value' (an entry is {value: V, unit: U, source: '...'})"
        return entry["value"], None
    return entry, None
