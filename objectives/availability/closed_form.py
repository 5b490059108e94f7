"""Closed forms: expected serving capacity with hot spares, and training goodput (Young–Daly).

Capacity model. Each of the ``replicas x gpus_per_replica`` active GPUs fails (needs repair) at
rate ``hw_rate``; the failed GPU goes to repair for a mean ``mttr`` (independent repairs, an
M/G/inf queue), so the number K of GPUs in repair is Poisson with mean ``m = rate x mttr`` whatever
the repair-time distribution. A failure that finds a spare (K < S) costs its replica one optical
swap (``swap``); otherwise the slot waits until a repaired GPU comes back, so ``D = (K - S)^+``
slots are waiting and each waiting slot keeps its replica down. With D waiting slots scattered
over R replicas a given replica is clear with probability ``(1 - 1/R)^D``, whose expectation is
the Poisson probability generating function of the shortfall (exact). Swaps and software
restarts are short transient outages, Poisson per replica, so a replica is clear of them with
probability ``exp(-rate x duration)``; treating the two causes as independent is the only
approximation (the Monte Carlo in ``simulate.py`` has no such shortcut and checks it).
"""

from __future__ import annotations

import numpy as np

from objectives.availability._poisson import poisson_cdf, poisson_log_sf

MAX_NINES_UNAVAILABILITY = 1e-12  # report at most 12 nines, so the metric stays finite


def spare_count(cluster_size: np.ndarray, spare_fraction: np.ndarray) -> np.ndarray:
    """Hot spares = ceil(spare_fraction x cluster_size), robust to float round-off (0.07*100)."""
    raw = np.asarray(spare_fraction, dtype=float) * np.asarray(cluster_size, dtype=float)
    return np.maximum(np.ceil(raw - 1e-9), 0.0)


def shortfall_moments(
    spares: np.ndarray, mean_in_repair: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P(spare free at a failure), P(some slot waits), E[waiting slots]) for K ~ Poisson(m).

    E[(K-S)^+] = m P(K >= S) - S P(K > S), from k p_k = m p_{k-1}.
    """
    s = np.asarray(spares, dtype=float)
    m = np.asarray(mean_in_repair, dtype=float)
    p_free = poisson_cdf(s - 1.0, m)  # PASTA: a failure sees the time-average K
    sf = np.exp(poisson_log_sf(s, m))
    waiting = np.maximum(m * (1.0 - p_free) - s * sf, 0.0)
    return p_free, sf, waiting


def capacity_availability(
    *,
    replicas: np.ndarray,
    gpus_per_replica: np.ndarray,
    spares: np.ndarray,
    hw_rate_h: np.ndarray,
    sw_rate_h: np.ndarray,
    mttr_h: np.ndarray,
    swap_h: np.ndarray,
    restart_h: np.ndarray,
) -> dict[str, np.ndarray]:
    """Expected fraction of the replicas serving, and the spare-pool statistics behind it."""
    big_r = np.asarray(replicas, dtype=float)
    active = big_r * np.asarray(gpus_per_replica, dtype=float)
    s = np.asarray(spares, dtype=float)
    fail_rate = active * hw_rate_h  # cluster hardware failures per hour
    m = fail_rate * mttr_h
    p_free, p_short, waiting = shortfall_moments(s, m)
    # P(a given replica has no waiting slot) = E[z^D], z = 1 - 1/R, D = (K - S)^+:
    # = P(K <= S) + z^-S e^{-m(1-z)} P(K' > S), K' ~ Poisson(z m).
    safe_r = np.maximum(big_r, 1.0)
    z = 1.0 - 1.0 / safe_r
    safe_z = np.where(z > 0, z, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_tail = -s * np.log(safe_z) - m * (1.0 - z) + poisson_log_sf(s, z * m)
    tail = np.where(z > 0, np.exp(log_tail), 0.0)
    clear_of_waiting = np.minimum(poisson_cdf(s, m) + tail, 1.0)
    transient = (fail_rate * p_free * swap_h + active * sw_rate_h * restart_h) / safe_r
    availability = np.where(big_r >= 1, clear_of_waiting * np.exp(-transient), 0.0)
    return {
        "capacity_availability": availability,
        "mean_gpus_in_repair": m,
        "spare_free_probability": p_free,
        "spare_shortfall_probability": p_short,
        "mean_waiting_slots": waiting,
    }


def nines(availability: np.ndarray) -> np.ndarray:
    """-log10(unavailability), capped at 12 so a perfect design stays finite."""
    un = np.clip(1.0 - np.asarray(availability, dtype=float), MAX_NINES_UNAVAILABILITY, 1.0)
    return -np.log10(un)


def young_daly_interval(checkpoint_h: np.ndarray, mtti_h: np.ndarray) -> np.ndarray:
    """Optimal compute time between checkpoints (Daly 2006, higher-order form of Young's √(2δM)).

    τ = √(2δM)·[1 + √(δ/2M)/3 + δ/(18M)] − δ for δ < 2M, else M.
    """
    d = np.asarray(checkpoint_h, dtype=float)
    m = np.asarray(mtti_h, dtype=float)
    ratio = d / np.maximum(m, 1e-300)
    tau = np.sqrt(2.0 * d * m) * (1.0 + np.sqrt(ratio / 2.0) / 3.0 + ratio / 18.0) - d
    return np.where(ratio < 2.0, tau, m)


def daly_goodput(
    interval_h: np.ndarray, checkpoint_h: np.ndarray, mtti_h: np.ndarray, recovery_h: np.ndarray
) -> np.ndarray:
    """Useful fraction of wall time with exponential interruptions (Daly 2006, eq. 13).

    T_wall / T_solve = M e^{R/M} (e^{(τ+δ)/M} - 1) / τ.
    """
    tau = np.asarray(interval_h, dtype=float)
    m = np.maximum(np.asarray(mtti_h, dtype=float), 1e-300)
    expo = np.minimum((np.asarray(recovery_h) + 0.0) / m, 700.0)
    step = np.minimum((tau + checkpoint_h) / m, 700.0)
    return tau / (m * np.exp(expo) * np.expm1(step))


def training_goodput(
    *,
    gpus: np.ndarray,
    spares: np.ndarray,
    hw_rate_h: np.ndarray,
    sw_rate_h: np.ndarray,
    mttr_h: np.ndarray,
    swap_h: np.ndarray,
    restart_h: np.ndarray,
    checkpoint_h: np.ndarray,
) -> dict[str, np.ndarray]:
    """Goodput of one synchronous training job spanning ``gpus``, at the Young–Daly interval.

    Every failure stops the job; it restarts after ``restart_h`` plus, for hardware failures, a
    spare swap or (no spare left) the mean wait for a repaired GPU, E[(K-S)^+]/rate by Little.
    """
    n = np.asarray(gpus, dtype=float)
    hw = n * hw_rate_h
    total = hw + n * sw_rate_h
    mtti = 1.0 / np.maximum(total, 1e-300)
    p_free, _, waiting = shortfall_moments(spares, hw * mttr_h)
    hw_share = np.where(total > 0, hw / np.maximum(total, 1e-300), 0.0)
    wait_per_failure = np.where(hw > 0, waiting / np.maximum(hw, 1e-300), 0.0)
    recovery = restart_h + hw_share * (p_free * swap_h + wait_per_failure)
    tau = young_daly_interval(checkpoint_h, mtti)
    return {
        "goodput_fraction": daly_goodput(tau, checkpoint_h, mtti, recovery),
        "checkpoint_interval_h": tau,
        "job_mtti_h": mtti,
        "job_recovery_h": recovery,
    }
