"""Monte Carlo of failures, spare swaps and repairs over a year, vectorized over runs.

It exists to check the closed form without its shortcuts, and to give distributions (p99
capacity) rather than means. Each run draws Poisson hardware failures (uniform replica, exponential
repair) and software faults; it tracks the spare pool exactly (a failure takes a free spare, else
its slot waits and is refilled first-come-first-served by the next GPU back from repair), turns
everything into outage intervals per replica and measures their union. All runs are processed
together as flat, sorted event arrays: the only Python loop is none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from objectives.errors import ContextError
from objectives.units import HOURS_PER_YEAR

BURN_IN_MTTRS = 20.0  # start this many mean repair times early so the spare pool is stationary
#: Bounded memory: each simulated failure event costs ~150 bytes over the arrays below, so this
#: many expected events is ~3 GB. Larger requests are refused before anything is drawn.
MAX_EVENTS = 2e7


def _rank_within(groups: np.ndarray) -> np.ndarray:
    """0, 1, 2 ... within each run of equal values of a sorted integer array."""
    idx = np.arange(groups.size)
    starts = np.searchsorted(groups, groups, side="left")
    return idx - starts


def _union_length(
    gid: np.ndarray, start: np.ndarray, end: np.ndarray, span: float
) -> tuple[np.ndarray, np.ndarray]:
    """Length of the union of [start, end) per group id (ids sorted later here).

    Segmented running maximum by offsetting each group by ``gid x span`` (ends <= span - 1).
    Returns the sorted gids and the newly covered length of each interval.
    """
    order = np.lexsort((start, gid))
    gid, start, end = gid[order], start[order], end[order]
    base = gid.astype(float) * span
    s, e = base + start, base + end
    reach = np.maximum.accumulate(e)
    prev = np.concatenate([[-np.inf], reach[:-1]])
    covered = np.maximum(e - np.maximum(s, prev), 0.0)
    return gid, covered


@dataclass(frozen=True)
class _Failures:
    """Every run's hardware failures on [-burn, horizon), sorted by (run, time): the failed
    GPU's replica and the time it returns from repair."""

    run: np.ndarray
    t: np.ndarray
    replica: np.ndarray
    back: np.ndarray


def _hardware_failures(
    rng: np.random.Generator,
    *,
    runs: int,
    active: int,
    replicas: int,
    rate_h: float,
    mttr_h: float,
    horizon: float,
    burn: float,
) -> _Failures:
    """Poisson counts per run, uniform times given the count, a uniform replica and an
    exponential repair each (drawn in this order: the seed's stream is part of the result)."""
    n_hw = rng.poisson(active * rate_h * (horizon + burn), size=runs)
    run = np.repeat(np.arange(runs), n_hw)
    t = rng.uniform(-burn, horizon, size=run.size)
    order = np.lexsort((t, run))
    t = t[order]
    replica = rng.integers(0, replicas, size=run.size)
    back = t + rng.exponential(mttr_h, size=run.size)  # time the GPU returns from repair
    return _Failures(run, t, replica, back)


def _spare_queue(
    f: _Failures, *, runs: int, spares: int, horizon: float, burn: float
) -> tuple[np.ndarray, np.ndarray]:
    """Which failures find a free spare, and when each one that does not gets its slot back:
    the pool is tracked exactly, waiting slots refilled first-come-first-served by returns."""
    run, t = f.run, f.t
    # Sortable keys: each run owns a band of width `band` on one time axis.
    band = horizon + burn + (f.back.max() - horizon if f.back.size else 0.0) + 1.0
    arr_key = run * band + t
    dep_order = np.argsort(run * band + f.back, kind="stable")
    dep_key = (run * band + f.back)[dep_order]
    dep_run = run[dep_order]
    run_floor = np.arange(runs) * band - burn - 0.5  # below every key of that run
    first_arr = np.searchsorted(arr_key, run_floor)
    first_dep = np.searchsorted(dep_key, run_floor)

    # GPUs in repair just before each failure, and just before each return.
    k_at_fail = (
        np.arange(run.size) - first_arr[run] - (np.searchsorted(dep_key, arr_key) - first_dep[run])
    )
    k_at_back = (np.searchsorted(arr_key, dep_key) - first_arr[dep_run]) - (
        np.arange(dep_key.size) - first_dep[dep_run]
    )
    has_spare = k_at_fail < spares
    # Slots that wait (no spare) leave the queue FCFS at returns that find a waiting slot.
    w_run = run[~has_spare]
    exits = k_at_back > spares
    x_run, x_t = dep_run[exits], dep_key[exits] - dep_run[exits] * band
    w_code = w_run * (run.size + 1) + _rank_within(w_run)
    x_code = x_run * (run.size + 1) + _rank_within(x_run)
    if x_code.size:
        pos = np.minimum(np.searchsorted(x_code, w_code), x_code.size - 1)
        w_end = np.where(x_code[pos] == w_code, x_t[pos], np.inf)  # unmatched: still waiting
    else:
        w_end = np.full(w_code.size, np.inf)
    return has_spare, w_end


def simulate_capacity(
    *,
    replicas: int,
    gpus_per_replica: int,
    spares: int,
    hw_rate_h: float,
    sw_rate_h: float,
    mttr_h: float,
    swap_h: float,
    restart_h: float,
    years: float = 1.0,
    runs: int = 200,
    seed: int | None = 0,
) -> dict[str, np.ndarray]:
    """Per-run results of ``runs`` independent years: capacity fraction and event counts."""
    rng = np.random.default_rng(seed)
    big_r, s = int(replicas), int(spares)
    horizon = float(years) * HOURS_PER_YEAR
    if big_r < 1:
        zeros = np.zeros(runs)
        return {"capacity_fraction": zeros, "hardware_failures": zeros, "software_faults": zeros}
    active = big_r * int(gpus_per_replica)
    burn = BURN_IN_MTTRS * mttr_h
    expected = runs * active * (hw_rate_h * (horizon + burn) + sw_rate_h * horizon)
    if not expected <= MAX_EVENTS:
        raise ContextError(
            "runs",
            f"{runs} runs x {years:g} year(s) of {active} GPUs expect about {expected:.2g} "
            f"failure events (at most {MAX_EVENTS:.0e} fit in memory); use fewer runs or years",
        )
    f = _hardware_failures(rng, runs=runs, active=active, replicas=big_r, rate_h=hw_rate_h,
                           mttr_h=mttr_h, horizon=horizon, burn=burn)  # fmt: skip
    has_spare, w_end = _spare_queue(f, runs=runs, spares=s, horizon=horizon, burn=burn)
    waits = ~has_spare

    # Software faults on [0, horizon): restart outages.
    n_sw = rng.poisson(active * sw_rate_h * horizon, size=runs)
    sw_run = np.repeat(np.arange(runs), n_sw)
    sw_t = rng.uniform(0.0, horizon, size=sw_run.size)
    sw_rep = rng.integers(0, big_r, size=sw_run.size)

    o_run = np.concatenate([f.run[has_spare], f.run[waits], sw_run])
    o_rep = np.concatenate([f.replica[has_spare], f.replica[waits], sw_rep])
    o_start = np.concatenate([f.t[has_spare], f.t[waits], sw_t])
    o_end = np.concatenate([f.t[has_spare] + swap_h, w_end, sw_t + restart_h])
    o_start, o_end = np.clip(o_start, 0.0, horizon), np.clip(o_end, 0.0, horizon)
    keep = o_end > o_start
    gid = o_run[keep].astype(np.int64) * big_r + o_rep[keep]
    gid, covered = _union_length(gid, o_start[keep], o_end[keep], horizon + 1.0)
    down = np.bincount(gid // big_r, weights=covered, minlength=runs)
    in_window = f.t >= 0.0
    return {
        "capacity_fraction": 1.0 - down / (big_r * horizon),
        "hardware_failures": np.bincount(f.run[in_window], minlength=runs).astype(float),
        "software_faults": n_sw.astype(float),
    }
