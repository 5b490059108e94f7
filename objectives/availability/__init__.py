"""Availability of an AI cluster: failure rates, blast radius, hot spares and training goodput.

``evaluate_availability(design)`` takes the model-parallel replica (tensor x pipeline group) from
the performance model, because a failure anywhere in a replica stops the whole replica: that is
the blast radius. Failed GPUs are replaced by hot spares over reconfigurable optics in minutes
while they are repaired (hours to days); with no spare left the replica waits for a repair.
``simulate_availability`` runs the same design through a Monte Carlo year, for distributions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import broadcast, builtin_evaluator, float_values, tech, value
from objectives.availability.closed_form import (
    capacity_availability,
    nines,
    training_goodput,
)
from objectives.availability.rates import component_fit, gpu_rates_per_hour
from objectives.availability.simulate import simulate_capacity
from objectives.availability.spares import capacity_quantile, provisioned_spares
from objectives.errors import ContextError
from objectives.units import HOURS_PER_DAY, HOURS_PER_YEAR

__all__ = [
    "METRICS",
    "capacity_availability",
    "component_fit",
    "delivered_fraction",
    "evaluate_availability",
    "simulate_availability",
    "simulate_capacity",
    "training_goodput",
]

SECONDS_PER_HOUR = 3600.0

METRICS: dict[str, tuple[str, str]] = {
    "gpu_failures_per_year": (
        "1/yr",
        "hardware failures per GPU-year needing repair, incl. its host and network share",
    ),
    "software_faults_per_gpu_year": ("1/yr", "software faults per GPU-year, cleared by a restart"),
    "cluster_failures_per_day": ("1/day", "hardware failures per day over the serving GPUs"),
    "interruptions_per_day": ("1/day", "replica interruptions per day, hardware and software"),
    "blast_radius_gpus": (
        "GPUs",
        "GPUs stopped by one failure: the model-parallel replica (tp x pp)",
    ),
    "blast_radius_fraction": ("1", "share of the cluster's GPUs (= compute) one failure stops"),
    "replica_mttf_h": ("h", "mean time between interruptions of one replica"),
    "spares": (
        "GPUs",
        "hot spares, ceil(spare_fraction x cluster_size) + floor(spare_silicon_fraction x "
        "cluster_size)",
    ),
    "mean_gpus_in_repair": ("GPUs", "expected GPUs away for repair at any time"),
    "spare_shortfall_probability": (
        "1",
        "fraction of time more GPUs are in repair than there are spares",
    ),
    "capacity_availability": ("1", "expected fraction of the replicas serving"),
    "nines": ("nines", "-log10(1 - capacity_availability), capped at 12"),
    "goodput_fraction": (
        "1",
        "useful fraction of wall time of one training job on the whole cluster",
    ),
    "checkpoint_interval_h": (
        "h",
        "Young-Daly optimal compute time between checkpoints for that job",
    ),
    "job_mtti_h": ("h", "mean time to interruption of a training job on the whole cluster"),
    "delivered_fraction": (
        "1",
        "share of the full-load tokens actually delivered: goodput_fraction for training, "
        "capacity_availability for serving",
    ),
    "capacity_p99": (
        "1",
        "share of the replicas serving at the 1 % worst time: the 99th percentile of GPUs in "
        "repair less the spares, each taking a replica down (objectives/availability/spares.py)",
    ),
    "delivered_tokens_per_s_per_mw": (
        "tokens/s/MW",
        "perf.tokens_per_s x delivered_fraction per MW of perf.facility_power_w (IT x PUE): "
        "what a site of fixed power serves at the SLO",
    ),
    "delivered_tokens_per_joule": (
        "tokens/J",
        "perf.tokens_per_joule x delivered_fraction: the cluster draws its running power "
        "through restarts and re-computed work, so lost work costs energy too",
    ),
}


def replica_shape(
    design: Mapping[str, Any], perf: Mapping[str, Any] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(gpus per replica, replicas) chosen by the performance model for this design (its
    ``perf`` metrics, computed when not given)."""
    if perf is None:
        from objectives.perf import evaluate_perf  # the perf model owns the parallelism choice

        perf = evaluate_perf(design)
    return perf["gpus_per_replica"], perf["replicas"]


def _checkpoint_h(design: Mapping[str, Any]) -> np.ndarray:
    """Time to write the full training state (weights + optimizer) once."""
    model = design["workload"]["model"]
    try:
        params = float(model["params_b"]) * 1e9
    except (KeyError, TypeError, ValueError):
        raise ContextError("workload.model.params_b", "needed for the checkpoint size") from None
    nbytes = params * tech(design, "training_state_bytes_per_param")
    return nbytes / (tech(design, "checkpoint_write_tbps") * 1e12) / SECONDS_PER_HOUR


def _recovery_times_h(design: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {
        "mttr_h": tech(design, "repair_mttr_h"),
        "swap_h": tech(design, "spare_swap_s") / SECONDS_PER_HOUR,
        "restart_h": tech(design, "replica_restart_s") / SECONDS_PER_HOUR,
    }


@builtin_evaluator(metrics=METRICS, needs=("perf",))
def evaluate_availability(
    design: Mapping[str, Any], *, perf: Mapping[str, Any] | None = None
) -> dict[str, np.ndarray]:
    """Failure rates, blast radius, spare-backed capacity availability and training goodput.

    ``perf``: the perf metrics of the same designs (the replica a failure stops, tokens per
    joule); the engine passes them, a direct call without them computes them.
    """
    if perf is None:
        from objectives.perf import evaluate_perf

        perf = evaluate_perf(design)
    return _evaluate_availability(float_values(design), perf)


def delivered_fraction(
    design: Mapping[str, Any], availability: Mapping[str, np.ndarray]
) -> np.ndarray:
    """What failures leave of full-load output: one synchronous training job loses its goodput
    (every failure stops it), a serving cluster the replicas that are down."""
    train = str(design["workload"].get("phase")) == "train"
    return availability["goodput_fraction" if train else "capacity_availability"]


def _evaluate_availability(
    design: Mapping[str, Any], perf: Mapping[str, Any]
) -> dict[str, np.ndarray]:
    hw, sw = gpu_rates_per_hour(design)
    n = value(design, "cluster_size")
    spares = provisioned_spares(design)
    group, replicas = replica_shape(design, perf)
    times = _recovery_times_h(design)
    cap = capacity_availability(
        replicas=replicas,
        gpus_per_replica=group,
        spares=spares,
        hw_rate_h=hw,
        sw_rate_h=sw,
        **times,
    )
    train = training_goodput(
        gpus=n,
        spares=spares,
        hw_rate_h=hw,
        sw_rate_h=sw,
        mttr_h=times["mttr_h"],
        swap_h=times["swap_h"],
        restart_h=tech(design, "training_restart_s") / SECONDS_PER_HOUR,
        checkpoint_h=_checkpoint_h(design),
    )
    out = {
        "gpu_failures_per_year": hw * HOURS_PER_YEAR,
        "software_faults_per_gpu_year": sw * HOURS_PER_YEAR,
        "cluster_failures_per_day": n * hw * HOURS_PER_DAY,
        # A replica is interrupted by a fault of one of its GPUs; an idle GPU interrupts none.
        "interruptions_per_day": replicas * group * (hw + sw) * HOURS_PER_DAY,
        "blast_radius_gpus": group,
        "blast_radius_fraction": group / np.maximum(n, 1.0),
        "replica_mttf_h": 1.0 / (group * (hw + sw)),
        "spares": spares,
        "mean_gpus_in_repair": cap["mean_gpus_in_repair"],
        "spare_shortfall_probability": cap["spare_shortfall_probability"],
        "capacity_availability": cap["capacity_availability"],
        "nines": nines(cap["capacity_availability"]),
        "goodput_fraction": train["goodput_fraction"],
        "checkpoint_interval_h": train["checkpoint_interval_h"],
        "job_mtti_h": train["job_mtti_h"],
    }
    out["capacity_p99"] = capacity_quantile(replicas, spares, cap["mean_gpus_in_repair"])
    out["delivered_fraction"] = delivered_fraction(design, out)
    out["delivered_tokens_per_joule"] = (
        np.asarray(perf["tokens_per_joule"], float) * out["delivered_fraction"]
    )
    facility_mw = np.maximum(np.asarray(perf["facility_power_w"], float), 1e-9) / 1e6
    out["delivered_tokens_per_s_per_mw"] = (
        np.asarray(perf["tokens_per_s"], float) * out["delivered_fraction"] / facility_mw
    )
    return broadcast(out)


def simulate_availability(
    design: Mapping[str, Any], *, years: float = 1.0, runs: int = 200, seed: int | None = 0
) -> dict[str, np.ndarray]:
    """Monte Carlo of one (scalar) design: per-run capacity fractions and failure counts.

    ``np.percentile(result["capacity_fraction"], 1)`` is the p99 capacity over a year.
    """
    hw, sw = gpu_rates_per_hour(design)
    group, replicas = replica_shape(design)
    spares = provisioned_spares(design)
    scalars = {"hw": hw, "sw": sw, "group": group, "replicas": replicas, "spares": spares}
    for name, arr in scalars.items():
        if np.size(arr) != 1:
            raise ContextError(name, "simulate_availability takes one design, not a batch")
    times = {k: float(v) for k, v in _recovery_times_h(design).items()}
    return simulate_capacity(
        replicas=int(replicas),
        gpus_per_replica=int(group),
        spares=int(spares),
        hw_rate_h=float(hw),
        sw_rate_h=float(sw),
        years=years,
        runs=runs,
        seed=seed,
        **times,
    )


evaluate_availability.simulate = simulate_availability  # type: ignore[attr-defined]
