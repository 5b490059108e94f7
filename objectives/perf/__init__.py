"""Performance and power of an AI cluster serving (or training) a transformer.

``evaluate_perf(design)`` scores every design of a numpy batch: per-GPU peak figures from die
area, HBM stacks and links; a per-layer roofline of prefill and decode for each candidate
tensor x pipeline parallelism (and batch, when ``workload.batch`` is ``auto``), searched by
broadcasting over a small candidate axis and an argmax; then power and efficiency.

Technology constants and the numeric workload fields may be arrays too: they broadcast against
the design values (a robust study puts sampled assumptions on the batch axis). For speed the
serving search runs once per group of designs with bit-identical hardware figures (its timing
does not depend on the cluster size) and scores only the candidates that can win; both are
exact, every design gets what it would get evaluated alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from objectives._evaluator import MEMO_KEY, builtin_evaluator, tech
from objectives.errors import ContextError
from objectives.fabric import fabric_hw, group_links
from objectives.perf.hardware import _dedup, _Groups, attention_tflops, hardware
from objectives.perf.model import Arch, arch_of
from objectives.perf.power import (
    fabric_w_per_gpu,
    gpu_power_w,
    idle_gpu_power_w,
    overhead_w_per_gpu,
)
from objectives.perf.serving import Serving, serve
from objectives.perf.training import cp_of, train
from objectives.perf.training import options as train_options
from objectives.perf.workload import candidates, serving_of

__all__ = ["METRICS", "Arch", "arch_of", "evaluate_perf"]

METRICS: dict[str, tuple[str, str]] = {
    "tflops_per_gpu": ("TFLOPS", "dense tensor throughput of one GPU at the workload precision"),
    "hbm_tbps_per_gpu": ("TB/s", "peak HBM bandwidth of one GPU"),
    "hbm_gb_per_gpu": ("GB", "HBM capacity of one GPU"),
    "net_gbps_per_gpu": ("Gb/s", "scale-up bandwidth of one GPU, per direction"),
    "clock_eff_ghz": ("GHz", "tensor clock after cooling-limited DVFS throttling"),
    "power_density_w_per_mm2": ("W/mm2", "full-load logic power density at the effective clock"),
    "tokens_per_s": (
        "tokens/s",
        "output tokens/s of the cluster (prefill: input, train: trained)",
    ),
    "ttft_s": (
        "s",
        "time to first token: one request's prefill plus one step of waiting (continuous; "
        "under poisson arrivals, at the SLO percentile with the waits for a batch slot and "
        "for prefill), the prefill of the whole batch (static); 0 when training",
    ),
    "tpot_s": (
        "s",
        "mean time per output token: one step of the running batch, with its prefill chunks "
        "when prefill is co-located (under poisson arrivals, its SLO percentile over "
        "requests); 0 when training",
    ),
    "step_s": (
        "s",
        "serve: one engine step (continuous; disaggregated: group-seconds per request) or one "
        "static-batch cycle; train: one optimizer step",
    ),
    "mfu": ("1", "model FLOPs / (peak FLOPs x time) of the busy GPUs (training MFU)"),
    "gpu_power_w": ("W", "power of one serving GPU package at this workload"),
    "package_power_w": ("W", "peak (TDP-like) package power: full compute, HBM and links"),
    "cluster_power_w": ("W", "IT power of the serving GPUs incl. host and network share"),
    "facility_power_w": ("W", "cluster power times PUE"),
    "tokens_per_joule": ("tokens/J", "tokens_per_s / cluster_power_w"),
    "model_fits": ("0/1", "1 if some parallelism fits weights, KV cache and activations in HBM"),
    "slo_met": (
        "0/1",
        "1 if the chosen configuration meets the TTFT and TPOT SLOs (and, at a given "
        "arrival_rate_per_s, keeps up with it)",
    ),
    "load_served_fraction": (
        "1",
        "at a given arrival_rate_per_s: tokens/s served / offered (< 1: the replicas cannot "
        "keep up, their queues grow without bound and the figures are the saturated "
        "engine's); 1 otherwise",
    ),
    "tp": ("GPUs", "tensor-parallel degree chosen"),
    "pp": ("GPUs", "pipeline-parallel degree chosen"),
    "ep": (
        "GPUs",
        "expert-parallel degree: serving, experts over ep GPUs of the TP group with attention "
        "data-parallel over ep groups and all-to-all dispatch (workload.ep; 1: plain TP); "
        "training, experts over workload.ep GPUs of the data-parallel group; 1 if dense",
    ),
    "replicas": ("replicas", "model replicas serving in the cluster"),
    "gpus_per_replica": (
        "GPUs",
        "tp x pp (x cp when training): the model-parallel group a failure takes down",
    ),
    "batch": ("sequences", "concurrent sequences per replica (continuous auto: solved)"),
    "compute_utilization": ("1", "achieved / peak tensor FLOPs over the serving cycle"),
    "hbm_utilization": ("1", "achieved / peak HBM bandwidth over the serving cycle"),
    "memory_used_fraction": ("1", "HBM need / usable HBM of the chosen configuration"),
    "shoreline_used_fraction": ("1", "die edge used by HBM PHYs and link I/O / die perimeter"),
    "topology_ok": ("0/1", "1 if the scale-up fabric can form the chosen tp x pp group"),
    "scaleup_domain_gpus": (
        "GPUs",
        "GPUs one switched scale-up domain holds (radix, copper reach); cluster size otherwise",
    ),
    "fabric_hops": ("hops", "switch traversals of one scale-up message (0 on a torus)"),
    "die_perimeter_mm": ("mm", "perimeter of one compute die"),
}

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
)
_STRINGS = ("link_type", "cooling", "scaleup_fabric", "hbm_generation", "packaging")
_STRING_DEFAULTS = {
    "cooling": "air",
    "link_type": "electrical",
    "scaleup_fabric": "auto",
    "hbm_generation": "auto",
    "packaging": "cowos-s",
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
#: Per-GPU figures the parallelism search reads (the rest only feed power, after it).
_SEARCH_HW = (
    "tflops_per_gpu",
    "hbm_tbps_per_gpu",
    "hbm_gb_per_gpu",
    "net_bytes_per_s",
    "scaleout_gbps_per_gpu",
    "is_electrical",
    "fabric_code",
    "ports",
    "domain_gpus",
    "fabric_hops",
    "fabric_ok",
)
#: (designs x candidates) per block: bounded memory, yet rows of thousands of designs, since
#: numpy's broadcast (k, 1) x (1, m) loops pay per row and run at full speed only for m >~ 4,000
_CHUNK_ELEMS = 1 << 18


@dataclass
class _Flat:
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


def _per_design(v: Any) -> bool:
    if isinstance(v, float | int | str | Mapping):
        return False
    return np.ndim(v) > 0


def _flatten(design: Mapping[str, Any]) -> _Flat:
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
        if k in _GRIDS or not _per_design(v):
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

    return _Flat(
        values={k: flat(v) for k, v in vals.items()},
        technology={**table, **{k: flat(v) for k, v in tech_arr.items()}},
        workload={**wl, **{k: flat(v) for k, v in wl_arr.items()}},
        tech_keys=list(tech_arr),
        wl_keys=list(wl_arr),
        shape=shape,
        gpu=design.get("gpu") if isinstance(design.get("gpu"), str) else None,
    )


def _search_keys(precision: str) -> tuple[str, ...]:
    return (*_SEARCH_HW, "attn_tflops_per_gpu") if precision == "fp4" else _SEARCH_HW


def _search_groups(flat: _Flat, hw: Mapping[str, np.ndarray]) -> _Groups:
    """Designs grouped by everything the candidates' timing reads (all but the cluster size)."""
    cols = [hw[k] for k in _SEARCH_HW if k in hw]
    if "attn_tflops_per_gpu" in hw:
        cols.append(hw["attn_tflops_per_gpu"])
    cols += [flat.technology[k] for k in flat.tech_keys]
    cols += [flat.workload[k] for k in flat.wl_keys]
    n = hw["tflops_per_gpu"].size
    found = _dedup([np.broadcast_to(c, (n,)) for c in cols])
    return _Groups.each(n) if found is None else found


def _serving_rows(s: Serving, slo: tuple[Any, Any], index: Any) -> tuple[Serving, tuple[Any, Any]]:
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


def _links(
    d: Mapping[str, Any], h: dict[str, np.ndarray], tp: np.ndarray, pp: np.ndarray, cluster: Any
) -> None:
    """Per-candidate bandwidths, latencies and feasibility from the scale-up fabric's topology
    (``objectives.fabric.topology.group_links``)."""
    group_links(d, h, tp, pp, cluster)


def _timing(
    d: Mapping[str, Any],
    hw: Mapping[str, np.ndarray],
    a: Arch,
    s: Serving,
    cand: Mapping[str, np.ndarray],
    batch: Any,
    slo: tuple[Any, Any],
    integral: bool,
    prune: bool = True,
) -> dict[str, np.ndarray]:
    """Serving figures of every candidate (rows) on every distinct hardware (columns).

    Besides ``serve``'s figures: ``memok`` (fits HBM), ``top`` (fits and meets the SLOs: ranks
    by throughput), ``z`` (replica tokens/s where ``top``, else the fallback score that does not
    depend on the cluster size), ``mem_ratio``/``slo_ok`` for the chosen one, and the
    ``contenders``/``unsafe`` of ``_contenders`` (``integral``: every cluster size and group is a
    whole number below 2^52; ``prune``: worth finding them, i.e. many designs).
    """
    h = {k: _row(v) for k, v in hw.items()}
    tp, pp = cand["tp"][:, None], cand["pp"][:, None]
    _links(d, h, tp, pp, None)
    if "ep" in cand and np.any(cand["ep"] != 1):  # expert parallelism (objectives.perf.moe)
        h["ep"] = cand["ep"][:, None]
    r = serve(d, h, a, s, tp, pp, batch, slo)
    shape = (tp.shape[0], hw["hbm_gb_per_gpu"].shape[0])
    mem_ratio = np.broadcast_to(r["mem_ratio"], shape)
    memok = mem_ratio <= 1
    every = bool(h["topology_ok"].all())
    topo = np.broadcast_to(h["topology_ok"], shape)
    # A group the fabric cannot form ranks below every formable one that fits.
    no_topo = 0.0 if every else np.where(topo, 0.0, 1e3)
    # Scores, as documented in _choose: fitting candidates rank by throughput (>= 0), then
    # least SLO excess; the rest by least memory overflow, so nothing is ever left unranked.
    overflow = -1e9 - np.maximum(mem_ratio, 1)
    ttft_slo, tpot_slo = slo
    # At a given arrival rate a replica that cannot keep up misses the load as it would an SLO.
    load = r.get("excess_load")
    if ttft_slo is None and tpot_slo is None and load is None:
        slo_ok = np.broadcast_to(True, shape)
        top = memok if every else memok & topo
        # (every group formable: not top is not memok, the overflow score)
        z = np.where(
            top,
            r["replica_tokens_per_s"],
            overflow if every else np.where(memok, -1 - no_topo, overflow),
        )
    else:
        slo_excess = np.zeros(shape)
        if ttft_slo is not None:
            slo_excess = slo_excess + np.maximum(r["ttft_s"] / ttft_slo - 1, 0)
        if tpot_slo is not None:
            slo_excess = slo_excess + np.maximum(r["tpot_s"] / tpot_slo - 1, 0)
        if load is not None:
            slo_excess = slo_excess + load
        slo_ok = slo_excess == 0
        top = memok & slo_ok if every else memok & slo_ok & topo
        z = np.where(
            top, r["replica_tokens_per_s"], np.where(memok, -1 - slo_excess - no_topo, overflow)
        )
    # (without a whole replica the score is z - 1e6, or -1e9 - 1 - 1e6 if it fits: _argmax)
    full = {k: np.broadcast_to(r[k], shape) for k in _PICKED}
    found = {"memok": memok, "top": top, "z": z, "mem_ratio": mem_ratio}
    t = {**full, **found, "slo_ok": slo_ok, "topo": topo}
    if prune:
        which, t["unsafe"] = _contenders(t, cand["tp"] * cand["pp"], integral)
        t["contenders"], t["z_which"] = which, z[which]
        top_which = top[which]
        t["top_which"] = None if top_which.all() else top_which
    else:
        t["contenders"] = np.arange(0)  # score everything
    return t


def _row(v: np.ndarray) -> np.ndarray:
    """A per-hardware figure as a (1, m) row, or (1, 1) when all m values are equal: what
    reads only such figures is then computed per candidate, not per (candidate, hardware), with
    the same values (a batch with one link type or fabric has many)."""
    if v.size > 1 and v.dtype == np.float64 and v.flags.c_contiguous:
        bits = v.view(np.uint64)
        if (bits == bits[0]).all():  # bit for bit (-0.0 is not 0.0)
            return v[:1][None, :]
    return v[None, :]


_PICKED = (
    "replica_tokens_per_s",
    "ttft_s",
    "tpot_s",
    "step_s",
    "compute_utilization",
    "hbm_bytes_per_s",
    "batch",
)


_MARGIN = 1 + 4e-15  # a lead that the rounding of replicas x tokens/s cannot undo


def _contenders(
    t: Mapping[str, np.ndarray], group: np.ndarray, integral: bool
) -> tuple[np.ndarray, np.ndarray]:
    """(candidates that can win for some design of this block, columns to score in full).

    A design's winner is, whenever one exists, a candidate that fits and meets the SLOs with
    at least one replica (every other score is negative). Such a candidate c loses to c' of no
    larger group g' <= g that also fits and has replica tokens/s r' > r (1 + 4e-15): c' has at
    least as many replicas. With whole clusters and g' dividing g it has at least g/g' times as
    many, so c also loses when r' g/g' > r (1 + 4e-15): per GPU, c' does better. What loses to
    such a c' for every column of the block is not scored; a design whose winner among the rest
    is not a fitting candidate with a replica (or whose column has a NaN) is scored in full.
    """
    r, top = t["replica_tokens_per_s"], t["top"]
    rt = np.where(top, r, -np.inf)
    levels = np.unique(group)
    at_level = [group == lv for lv in levels]
    level_best = [rt[rows].max(axis=0) for rows in at_level]
    rival = np.empty_like(rt)
    for i, lv in enumerate(levels):
        m = level_best[0] * (lv / levels[0] if integral and lv % levels[0] == 0 else 1.0)
        for j in range(1, i + 1):
            lj = levels[j]
            m = np.maximum(m, level_best[j] * (lv / lj if integral and lv % lj == 0 else 1.0))
        rival[at_level[i]] = m
    contender = top & ~(rival > r * _MARGIN)
    unsafe = np.isnan(t["z"]).any(axis=0)
    return np.flatnonzero(contender.any(axis=1)), unsafe


def _argmax(
    t: Mapping[str, np.ndarray],
    cols: np.ndarray,
    which: np.ndarray | None,
    group: np.ndarray,
    cluster: np.ndarray,
) -> np.ndarray:
    """First best-scoring candidate (of ``which``, or all) of every design; see ``_choose``."""
    if which is None:
        g = group[:, None]
        z, top = np.take(t["z"], cols, axis=1), np.take(t["top"], cols, axis=1)
    else:  # the contenders' rows, copied once per timing block (``_timing``)
        g = group[which][:, None]
        z, top = np.take(t["z_which"], cols, axis=1), t["top_which"]
        top = top if top is None else np.take(top, cols, axis=1)
    replicas = np.floor(cluster[None, :] / g)
    score = replicas * z
    if top is not None:  # throughput where top, the fallback score z elsewhere
        np.copyto(score, z, where=~top)
    few = replicas < 1
    if few.any():  # without a whole replica: -1e9 - 1 - 1e6 if it fits, else z - 1e6
        memok = np.take(t["memok"] if which is None else t["memok"][which], cols, axis=1)
        np.copyto(score, np.where(memok, -1e9 - 1.0 - 1e6, z - 1e6), where=few)
    best = np.argmax(score, axis=0) if which is None else _first_max(score)
    return best if which is None else which[best]


def _first_max(score: np.ndarray) -> np.ndarray:
    """``np.argmax(score, axis=0)`` for a few rows: the column maxima, then the first row that
    holds them (a row at a time: numpy's argmax over a short first axis is slower)."""
    top = score.max(axis=0)
    if np.isnan(top).any():
        return np.argmax(score, axis=0)  # NaN ranks first, as argmax has it
    best = np.zeros(score.shape[1], dtype=np.intp)
    for j in range(score.shape[0] - 1, 0, -1):
        np.copyto(best, j, where=score[j] == top)
    return np.where(score[0] == top, 0, best)


def _at(x: np.ndarray, best: np.ndarray, at: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """``x[best, at]`` of a (candidates, columns) array; ``flat`` is ``best * columns + at``
    (one 1-D gather instead of numpy's slower 2-D fancy indexing)."""
    if x.strides[1] == 0:  # one value per candidate, broadcast over the columns
        return x[:, 0][best]
    if x.flags.c_contiguous:
        return np.take(x.reshape(-1), flat)
    return x[best, at]


def _choose(
    t: Mapping[str, np.ndarray],
    cols: np.ndarray,
    cand: Mapping[str, np.ndarray],
    cluster: np.ndarray,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The best candidate of every design, from the timing ``t`` of its hardware column.

    Score of a candidate: throughput (replicas x replica tokens/s) if it fits memory, has a
    replica and meets the SLOs; -1 - SLO excess if it fits but misses them; otherwise
    -1e9 - max(memory ratio, 1), less 1e6 without a whole replica. Ties go to the first.
    Only ``t["contenders"]`` are scored unless that cannot be trusted (see ``_contenders``).
    """
    group = cand["tp"] * cand["pp"]
    which = t["contenders"]
    at = cols
    if which.size == 0:
        best = _argmax(t, cols, None, group, cluster)
        rep = np.floor(cluster / group[best])
        flat = best * t["z"].shape[1] + at
    else:
        best = _argmax(t, cols, which, group, cluster)
        rep = np.floor(cluster / group[best])
        flat = best * t["z"].shape[1] + at
        sure = _at(t["top"], best, at, flat) & (rep >= 1) & ~t["unsafe"][at]
        if not sure.all():
            redo = np.flatnonzero(~sure)
            best[redo] = _argmax(t, cols[redo], None, group, cluster[redo])
            rep[redo] = np.floor(cluster[redo] / group[best[redo]])
            flat[redo] = best[redo] * t["z"].shape[1] + at[redo]
    got: dict[tuple[Any, ...], np.ndarray] = {}

    def pick(x: np.ndarray) -> np.ndarray:  # figures that are one array are gathered once
        key = (x.__array_interface__["data"][0], x.strides, x.shape, x.dtype.str)
        if key not in got:
            got[key] = _at(x, best, at, flat)
        return got[key]

    mem_ratio = pick(t["mem_ratio"])
    fit_any = ((mem_ratio <= 1) & (rep >= 1)).astype(float)  # memok is mem_ratio <= 1
    out = {k: pick(t[k]) for k in _PICKED}
    out.update(
        replicas=rep * fit_any,
        model_fits=fit_any,
        slo_met=pick(t["slo_ok"]).astype(float) * fit_any,
        memory_used_fraction=mem_ratio,
        topology_ok=pick(t["topo"]).astype(float),
    )
    return best, out


def _select_train(
    d: Mapping[str, Any],
    hw: Mapping[str, np.ndarray],
    a: Arch,
    s: Serving,
    cand: Mapping[str, np.ndarray],
    batch: Any,
    cluster: np.ndarray,
    slo: tuple[Any, Any],
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Training: the cluster size sets the data parallelism, so every design is scored itself
    (candidates on rows, designs on columns; the score is the one ``_choose`` documents)."""
    h = {k: v[None, :] for k, v in hw.items()}
    tp, pp = cand["tp"][:, None], cand["pp"][:, None]
    cl = cluster[None, :]
    _links(d, h, tp, pp, cl)
    group = tp * pp * cp_of(d["workload"])  # a replica spans tp x pp x cp GPUs
    replicas = np.floor(cl / group)
    r = train(d, h, a, s, tp, pp, batch, replicas)
    usable = h["hbm_gb_per_gpu"] * 1e9 * tech(d, "hbm_usable_fraction")
    mem_ratio = r["mem_need_bytes"] / usable
    fits = (mem_ratio <= 1) & (replicas >= 1)
    topo = np.broadcast_to(h["topology_ok"], mem_ratio.shape)
    ttft_slo, tpot_slo = slo
    slo_excess = np.zeros_like(mem_ratio)
    if ttft_slo is not None:
        slo_excess = slo_excess + np.maximum(r["ttft_s"] / ttft_slo - 1, 0)
    if tpot_slo is not None:
        slo_excess = slo_excess + np.maximum(r["tpot_s"] / tpot_slo - 1, 0)
    tput = replicas * r["replica_tokens_per_s"]
    score = np.where(
        fits & (slo_excess == 0) & topo,
        tput,
        np.where(
            fits,
            -1 - slo_excess - np.where(topo, 0.0, 1e3),
            -1e9 - np.maximum(mem_ratio, 1) - (replicas < 1) * 1e6,
        ),
    )
    best = np.argmax(score, axis=0)
    cols = np.arange(score.shape[1])

    def pick(x: np.ndarray) -> np.ndarray:
        return np.broadcast_to(x, score.shape)[best, cols]

    fit_any = pick(fits).astype(float)
    out = {k: pick(r[k]) for k in _PICKED}
    out.update(
        replicas=pick(replicas) * fit_any,
        model_fits=fit_any,
        slo_met=pick(slo_excess == 0).astype(float) * fit_any,
        memory_used_fraction=pick(mem_ratio),
        topology_ok=pick(topo).astype(float),
    )
    return best, out


@builtin_evaluator(metrics=METRICS)
def evaluate_perf(design: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Cluster serving throughput, latency and power for a (batch of) design(s).

    Cost and availability call this too; when the design carries a scratch dict under
    ``MEMO_KEY`` (the engine gives each evaluation a fresh one) the result is computed once.
    """
    memo = design.get(MEMO_KEY)
    if isinstance(memo, dict):
        if "perf" not in memo:
            memo["perf"] = _evaluate_perf(design)
        return memo["perf"]
    return _evaluate_perf(design)


def _evaluate_perf(design: Mapping[str, Any]) -> dict[str, np.ndarray]:
    if "disaggregated" in design:  # the design parameter: searchable, overrides the workload
        return _by_serving_mode(design)
    wl = design["workload"]
    a = arch_of(wl["model"])
    fl = _flatten(design)
    shape = fl.shape
    flat = fl.design()
    s, slo, precision = serving_of(fl.workload)
    hw = hardware(flat, precision)
    hw["net_bytes_per_s"] = _net_bytes_per_s(flat, hw)
    hw.update(fabric_hw(flat, flat["link_type"]))
    cand = candidates(flat, fl.workload, a)
    batch_pd = "batch" in fl.wl_keys  # a pinned batch that differs per design
    n, k = hw["tflops_per_gpu"].size, cand["tp"].size
    cluster = flat["cluster_size"]
    if np.any(~(cluster >= 1)) or np.any(cluster != np.floor(cluster)):
        raise ContextError("cluster_size", "expected a whole number of GPUs >= 1")
    chunk = max(1, _CHUNK_ELEMS // k)
    if precision == "fp4":  # attention runs at the KV cache's precision (FP8 or BF16)
        hw["attn_tflops_per_gpu"] = attention_tflops(flat, hw, s)
    search = {key: hw[key] for key in _search_keys(precision)}

    def cand_batch(d_rows: Mapping[str, Any]) -> Any:
        return d_rows["workload"]["batch"] if batch_pd else cand["batch"][:, None]

    best_parts: list[np.ndarray] = []
    parts: list[dict[str, np.ndarray]] = []
    if s.phase == "train":
        for start in range(0, n, chunk):  # memory blocks of many designs, not a per-design loop
            sl = slice(start, start + chunk)
            d_rows = fl.rows(sl)
            s_rows, slo_rows = _serving_rows(s, slo, sl)
            h_rows = {key: v[sl] for key, v in search.items()}
            b, p = _select_train(
                d_rows, h_rows, a, s_rows, cand, cand_batch(d_rows), cluster[sl], slo_rows
            )
            best_parts.append(b)
            parts.append(p)
    else:
        # Serving: a candidate's timing depends on the hardware, not on the cluster size, so it
        # is computed once per distinct hardware and shared by the designs that have it.
        g = _search_groups(fl, hw)
        groups = cand["tp"] * cand["pp"]
        whole = bool(
            np.all(cluster == np.floor(cluster))
            and np.all(np.abs(cluster) < 2.0**52)
            and np.all(groups == np.floor(groups))
        )
        best_all = np.empty(n, dtype=np.intp)
        sel_all: dict[str, np.ndarray] = {}
        n_groups = g.first.size
        for u0 in range(0, n_groups, chunk):
            u1 = min(u0 + chunk, n_groups)
            idx = g.first[u0:u1]
            d_rows = fl.rows(idx)
            s_rows, slo_rows = _serving_rows(s, slo, idx)
            h_rows = {key: v[idx] for key, v in search.items()}
            # the designs of these hardware groups, in their order
            mine = (
                np.arange(n)
                if u1 - u0 == n_groups
                else np.flatnonzero((g.inv >= u0) & (g.inv < u1))
            )
            t = _timing(
                d_rows, h_rows, a, s_rows, cand, cand_batch(d_rows), slo_rows, whole, mine.size > 8
            )
            for start in range(0, mine.size, chunk):
                rows = mine[start : start + chunk]
                b, p = _choose(t, g.inv[rows] - u0, cand, cluster[rows])
                best_all[rows] = b
                for key, v in p.items():
                    if key not in sel_all:
                        sel_all[key] = np.empty(n, dtype=v.dtype)
                    sel_all[key][rows] = v
        best_parts, parts = [best_all], [sel_all]
    if len(parts) == 1:  # serving: already whole arrays of the n designs (no copy)
        best, sel = best_parts[0], dict(parts[0])
    else:
        best = np.concatenate(best_parts)
        sel = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    sel["tp"], sel["pp"] = cand["tp"][best], cand["pp"][best]
    sel["ep"] = cand["ep"][best] if "ep" in cand else np.ones_like(sel["tp"])

    group = sel["tp"] * sel["pp"]
    if s.phase == "train":
        group = group * cp_of(fl.workload)
    busy = sel["replicas"] * group
    p_gpu = gpu_power_w(flat, hw, sel["compute_utilization"], sel["hbm_bytes_per_s"])
    p_idle = idle_gpu_power_w(flat, hw)
    overhead = overhead_w_per_gpu(flat, hw) + fabric_w_per_gpu(flat, hw)
    cluster_w = busy * p_gpu + (cluster - busy) * p_idle + cluster * overhead
    tokens = sel["replicas"] * sel["replica_tokens_per_s"]
    served = np.ones_like(tokens)
    if s.arrival_rate_per_s is not None and s.arrivals == "poisson":
        offered = sel["replicas"] * s.arrival_rate_per_s * s.output_tokens
        with np.errstate(divide="ignore", invalid="ignore"):
            served = np.where(offered > 0, np.minimum(tokens / offered, 1.0), 1.0)
        served = np.where(served > 1.0 - 1e-9, 1.0, served)  # all of it, but for rounding
    out = {
        "tflops_per_gpu": hw["tflops_per_gpu"],
        "hbm_tbps_per_gpu": hw["hbm_tbps_per_gpu"],
        "hbm_gb_per_gpu": hw["hbm_gb_per_gpu"],
        "net_gbps_per_gpu": hw["net_gbps_per_gpu"],
        "clock_eff_ghz": hw["clock_eff_ghz"],
        "power_density_w_per_mm2": hw["power_density_w_per_mm2"],
        "tokens_per_s": tokens,
        "ttft_s": sel["ttft_s"] if s.phase != "train" else np.zeros_like(sel["ttft_s"]),
        "tpot_s": sel["tpot_s"],
        "step_s": sel["step_s"],
        "mfu": sel["compute_utilization"],
        "gpu_power_w": p_gpu,
        "package_power_w": hw["package_power_w"],
        "cluster_power_w": cluster_w,
        "facility_power_w": cluster_w * tech(flat, "pue"),
        "tokens_per_joule": tokens / cluster_w,
        "model_fits": sel["model_fits"],
        "slo_met": sel["slo_met"],
        "load_served_fraction": served,
        "tp": sel["tp"],
        "pp": sel["pp"],
        "ep": _ep(s, fl.workload, a, sel),
        "replicas": sel["replicas"],
        "gpus_per_replica": group,
        "batch": sel["batch"],
        "compute_utilization": sel["compute_utilization"],
        "hbm_utilization": sel["hbm_bytes_per_s"] / (hw["hbm_tbps_per_gpu"] * 1e12),
        "memory_used_fraction": sel["memory_used_fraction"],
        "shoreline_used_fraction": hw["shoreline_used_fraction"],
        "die_perimeter_mm": hw["die_perimeter_mm"],
        "topology_ok": sel["topology_ok"],
        "scaleup_domain_gpus": np.minimum(hw["domain_gpus"], cluster),
        "fabric_hops": hw["fabric_hops"],
    }
    return {key: v.reshape(shape) for key, v in _own(out, n).items()}


def _ep(s: Serving, wl: Mapping[str, Any], a: Arch, sel: Mapping[str, np.ndarray]) -> np.ndarray:
    """Expert-parallel degree: serving, the candidate chosen (experts over ep GPUs of the TP
    group, objectives.perf.moe); training, workload.ep GPUs of the data-parallel group; 1 for
    a dense model."""
    tp = sel["tp"]
    if a.experts <= 1:
        return np.ones_like(tp)
    if s.phase == "train":
        return np.minimum(train_options(wl)["ep"], a.experts) + np.zeros_like(tp)
    return sel["ep"]


def _by_serving_mode(design: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Designs with the ``disaggregated`` parameter (0/1, may vary per design): each mode's
    designs are evaluated as one vectorized batch and the results put back in place."""
    rest = {k: v for k, v in design.items() if k != "disaggregated"}
    try:
        flag = np.asarray(design["disaggregated"], dtype=float)
    except (TypeError, ValueError):
        raise ContextError("disaggregated", "expected 0 or 1") from None
    if not np.isin(flag, (0.0, 1.0)).all():
        raise ContextError(
            "disaggregated", f"expected 0 or 1, got {flag[~np.isin(flag, (0.0, 1.0))].flat[0]}"
        )
    if flag.ndim == 0 or np.all(flag == flag.flat[0]):
        rest["workload"] = {**design["workload"], "disaggregated": bool(flag.flat[0])}
        out = _evaluate_perf(rest)
        return (
            out
            if flag.ndim == 0
            else {
                k: np.broadcast_to(v, np.broadcast_shapes(v.shape, flag.shape)).copy()
                for k, v in out.items()
            }
        )
    fl = _flatten(
        {
            **rest,
            "cluster_size": np.broadcast_to(
                rest["cluster_size"],
                np.broadcast_shapes(np.shape(rest["cluster_size"]), flag.shape),
            ),
        }
    )
    f = np.broadcast_to(flag, fl.shape).reshape(-1)
    res: dict[str, np.ndarray] = {}
    for mode in (0.0, 1.0):
        idx = np.flatnonzero(f == mode)
        sub: dict[str, Any] = {k: v[idx] for k, v in fl.values.items()}
        sub["technology"] = {**fl.technology, **{k: fl.technology[k][idx] for k in fl.tech_keys}}
        w = {**fl.workload, **{k: fl.workload[k][idx] for k in fl.wl_keys}}
        sub["workload"] = {**w, "disaggregated": bool(mode)}
        part = _evaluate_perf(sub)
        for k, v in part.items():
            if k not in res:
                res[k] = np.empty(f.size)
            res[k][idx] = v
    return {k: v.reshape(fl.shape) for k, v in res.items()}


def _own(out: Mapping[str, Any], n: int) -> dict[str, np.ndarray]:
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


def _net_bytes_per_s(d: Mapping[str, Any], hw: Mapping[str, np.ndarray]) -> np.ndarray:
    """Achievable per-direction scale-up bandwidth in bytes/s."""
    return hw["net_gbps_per_gpu"] * 1e9 / 8 * tech(d, "network_efficiency")
