"""The evaluator contract as plain attributes (no dependency on the engine; dse.plugin reads
them by duck typing, docs/evaluators.md).

Each built-in evaluator ``f(design, **needed) -> dict[str, numpy.ndarray]`` carries its own
``metrics``, ``vectorized`` and ``needs`` (the evaluators whose metrics it consumes: cost needs
perf and availability, availability needs perf; the engine evaluates them first, once per
design, and passes their metrics as keyword arguments named after them). What the three share,
how the spec's ``fixed`` context is read, is declared once on :data:`DOMAIN`:

- ``params``: the design parameters it understands (for did-you-mean on spec typos);
- ``resolve``: expands the spec's ``fixed`` context (presets) before evaluation;
- ``check_value``: ``(name, value) -> str | None``, why a value is physically impossible for a
  design parameter (the engine checks fixed values and searched ranges with it);
- ``context_path``: where a ``fixed`` path lands in the resolved context (GPU preset fields are
  spread to the top level);
- ``as_mapping``: the mapping form of a preset given by name, so a dotted override can refine it;
- ``assumptions``: the constants ``dse sensitivity`` swings +/-20 % when a spec declares no
  distribution (the technology node's numeric constants);
- ``fixed_schema``: the JSON Schema of the ``fixed`` keys, for ``dse schema``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any, TypeVar

import numpy as np

from objectives.errors import ContextError
from objectives.fixed_schema import fixed_json_schema
from objectives.param_check import check_param_value
from objectives.params import PARAMS
from objectives.presets import resolve_context

F = TypeVar("F", bound=Callable[..., Any])


def context_path(path: tuple[str, ...]) -> tuple[str, ...]:
    """``gpu.<field>`` lands at the top level of the resolved context (``resolve_context``)."""
    return path[1:] if path[0] == "gpu" and len(path) > 1 else path


def as_mapping(value: Any) -> dict[str, Any]:
    """A preset given by name (``technology: n4``) as ``{preset: n4}``."""
    if isinstance(value, str):
        return {"preset": value}
    raise ContextError("", f"{value!r} is not a preset name or a mapping")


def assumptions(context: Mapping[str, Any]) -> dict[str, float]:
    """The resolved technology node's numeric constants, by dotted path: what ``dse
    sensitivity`` swings when a spec declares no distribution (lists and names skipped)."""
    table = context.get("technology")
    if not isinstance(table, Mapping):
        return {}
    return {
        f"technology.{k}": v
        for k, v in table.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and not _definition(k)
    }


#: Technology constants that are definitions, not estimates (a unit conversion, a standard's
#: or a machine's fixed dimension, a reference point of a fit, a scheduler's cap): a default
#: sensitivity never swings them. A spec may still declare a distribution on any of them.
NOT_UNCERTAIN = frozenset(
    {
        "hbm_bytes_per_gb",  # GiB: a unit conversion
        "wafer_diameter_mm",
        "reticle_width_mm",
        "reticle_height_mm",
        "wdm_wavelengths_per_fibre",
        "ocs_ports_per_fibre",
        "spare_lanes_per_link",
        "packet_switch_max_ports",
        "cb_max_num_tokens",
        "cb_max_batch",
        "cooling_reference_die_mm2",
        "reliability_reference_die_area_mm2",
    }
)
_DEFINITION_SUFFIXES = ("_interface_bits",)  # JEDEC interface widths


def _definition(key: str) -> bool:
    return key in NOT_UNCERTAIN or key.endswith(_DEFINITION_SUFFIXES)


#: The physical checks every spec of the built-in domain holds unless it opts out
#: (``default_constraints: false`` or ``{drop: [...]}``, docs/spec.md): a design that breaks one
#: cannot be built or cannot serve, so a spec that forgot to list it would rank it anyway.
DEFAULT_CONSTRAINTS = (
    "cost.reticle_fits",  # the die fits one scanner field
    "cost.interposer_fits",  # dies and HBM stacks fit the largest interposer
    "cost.hbm_fits_generation",  # HBM stacks within their generation's capacity
    "perf.topology_ok",  # the scale-up fabric can form the tp x pp group
    "perf.model_fits",  # weights, KV cache and activations fit in HBM
    "perf.slo_met",  # the latency SLOs hold
)

#: The built-in domain (GPU clusters), declared once: every built-in evaluator points at it and
#: the engine reads its hooks from here (dse.plugin.Domain), once for the three.
DOMAIN = SimpleNamespace(
    name="objectives",
    params=frozenset(PARAMS),
    resolve=resolve_context,
    check_value=check_param_value,
    context_path=context_path,
    as_mapping=as_mapping,
    assumptions=assumptions,
    fixed_schema=fixed_json_schema,
    default_constraints=DEFAULT_CONSTRAINTS,
)


def builtin_evaluator(
    *, metrics: Mapping[str, tuple[str, str]], needs: tuple[str, ...] = ()
) -> Callable[[F], F]:
    """Attach the contract attributes of a built-in evaluator: its metrics, the evaluators it
    needs, and the domain it belongs to."""

    def wrap(fn: F) -> F:
        fn.metrics = dict(metrics)  # type: ignore[attr-defined]
        fn.vectorized = True  # type: ignore[attr-defined]
        fn.needs = needs  # type: ignore[attr-defined]
        fn.domain = DOMAIN  # type: ignore[attr-defined]
        return fn

    return wrap


def value(design: Mapping[str, Any], name: str) -> np.ndarray:
    """A numeric design value as a float array (0-d for scalars)."""
    try:
        return np.asarray(design[name], dtype=float)
    except KeyError:
        raise ContextError(name, "missing from the design (resolve the context first)") from None
    except (TypeError, ValueError):
        raise ContextError(name, f"expected a number, got {design[name]!r}") from None


def select(condlist: list[Any], choicelist: list[Any], default: Any = 0) -> np.ndarray:
    """``np.select``, the choice looked up where every condition is one value (one fabric, link
    type or vendor for the whole batch, and every one-design trial): the same values, shape
    and dtype, without a masked copy of every choice over the batch (~25 us a call)."""
    if not condlist or any(np.ndim(c) for c in condlist):
        return np.select(condlist, choicelist, default)
    plain = (int, float, complex)  # kept as Python numbers for the dtype, as np.select does
    choices = [c if type(c) in plain else np.asarray(c) for c in choicelist]
    other = default if type(default) in plain else np.asarray(default)
    dtype = np.result_type(*choices, other)
    shape = np.broadcast_shapes(*(np.shape(c) for c in (*choices, other)))
    pick = next((c for cond, c in zip(condlist, choices, strict=True) if cond), other)
    return np.array(np.broadcast_to(np.asarray(pick, dtype=dtype), shape))


def one_value(x: Any) -> Any:
    """``x`` as one element when it is a 1-D array broadcast from one value (stride 0: the
    perf model's flattened constants), else as it is: what reads only such values is then
    computed once, not once per design, and broadcasts the same."""
    if isinstance(x, np.ndarray) and x.ndim == 1 and x.size > 1 and x.strides == (0,):
        return x[:1]
    return x


def float_values(design: Mapping[str, Any]) -> Mapping[str, Any]:
    """The design with its integer arrays (a sweep's int parameters) as the float arrays
    ``value`` makes of them, converted once per evaluation, not at every ``value`` that reads
    them (a dozen per batch in cost and availability)."""
    ints = [k for k, v in design.items() if isinstance(v, np.ndarray) and v.dtype.kind in "iu"]
    if not ints:
        return design
    return {**design, **{k: np.asarray(design[k], dtype=float) for k in ints}}


def tech(design: Mapping[str, Any], name: str) -> Any:
    """A technology constant; floats come back as float arrays, strings unchanged."""
    table = design["technology"]
    try:
        v = table[name]
    except KeyError:
        raise ContextError(f"technology.{name}", "missing from the technology preset") from None
    return v if isinstance(v, str) else np.asarray(v, dtype=float)


def broadcast(out: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Broadcast every metric to the common shape of the batch, as writable float arrays.

    Arrays already of that shape are returned as they are (no copy: this runs on every
    evaluation of a million-design sweep); smaller ones are expanded into new arrays.
    """
    arrays = [np.asarray(v, dtype=float) for v in out.values()]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return {
        k: a if a.shape == shape else np.array(np.broadcast_to(a, shape))
        for k, a in zip(out, arrays, strict=True)
    }
