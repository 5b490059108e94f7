"""The design batch as the perf model works on it: every value broadcast and flattened to 1-D.

Design values, and technology constants or workload fields that vary per design (a robust
study's sampled assumptions), are broadcast to one batch shape and flattened; the results take
that shape again (``own_arrays``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from objectives.errors import ContextError
from objectives.perf.serving import Serving

_NUMERIC = (
    "die_area_mm2",
    "die_aspect_ratio",
    "dies_per_gpu",
    "hbm_stacks_per_die",
    "hbm_tbps_per_stack",
    "hbm_gb_per_stack",
    "links_per_gpu",
    "optics_per_link",
    "lane_gbps",
    "clock_ghz",
    "cluster_size",
)


#: Package parameters a design built by hand may omit (their PARAMS defaults then apply).
_NUMERIC_OPTIONAL = (
    "base_dies_per_gpu",
    "base_die_area_mm2",
    "d2d_tbps",
    "tensor_density_factor",
    "fp4_flops_multiplier",
    "compute_power_factor",
    "scaleup_domain_gpus",
    "power_limit_w",
    "memory_pool_gb_per_gpu",
    "memory_pool_tbps_per_gpu",
)


_STRINGS = (
    "link_type",
    "cooling",
    "scaleup_fabric",
    "hbm_generation",
    "packaging",
    "memory_pool",
)


_STRING_DEFAULTS = {
    "cooling": "air",
    "link_type": "electrical",
    "scaleup_fabric": "auto",
    "hbm_generation": "auto",
    "packaging": "cowos-s",
    "memory_pool": "none",
}


#: Technology lists that define the candidate axis, never a per-design value.
_GRIDS = ("tp_choices", "pp_choices", "batch_choices")


#: Numeric workload fields that may vary per design (arrays broadcast against the batch).
_WORKLOAD_NUMERIC = (
    "input_tokens",
    "output_tokens",
    "batch",
    "max_batch",
    "input_tokens_cv",
    "output_tokens_cv",
    "arrival_rate_per_s",
    "ttft_slo_s",
    "tpot_slo_s",
    "zero_stage",
    "pp_interleave",
    "cp",
    "micro_batch",
    "ep",
)


@dataclass
class Flat:
    """The design batch flattened to 1-D, with the constants that vary per design."""

    values: dict[str, np.ndarray]  # design values, shape (n,)
    technology: dict[str, Any]  # the table; per-design constants replaced by (n,) arrays
    workload: dict[str, Any]  # likewise for the numeric workload fields
    tech_keys: list[str]  # technology constants that vary per design
    wl_keys: list[str]  # workload fields that vary per design
    shape: tuple[int, ...]  # the batch shape the results take
    gpu: str | None = None  # the GPU preset's name, for messages

    def design(self) -> dict[str, Any]:
        return {
            **self.values,
            "technology": self.technology,
            "workload": self.workload,
            **({"gpu": self.gpu} if self.gpu is not None else {}),
        }

    def rows(self, index: Any) -> dict[str, Any]:
        """The design restricted to some rows, per-design values shaped (1, m) for the search."""
        t = dict(self.technology)
        for k in self.tech_keys:
            t[k] = t[k][index][None, :]
        w = dict(self.workload)
        for k in self.wl_keys:
            w[k] = w[k][index][None, :]
        return {"technology": t, "workload": w}


#: Plain values of a technology table (most of its hundreds of entries), told apart by type
#: alone before anything slower is asked (flatten reads the whole table on every call).
_PLAIN = frozenset((float, int, bool, str))


def _per_design(v: Any) -> bool:
    if type(v) in _PLAIN or isinstance(v, float | int | str | Mapping):
        return False
    return np.ndim(v) > 0


def flatten(design: Mapping[str, Any]) -> Flat:
    """Broadcast the design's batch values (and array-valued technology and workload constants)
    to one shape and flatten them to 1-D."""
    vals: dict[str, np.ndarray] = {}
    for k in _NUMERIC:
        if k not in design:
            raise ContextError(k, "missing from the design (resolve the context first)")
        try:
            vals[k] = np.asarray(design[k], dtype=float)
        except (TypeError, ValueError):
            raise ContextError(k, f"expected a number, got {design[k]!r}") from None
    for k in _NUMERIC_OPTIONAL:
        if k in design:
            try:
                vals[k] = np.asarray(design[k], dtype=float)
            except (TypeError, ValueError):
                raise ContextError(k, f"expected a number, got {design[k]!r}") from None
    for k in _STRINGS:
        vals[k] = np.asarray(design.get(k, _STRING_DEFAULTS[k]))
    table, wl = design["technology"], design["workload"]
    tech_arr: dict[str, np.ndarray] = {}
    for k, v in table.items():
        if type(v) in _PLAIN or k in _GRIDS or not _per_design(v):
            continue
        try:
            tech_arr[k] = np.asarray(v, dtype=float)
        except (TypeError, ValueError):
            raise ContextError(f"technology.{k}", f"expected a number, got {v!r}") from None
    wl_arr: dict[str, np.ndarray] = {}
    for k in _WORKLOAD_NUMERIC:
        v = wl.get(k)
        if v is not None and _per_design(v):
            try:
                wl_arr[k] = np.asarray(v, dtype=float)
            except (TypeError, ValueError):
                msg = f"expected a positive number, got {v!r}"
                raise ContextError(f"workload.{k}", msg) from None
    every = [*vals.values(), *tech_arr.values(), *wl_arr.values()]
    try:
        shape = np.broadcast_shapes(*(v.shape for v in every))
    except ValueError:
        shapes = {k: v.shape for k, v in {**vals, **tech_arr, **wl_arr}.items() if v.ndim}
        raise ContextError("design", f"batch shapes do not broadcast: {shapes}") from None

    def flat(v: np.ndarray) -> np.ndarray:
        return np.broadcast_to(v, shape).reshape(-1)

    return Flat(
        values={k: flat(v) for k, v in vals.items()},
        technology={**table, **{k: flat(v) for k, v in tech_arr.items()}},
        workload={**wl, **{k: flat(v) for k, v in wl_arr.items()}},
        tech_keys=list(tech_arr),
        wl_keys=list(wl_arr),
        shape=shape,
        gpu=design.get("gpu") if isinstance(design.get("gpu"), str) else None,
    )


def serving_rows(s: Serving, slo: tuple[Any, Any], index: Any) -> tuple[Serving, tuple[Any, Any]]:
    def row(x: Any) -> Any:
        return x[index][None, :] if isinstance(x, np.ndarray) and x.ndim else x

    s_rows = replace(
        s,
        input_tokens=row(s.input_tokens),
        output_tokens=row(s.output_tokens),
        max_batch=row(s.max_batch),
        input_tokens_cv=row(s.input_tokens_cv),
        output_tokens_cv=row(s.output_tokens_cv),
        arrival_rate_per_s=row(s.arrival_rate_per_s),
    )
    return s_rows, (row(slo[0]), row(slo[1]))


def own_arrays(out: Mapping[str, Any], n: int) -> dict[str, np.ndarray]:
    """Every metric as its own float array of the n designs (``broadcast``, without copying
    the arrays this evaluation made and nothing else holds)."""
    res: dict[str, np.ndarray] = {}
    seen: set[int] = set()
    for key, v in out.items():
        arr = np.asarray(v, dtype=float)
        fresh = arr.shape == (n,) and arr.flags.owndata and arr.flags.writeable
        res[key] = arr if fresh and id(arr) not in seen else np.array(np.broadcast_to(arr, (n,)))
        seen.add(id(arr))
    return res
