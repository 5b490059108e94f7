"""The parallelism search: every (tp, pp, ep, batch) candidate timed on every distinct
hardware, and the best one chosen per design.

Serving timing does not depend on the cluster size, so it runs once per group of designs with
bit-identical hardware figures (``search_groups``) and scores only the candidates that can win
(``_contenders``); both are exact. Where only hardware figures vary, the groups are laid out
on a product of small axes (``product_grid``: the die's figures, the HBM's, the link's), so a
timing term is computed once per combination of the axes it reads, bit for bit the same; a
sweep's next batch on the same grid reuses that timing (``grid_timing``).
Training scores every design itself (``select_train``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from objectives._evaluator import tech
from objectives._groups import Groups, dedup, same_bits
from objectives.fabric import group_links
from objectives.perf.batch import Flat
from objectives.perf.model import Arch
from objectives.perf.pool import POOL_HW
from objectives.perf.replica import serve
from objectives.perf.serving import Replica, Serving
from objectives.perf.training import cp_of, train

#: Per-GPU figures the parallelism search reads (the rest only feed power, after it).
SEARCH_HW = (
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
    "d2d_s_per_byte",
    "d2d_latency_s",
)


#: (designs x candidates) per block: bounded memory, yet rows of thousands of designs, since
#: numpy's broadcast (k, 1) x (1, m) loops pay per row and run at full speed only for m >~ 4,000
CHUNK_ELEMS = 1 << 18


def search_keys(precision: str) -> tuple[str, ...]:
    if precision == "fp4":  # attention at the KV cache's precision; NVFP4 training's BF16 parts
        return (*SEARCH_HW, "attn_tflops_per_gpu", "bf16_tflops_per_gpu")
    return SEARCH_HW


def search_groups(
    flat: Flat, hw: Mapping[str, np.ndarray], extra: tuple[np.ndarray, ...] = ()
) -> Groups:
    """Designs grouped by everything the candidates' timing reads: all but the cluster size,
    unless it is in ``extra`` (a central queue's replicas, ``workload.dispatch``)."""
    cols = [hw[k] for k in SEARCH_HW if k in hw] + list(extra)
    cols += [hw[k] for k in POOL_HW if k in hw]  # a memory pool's figures, when used
    if "attn_tflops_per_gpu" in hw:
        cols.append(hw["attn_tflops_per_gpu"])
    cols += [flat.technology[k] for k in flat.tech_keys]
    cols += [flat.workload[k] for k in flat.wl_keys]
    n = hw["tflops_per_gpu"].size
    found = dedup([np.broadcast_to(c, (n,)) for c in cols])
    return Groups.each(n) if found is None else found


@dataclass
class Grid:
    """Hardware groups laid out on a product of small axes, one per set of columns that vary
    together (the die's figures on one, the HBM's on another, the link's on a third): every
    column is an array over its own axis only, shaped ``(1, a1, ..., aq)``, so numpy computes
    each timing term once per combination of the axes it reads, not once per group. ``col[g]``
    is group g's flat index in the product (C order), of ``size`` points in all."""

    rows: dict[str, np.ndarray]
    col: np.ndarray
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def candidates(self, x: np.ndarray) -> np.ndarray:
        """A candidate-axis array as a ``(k, 1, ..., 1)`` column against the grid."""
        return x.reshape(-1, *(1,) * len(self.shape))


#: The product may hold points no group has (wasted timing): at most this many per group (a
#: grid point costs ~0.55 of a group row on spaces/litegpu.yaml, so 1.5 still gains).
_GRID_SPARE = 1.5
#: (candidates x product points) of one grid at most: bounded memory (4 MB a figure; the
#: groups' rows are timed in blocks of CHUNK_ELEMS, the grid in one).
_GRID_ELEMS = 1 << 19


def product_grid(rows: Mapping[str, np.ndarray], k: int) -> Grid | None:
    """The groups' columns (``rows``: each an array over the groups) on a product grid, or None
    when the product would hold too many points no group has, or too many in all.

    Each varying column goes on the first axis it is a function of (its value per axis point is
    exact: the groups' own bits), else opens an axis of its distinct values (in the order of
    their bits: batches with the same values get the same grid, ``grid_timing``); a group is
    then a tuple of axis points, and every figure timed on the grid is bit for bit the one
    timed on the group's row (the same operations on the same operands)."""
    n = next(iter(rows.values())).size
    axes: list[tuple[np.ndarray, int]] = []  # (code of every group, points)
    where: dict[str, tuple[int, np.ndarray]] = {}  # column -> (axis, bits per point); -1: one
    for key, v in rows.items():
        if v.dtype != np.float64 or v.shape != (n,):
            return None
        bits = np.ascontiguousarray(v).view(np.uint64)
        if (bits == bits[0]).all():
            where[key] = (-1, bits[:1])
            continue
        for ax, (code, size) in enumerate(axes):
            per = np.zeros(size, dtype=np.uint64)
            per[code] = bits
            if np.array_equal(per[code], bits):
                where[key] = (ax, per)
                break
        else:
            found = dedup([v])
            if found is None:  # few groups (or a hash collision): sort them
                per, code = np.unique(bits, return_inverse=True)
            else:  # the points in the order of their bits, as np.unique has them
                by_bits = np.argsort(bits[found.first])
                rank = np.empty_like(by_bits)
                rank[by_bits] = np.arange(by_bits.size)
                per, code = bits[found.first][by_bits], rank[found.inv]
            axes.append((code.reshape(-1), per.size))
            where[key] = (len(axes) - 1, per)
            shape = tuple(size for _, size in axes)
            if np.prod(shape) > max(_GRID_SPARE * n, 1) or k * np.prod(shape) > _GRID_ELEMS:
                return None
    if len(axes) < 2:  # one axis (or none): the groups' rows as they are
        return None
    # the longest axis last: numpy's loops over a broadcast run at full speed on long rows
    order = sorted(range(len(axes)), key=lambda ax: axes[ax][1])
    shape = tuple(axes[ax][1] for ax in order)
    col = np.zeros(n, dtype=np.intp)
    for ax in order:
        code, size = axes[ax]
        col = col * size + code
    out: dict[str, np.ndarray] = {}
    for key, (ax, per) in where.items():
        dims = [1] * (len(shape) + 1)
        if ax >= 0:
            dims[order.index(ax) + 1] = axes[ax][1]
        out[key] = per.view(np.float64).reshape(dims)
    return Grid(out, col, shape)


def _links(
    d: Mapping[str, Any], h: dict[str, np.ndarray], tp: np.ndarray, pp: np.ndarray, cluster: Any
) -> None:
    """Per-candidate bandwidths, latencies and feasibility from the scale-up fabric's topology
    (``objectives.fabric.topology.group_links``)."""
    group_links(d, h, tp, pp, cluster)


def timing(
    d: Mapping[str, Any],
    hw: Mapping[str, np.ndarray],
    a: Arch,
    s: Serving,
    cand: Mapping[str, np.ndarray],
    batch: Any,
    slo: tuple[Any, Any],
    integral: bool,
    prune: bool = True,
    grid: Grid | None = None,
) -> dict[str, np.ndarray]:
    """Serving figures of every candidate (rows) on every distinct hardware (columns).

    Besides ``serve``'s figures: ``memok`` (fits HBM), ``top`` (fits and meets the SLOs: ranks
    by throughput), ``z`` (replica tokens/s where ``top``, else the fallback score that does not
    depend on the cluster size), ``mem_ratio``/``slo_ok`` for the chosen one, and the
    ``contenders``/``unsafe`` of ``_contenders`` (``integral``: every cluster size and group is
    a whole number below 2^52; ``prune``: worth finding them, i.e. many designs) with their
    ``signed`` (``_argmax``). With a ``grid`` the columns are its product points (``hw`` its
    rows, ``batch`` its candidates).
    """
    if grid is None:
        h = {k: _row(v) for k, v in hw.items()}
        m = hw["hbm_gb_per_gpu"].shape[0]
    else:
        h, m = dict(hw), grid.size

    def column(x: np.ndarray) -> np.ndarray:  # a candidate-axis array against the columns
        return x[:, None] if grid is None else grid.candidates(x)

    tp, pp = column(cand["tp"]), column(cand["pp"])
    _links(d, h, tp, pp, None)
    if "cluster_size" in h:  # one queue for the replicas (workload.dispatch: shortest_queue)
        h["dispatch_replicas"] = np.maximum(
            np.floor(h["cluster_size"] / column(cand["group"])), 1.0
        )
    if "ep" in cand and np.any(cand["ep"] != 1):  # expert parallelism (objectives.perf.moe)
        h["ep"] = column(cand["ep"])
        # the attention data-parallel degree: ep with attention DP, 1 without
        h["attn_dp"] = column(np.where(cand["adp"] == 1, cand["ep"], 1.0))
    if "cp" in cand:  # context-parallel prefill (objectives.perf.context)
        h["cp"] = column(cand["cp"])
    r = serve(Replica(d, h, a, s, tp, pp), batch, slo)
    shape = (tp.shape[0], m)
    # The scores are computed on the figures' own shapes (on a grid, what reads only the HBM
    # stays per HBM point), then every array becomes a (k, m) array of the columns.
    mem_ratio = r["mem_ratio"]
    memok = mem_ratio <= 1
    every = bool(h["topology_ok"].all())
    topo = h["topology_ok"]
    # A group the fabric cannot form ranks below every formable one that fits.
    no_topo = 0.0 if every else np.where(topo, 0.0, 1e3)
    # Scores, as documented in choose: fitting candidates rank by throughput (>= 0), then
    # least SLO excess; the rest by least memory overflow, so nothing is ever left unranked.
    overflow = -1e9 - np.maximum(mem_ratio, 1)
    ttft_slo, tpot_slo = slo
    # At a given arrival rate a replica that cannot keep up misses the load as it would an SLO.
    load = r.get("excess_load")
    slo_ok: Any = True
    if ttft_slo is None and tpot_slo is None and load is None:
        top = memok if every else memok & topo
        # (every group formable: not top is not memok, the overflow score)
        z = np.where(
            top,
            r["replica_tokens_per_s"],
            overflow if every else np.where(memok, -1 - no_topo, overflow),
        )
    else:
        slo_excess: Any = 0.0
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
    done: dict[int, np.ndarray] = {}

    def cols(x: Any) -> np.ndarray:  # one (k, m) array per array (memok may be top)
        if id(x) not in done:
            done[id(x)] = np.broadcast_to(x if grid is None else _columns(x, shape, grid), shape)
        return done[id(x)]

    t: dict[str, Any] = {k: cols(r[k]) for k in _PICKED}
    t.update(memok=cols(memok), top=cols(top), z=cols(z), mem_ratio=cols(mem_ratio))
    t.update(slo_ok=cols(slo_ok), topo=cols(topo))
    z, top = t["z"], t["top"]
    if prune:
        which, t["unsafe"] = _contenders(t, cand["group"], integral)
        t["contenders"], t["z_which"] = which, z[which]
        t["short_which"] = _without_replica(t["memok"][which], t["z_which"])  # once per timing
        top_which = top[which]
        t["top_which"] = None if top_which.all() else top_which
        # ranking scores (top) >= 0, fallback scores <= 0: _argmax may take max(z x r, z)
        zw = t["z_which"]
        t["signed"] = bool(np.all(np.where(top_which, ~(zw < 0), ~(zw > 0))))
    else:
        t["contenders"] = np.arange(0)  # score everything
    return t


#: The last ``grid_timing`` as one (inputs, copied; figures, read-only) pair: read and
#: replaced whole, so threads evaluating at once never pair one's inputs with another's figures.
_LAST_GRID_TIMING: list[tuple[Any, dict[str, Any]]] = []


def grid_timing(
    d: Mapping[str, Any],
    a: Arch,
    s: Serving,
    cand: Mapping[str, np.ndarray],
    slo: tuple[Any, Any],
    integral: bool,
    prune: bool,
    grid: Grid,
) -> dict[str, Any]:
    """``timing`` on a ``grid`` (its rows, the candidates' batch as its column), reused from
    the last call when every input is the same bit for bit: a sweep's consecutive batches of
    one spec span the same hardware axes (every chunk of 65,536 designs of
    spaces/litegpu.yaml the same 4 x 8 x 380 points), so their timing is computed once, not
    once per batch (~0.2 of an evaluation of all three evaluators there)."""
    key = (d, a, s, cand, slo, integral, prune, grid.rows, grid.shape)
    last = _LAST_GRID_TIMING[:1]
    if last and same_bits(last[0][0], key):
        return dict(last[0][1])
    batch = grid.candidates(cand["batch"])
    t = timing(d, grid.rows, a, s, cand, batch, slo, integral, prune, grid)
    for k, v in t.items():  # shared by the later calls: nobody may write into them
        if isinstance(v, np.ndarray):
            t[k] = v.view()
            t[k].flags.writeable = False
    try:
        _LAST_GRID_TIMING[:] = [(copy.deepcopy(key), t)]
    except Exception:  # noqa: BLE001 - an input that cannot be copied: not kept, still right
        _LAST_GRID_TIMING.clear()
    return dict(t)


def _columns(x: Any, shape: tuple[int, int], grid: Grid) -> Any:
    """A figure timed on the ``grid`` as a (k, points) array (``shape``): (k, 1) or (1, 1) when
    it reads no axis of the grid, as ``_row`` gives on the groups' rows."""
    if np.ndim(x) == 0:
        return x
    x = np.asarray(x)
    if x.size == x.shape[0]:  # a (k, 1, ..., 1) or (1, ..., 1) figure
        return x.reshape(x.shape[0], 1)
    return np.broadcast_to(x, (shape[0], *grid.shape)).reshape(shape)


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
    at_level = [np.flatnonzero(group == lv) for lv in levels]
    level_best = np.stack([rt[rows].max(axis=0) for rows in at_level])
    contender = np.zeros(group.size, dtype=bool)
    for i, lv in enumerate(levels):
        # the best rival of the level's candidates: a level up to it, times the replicas more
        per = [lv / lj if integral and lv % lj == 0 else 1.0 for lj in levels[: i + 1]]
        m = (level_best[: i + 1] * np.array(per)[:, None]).max(axis=0)
        rows = at_level[i]
        contender[rows] = (top[rows] & ~(m > r[rows] * _MARGIN)).any(axis=1)
    unsafe = np.isnan(t["z"].max(axis=0))  # max propagates NaN: a column holding one
    return np.flatnonzero(contender), unsafe


def _argmax(
    t: Mapping[str, np.ndarray],
    cols: np.ndarray,
    which: np.ndarray | None,
    group: np.ndarray,
    cluster: np.ndarray,
) -> np.ndarray:
    """First best-scoring candidate (of ``which``, or all) of every design; see ``choose``."""
    signed = False
    if which is None:
        g = group[:, None]
        z, top = np.take(t["z"], cols, axis=1), np.take(t["top"], cols, axis=1)
    else:  # the contenders' rows, copied once per timing block (``timing``)
        g = group[which][:, None]
        z, top, signed = np.take(t["z_which"], cols, axis=1), t["top_which"], bool(t["signed"])
        top = top if top is None or signed else np.take(top, cols, axis=1)
    replicas = np.floor(cluster[None, :] / g)
    # throughput (z x replicas) where top, the fallback score z (z x 1, exactly) elsewhere
    with np.errstate(invalid="ignore"):  # 0 replicas x an infinite z: NaN, replaced just below
        if top is None:
            score = z * replicas
        elif signed:  # z >= 0 where top, <= 0 elsewhere: with replicas >= 1, max(z x r, z) is
            score = z * replicas  # z x r where top, z elsewhere, bit for bit (no mask gathered)
            np.maximum(score, z, out=score)
        else:
            score = z * np.where(top, replicas, 1.0)
    # floor(c / g) rises with c and falls with g: some is below 1 only if the least one is
    if cluster.size and np.floor(cluster.min() / g.max()) < 1:
        few = replicas < 1
        if which is None:
            short = _without_replica(np.take(t["memok"], cols, axis=1), z)
        else:  # the contenders' (``timing``)
            short = np.take(t["short_which"], cols, axis=1)
        np.copyto(score, short, where=few)
    best = np.argmax(score, axis=0) if which is None else _first_max(score)
    return best if which is None else which[best]


def _without_replica(memok: np.ndarray, z: np.ndarray) -> np.ndarray:
    """The score of a candidate without a whole replica: -1e9 - 1 - 1e6 if it fits memory,
    else its fallback score z - 1e6 (see ``choose``)."""
    return np.where(memok, -1e9 - 1.0 - 1e6, z - 1e6)


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


def choose(
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
    group = cand["group"]
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


def select_train(
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
    (candidates on rows, designs on columns; the score is the one ``choose`` documents)."""
    h = {k: v[None, :] for k, v in hw.items()}
    tp, pp = cand["tp"][:, None], cand["pp"][:, None]
    cl = cluster[None, :]
    _links(d, h, tp, pp, cl)
    cp = cp_of(d["workload"])
    group = tp * pp * cp  # a replica spans tp x pp x cp GPUs
    replicas = np.floor(cl / group)
    searched_ep = "ep" in cand and bool(np.any(cand["ep"] != 1))
    if searched_ep:  # workload.ep auto: experts over ep of the data x context-parallel ranks
        h["ep"] = cand["ep"][:, None]
    r = train(d, h, a, s, (tp, pp), batch, replicas)
    usable = h["hbm_gb_per_gpu"] * 1e9 * tech(d, "hbm_usable_fraction")
    mem_ratio = r["mem_need_bytes"] / np.maximum(usable, 1.0)  # no HBM: finite, far above 1
    fits = (mem_ratio <= 1) & (replicas >= 1)
    if searched_ep:  # the expert-parallel group is a divisor of the dp x cp ranks
        ranks = np.maximum(replicas, 1.0) * cp
        fits = fits & (np.fmod(ranks, h["ep"]) == 0)
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
