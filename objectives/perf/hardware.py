"""Per-GPU hardware figures: compute, HBM, scale-up network, shoreline, DVFS and package power.

Everything here depends only on the design parameters and the technology preset (not on the
workload), so it is computed once per design, before the parallelism search.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import one_value, select, tech, value
from objectives._groups import DEDUP_MIN, dedup
from objectives.choices import check_in
from objectives.errors import ContextError
from objectives.package import Package, optional
from objectives.params import COOLING, LINK_TYPES

_BISECT_STEPS = 40  # bisection halvings for the throttled clock: 2^-40 of the range
#: Technology constants of the V-f curve and power density (what the throttled clock reads).
_DVFS = (
    "vdd_slope_v_per_ghz",
    "vdd_ref_v",
    "vdd_ref_clock_ghz",
    "vdd_min_v",
    "compute_dynamic_w_per_mm2",
    "compute_static_w_per_mm2",
)


def _choose(design: Mapping[str, Any], name: str, choices: tuple[str, ...]) -> np.ndarray:
    """A string design value as an array, checked against its choices (one value broadcast
    over the batch as a (1,) array: compared once, not once per design)."""
    raw = np.asarray(design.get(name, choices[0]))
    if raw.ndim == 1 and raw.size > 1 and raw.strides == (0,):
        raw = raw[:1]
    check_in(raw, choices, name, name.replace("_", " "))
    return raw


def _pick(kind: np.ndarray, table: Mapping[str, np.ndarray]) -> np.ndarray:
    """Per-design value of a constant keyed by a string choice (vectorized select)."""
    names = list(table)
    return select([kind == n for n in names], [table[n] for n in names])


def compute_w_per_mm2(d: Mapping[str, Any], clock_ghz: np.ndarray, activity: Any = 1.0) -> Any:
    """Dynamic (C V^2 f, scaled by activity) plus leakage (~V) power per mm^2 of logic."""
    return _density(_dvfs(d), clock_ghz, activity)


def _dvfs(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: tech(d, k) for k in _DVFS}


def _voltage(c: Mapping[str, Any], clock_ghz: Any) -> Any:
    v = c["vdd_ref_v"] + c["vdd_slope_v_per_ghz"] * (clock_ghz - c["vdd_ref_clock_ghz"])
    return np.maximum(v, c["vdd_min_v"])


def _density(c: Mapping[str, Any], clock_ghz: Any, activity: Any = 1.0) -> Any:
    v_rel = _voltage(c, clock_ghz) / c["vdd_ref_v"]
    f_rel = clock_ghz / c["vdd_ref_clock_ghz"]
    dyn = c["compute_dynamic_w_per_mm2"] * v_rel**2 * f_rel * activity
    return dyn + c["compute_static_w_per_mm2"] * v_rel


def throttled_clock_ghz(d: Mapping[str, Any], clock: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """Highest clock <= the requested one whose full-load power density meets the cooling limit.

    Power density rises monotonically with clock, so a fixed number of vectorized bisection steps
    finds it (DVFS: the GPU lowers V and f until the cooler keeps up).
    """
    c = _dvfs(d)  # the constants, read once for all the steps
    ok = _density(c, clock) <= limit
    if np.all(ok):  # every clock cools as it is (one trial's, mostly): no bisection needed
        return np.where(ok, clock, 0.0)
    lo = np.zeros_like(clock)
    hi = clock.copy()
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (lo + hi)
        fits = _density(c, mid) <= limit
        lo = np.where(fits, mid, lo)
        hi = np.where(fits, hi, mid)
    return np.where(ok, clock, lo)


def _throttled_once(d: Mapping[str, Any], clock: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """``throttled_clock_ghz`` computed once per distinct (clock, limit, V-f constants) row."""
    if clock.ndim != 1 or clock.size < DEDUP_MIN:
        return throttled_clock_ghz(d, clock, limit)
    n = clock.size
    table = d["technology"]
    varying = [k for k in _DVFS if np.ndim(table[k]) > 0]
    cols = [clock, np.broadcast_to(limit, (n,))]
    cols += [np.broadcast_to(np.asarray(table[k], dtype=float), (n,)) for k in varying]
    if all(c[0] == c.min() == c.max() for c in cols):  # one row for all (NaN takes the else)
        idx: Any = np.zeros(1, dtype=np.intp)
        inv: Any = np.zeros(n, dtype=np.intp)
    else:
        g = dedup(cols)
        if g is None:
            return throttled_clock_ghz(d, clock, limit)
        idx, inv = g.first, g.inv
    sub = {"technology": {**table, **{k: c[idx] for k, c in zip(varying, cols[2:], strict=True)}}}
    return throttled_clock_ghz(sub, clock[idx], cols[1][idx])[inv]


def cooling_limit_w_per_mm2(
    d: Mapping[str, Any],
    cooling: np.ndarray,
    die_mm2: np.ndarray,
    logic_mm2: np.ndarray,
    other_w: np.ndarray,
) -> np.ndarray:
    """Full-load logic power density the package can sustain: the lower of

    - the cooler's heat flux, which rises for small dies because heat spreads from a small
      source into the lid and cold plate (spreading resistance ~ 1/sqrt(area)): the flux at
      the reference die area times (reference / area)^exponent, at most ``max gain`` times it;
    - the package power the cooler and power delivery take (HBM and links come off first).
    """
    flux = _pick(
        cooling,
        {"air": tech(d, "cooling_air_w_per_mm2"), "liquid": tech(d, "cooling_liquid_w_per_mm2")},
    )
    gain = (tech(d, "cooling_reference_die_mm2") / die_mm2) ** tech(
        d, "cooling_spreading_exponent"
    )
    flux = flux * np.clip(gain, 0.0, tech(d, "cooling_max_density_gain"))
    package_w = _pick(
        cooling,
        {"air": tech(d, "cooling_air_package_w"), "liquid": tech(d, "cooling_liquid_package_w")},
    )
    budget = (package_w * tech(d, "vrm_efficiency") - other_w) / logic_mm2
    return np.minimum(flux, budget)


def _throttled_where_needed(
    d: Mapping[str, Any], clock: np.ndarray, limit: np.ndarray, density: Any = None
) -> np.ndarray:
    """``_throttled_once`` on the rows whose requested clock breaks the limit; the rest keep
    their clock (the bisection would return it unchanged). ``density``: the full-load power
    density at ``clock``, when the caller has it."""
    if clock.ndim != 1 or clock.size < DEDUP_MIN:
        return _throttled_once(d, clock, limit)
    n = clock.size
    table = d["technology"]
    lim = np.broadcast_to(limit, (n,))
    over = (_density(_dvfs(d), clock) if density is None else density) > lim
    if not over.any():
        return clock.copy()
    if over.all():
        return _throttled_once(d, clock, limit)
    idx = np.flatnonzero(over)
    varying = {k: np.broadcast_to(np.asarray(table[k], float), (n,))[idx] for k in _DVFS}
    sub = {"technology": {**table, **{k: v for k, v in varying.items() if np.ndim(table[k])}}}
    out = clock.copy()
    out[idx] = _throttled_once(sub, clock[idx], lim[idx])
    return out


def _link_w(
    d: Mapping[str, Any], link_type: np.ndarray, net_gbps: Any, pkg: Package
) -> tuple[Any, Any, Any]:
    """(link power, die-to-die TB/s, base dies): links draw power whenever they are up (SerDes
    and lasers run idle patterns). A port's pJ/bit is its power over its per-direction rate,
    transmit and receive together (9 W for a 1.6 Tb/s CPO port is 5.6 pJ/bit), so power =
    per-direction bandwidth x pJ/bit. The die-to-die links and base (IO) dies are always on
    too, and counted with them."""
    link_pj = _pick(
        link_type,
        {
            "electrical": tech(d, "electrical_link_pj_per_bit"),
            "pluggable": tech(d, "pluggable_link_pj_per_bit"),
            "cpo": tech(d, "cpo_link_pj_per_bit"),
        },
    )
    link_w = net_gbps * 1e9 * link_pj * 1e-12
    d2d, base_dies = pkg.d2d_tbps, pkg.base_dies
    if np.any(one_value(d2d) > 0):
        link_w = link_w + pkg.d2d_w
    if np.any(one_value(base_dies) > 0):
        link_w = link_w + pkg.base_die_w
    return link_w, d2d, base_dies


def _shoreline(
    d: Mapping[str, Any],
    pkg: Package,
    link_type: np.ndarray,
    perimeter: Any,
    stacks: Any,
    dies: Any,
    net_gbps: Any,
    d2d: Any,
    base_dies: Any,
) -> Any:
    """Fraction of the die edge used: HBM PHYs and link I/O sit on the die edge; both
    directions of every link need edge, split over the dies of the package, and so do the
    die-to-die PHYs. Compute dies stacked on base (IO) dies leave the HBM and link PHYs to the
    base dies' edges."""
    edge_density = _pick(
        link_type,
        {
            "electrical": tech(d, "serdes_gbps_per_mm_edge"),
            "pluggable": tech(d, "serdes_gbps_per_mm_edge"),
            "cpo": tech(d, "cpo_gbps_per_mm_edge"),
        },
    )
    hbm_edge = stacks * pkg.hbm["beachfront_mm"]
    io_edge = 2 * net_gbps / dies / edge_density
    shoreline = (hbm_edge + io_edge) / perimeter
    if np.any(one_value(d2d) > 0):
        shoreline = (hbm_edge + io_edge + pkg.d2d_edge_mm) / perimeter
    if np.any(one_value(base_dies) > 0):
        stacked = base_dies > 0
        base_perimeter = 4 * np.sqrt(np.maximum(pkg.base_die_area_mm2, 1e-9))
        per_base = (hbm_edge + io_edge) * dies / np.maximum(base_dies, 1.0)
        shoreline = np.where(stacked, per_base / base_perimeter, shoreline)
    return shoreline


def hardware(
    d: Mapping[str, Any], precision: str, package: Package | None = None
) -> dict[str, np.ndarray]:
    """Per-GPU peak figures and physical feasibility of the package each design describes
    (``package``, read from the design when not given)."""
    area = value(d, "die_area_mm2")
    aspect = value(d, "die_aspect_ratio")
    dies = value(d, "dies_per_gpu")
    stacks = value(d, "hbm_stacks_per_die")
    clock = value(d, "clock_ghz")
    link_type = _choose(d, "link_type", LINK_TYPES)
    cooling = _choose(d, "cooling", COOLING)
    aspect_1, dies_1, clock_1 = one_value(aspect), one_value(dies), one_value(clock)
    if np.any(area <= 0) or np.any(aspect_1 < 1) or np.any(dies_1 < 1) or np.any(clock_1 <= 0):
        raise ContextError("die_area_mm2", "die area, clock must be > 0; aspect ratio, dies >= 1")

    hbm_tbps = stacks * value(d, "hbm_tbps_per_stack") * dies
    hbm_gb = stacks * value(d, "hbm_gb_per_stack") * dies
    net_gbps = value(d, "links_per_gpu") * value(d, "optics_per_link") * value(d, "lane_gbps")
    pkg = Package.of(d) if package is None else package
    link_w, d2d, base_dies = _link_w(d, link_type, net_gbps, pkg)
    hbm_peak_w = hbm_tbps * 1e12 * 8 * tech(d, "hbm_pj_per_bit") * 1e-12
    logic_area = area * dies
    power_factor = optional(d, "compute_power_factor")
    scaled = bool(np.any(one_value(power_factor) != 1.0))  # (a flattened constant read once)

    limit = cooling_limit_w_per_mm2(d, cooling, area, logic_area, hbm_peak_w + link_w)
    if scaled:  # the throttle holds the architecture's own density
        limit = limit / power_factor
    clock_full = np.broadcast_to(clock, np.broadcast(clock, limit).shape).astype(float)
    full_density = compute_w_per_mm2(d, clock_full)  # at the requested clock
    clock_eff = _throttled_where_needed(d, clock_full, limit, full_density)
    tdp_clock = clock_eff
    cap = optional(d, "power_limit_w")
    capped = bool(np.any(one_value(cap) > 0))
    if capped:  # an operator's power limit: DVFS holds full-load power within it
        clock_eff = _capped_clock(d, clock_eff, cap, logic_area, power_factor, hbm_peak_w, link_w)

    # Tensor throughput scales with compute area and clock; the density is calibrated on H100
    # (technology.tensor_tflops_per_mm2_ghz_bf16), the architecture's own relative to it.
    tflops_bf16 = area * dies * tech(d, "tensor_tflops_per_mm2_ghz_bf16") * clock_eff
    density_factor = optional(d, "tensor_density_factor")
    if np.any(one_value(density_factor) != 1.0):
        tflops_bf16 = tflops_bf16 * density_factor
    tflops = tflops_bf16 * _precision_multiplier(d, precision)

    if aspect_1.ndim <= 1 and aspect_1.size == 1 and bool(np.all(aspect_1 == 1.0)):  # square
        edge = np.sqrt(area)  # a x 1 and a / 1 are a
        perimeter = 2 * (edge + edge)
    else:
        perimeter = 2 * (np.sqrt(area * aspect) + np.sqrt(area / aspect))
    shoreline = _shoreline(d, pkg, link_type, perimeter, stacks, dies, net_gbps, d2d, base_dies)

    # (where no clock was lowered, the density at the requested clock: the same operations)
    unchanged = np.array_equal(clock_eff, clock_full)
    density = full_density if unchanged else compute_w_per_mm2(d, clock_eff)
    if scaled:
        density = density * power_factor
    compute_peak_w = density * logic_area
    package_w = (compute_peak_w + hbm_peak_w + link_w) / tech(d, "vrm_efficiency")
    # the host, fans and network are sized for the package as built, whatever its power limit
    node_basis_w = package_w
    if capped:
        full = compute_w_per_mm2(d, tdp_clock) * power_factor * logic_area
        node_basis_w = (full + hbm_peak_w + link_w) / tech(d, "vrm_efficiency")

    return {
        "clock_eff_ghz": clock_eff,
        "tflops_per_gpu": tflops,
        "bf16_tflops_per_gpu": tflops_bf16,
        "hbm_tbps_per_gpu": hbm_tbps,
        "hbm_gb_per_gpu": hbm_gb,
        "net_gbps_per_gpu": net_gbps,
        "shoreline_used_fraction": shoreline,
        "die_perimeter_mm": perimeter,
        "power_density_w_per_mm2": density,
        "package_power_w": package_w,
        "node_basis_w": node_basis_w,
        "link_w": link_w,
        "logic_area_mm2": logic_area,
        "compute_power_factor": power_factor,
        "is_electrical": np.broadcast_to(
            (link_type == "electrical").astype(float), np.shape(tflops)
        ),
        "scaleout_gbps_per_gpu": scaleout_gbps_per_gpu(d),
    }


def _capped_clock(
    d: Mapping[str, Any],
    clock: np.ndarray,
    cap: np.ndarray,
    logic_mm2: Any,
    power_factor: Any,
    hbm_w: Any,
    link_w: Any,
) -> np.ndarray:
    """The clock at which full-load package power meets the operator's limit ``cap`` (W; 0 =
    none): the logic density the limit leaves after HBM and links, through the same V-f
    curve as the cooling throttle. A limit is on the package's full-load power, as a GPU
    busy enough to reach it holds its clock there (MLPerf MaxQ: llama2-70b, BERT and DLRM-v2
    keep 0.805, 0.820, 0.806 of their throughput on a DGX H100 capped at 450 W)."""
    room = (cap * tech(d, "vrm_efficiency") - hbm_w - link_w) / logic_mm2
    limit = np.where(cap > 0, np.maximum(room, 0.0), np.inf) / power_factor
    shape = np.broadcast(clock, limit).shape
    return _throttled_where_needed(
        d, np.broadcast_to(clock, shape).astype(float), np.broadcast_to(limit, shape)
    )


def _precision_multiplier(d: Mapping[str, Any], precision: str) -> Any:
    """Dense tensor FLOPs at ``precision`` / dense BF16; FP4 only where the GPU has it."""
    if precision == "fp8":
        return tech(d, "fp8_flops_multiplier")
    if precision != "fp4":
        return 1.0
    fp4 = optional(d, "fp4_flops_multiplier")
    if np.any(~(fp4 > 0)):
        gpu = d.get("gpu")
        which = f"GPU {gpu!r}" if isinstance(gpu, str) else "this GPU"
        raise ContextError(
            "workload.precision",
            f"fp4 needs FP4 tensor cores, and {which} has fp4_flops_multiplier 0 (use bf16 or "
            "fp8, or set fp4_flops_multiplier to its dense FP4 / BF16 throughput)",
        )
    return fp4


def scaleout_gbps_per_gpu(d: Mapping[str, Any]) -> np.ndarray:
    """Scale-out NIC bandwidth of one GPU, in proportion to its compute silicon."""
    silicon = value(d, "die_area_mm2") * value(d, "dies_per_gpu")
    return silicon * tech(d, "scaleout_gbps_per_silicon_mm2")


def attention_tflops(d: Mapping[str, Any], hw: Mapping[str, np.ndarray], s: Any) -> np.ndarray:
    """Dense tensor throughput attention runs at under FP4 weights: the KV cache's precision
    (FP8 attention kernels with an FP8 cache, BF16 otherwise); no serving engine runs its
    attention in FP4 (TensorRT-LLM's FMHA and FlashMLA run FP8 or BF16)."""
    fp4 = optional(d, "fp4_flops_multiplier")
    bf16 = hw["tflops_per_gpu"] / fp4
    return bf16 * (tech(d, "fp8_flops_multiplier") if s.kv_elem <= 1.0 else 1.0)
