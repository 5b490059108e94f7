"""Network, per-GPU system share and TCO arithmetic, as functions of numpy arrays."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from objectives.fabric.cost import network_cost, packet_fabric_cost
from objectives.fabric.topology import clos_tiers, packet_radix
from objectives.units import HOURS_PER_YEAR, SECONDS_PER_YEAR

__all__ = [
    "clos_tiers",
    "energy_cost",
    "installed_gpus",
    "network_cost",
    "packet_fabric_cost",
    "packet_radix",
    "capital_recovery_factor",
    "system_share",
    "usd_per_gpu_hour",
    "usd_per_mtok",
]


def installed_gpus(cluster_size: ArrayLike, spare_fraction: ArrayLike) -> np.ndarray:
    """Serving GPUs plus ceil(spare_fraction x serving) hot spares: the hardware paid for."""
    n = np.asarray(cluster_size, float)
    return n + np.ceil(np.asarray(spare_fraction, float) * n - 1e-9)


def system_share(
    *,
    gpu_power_w: ArrayLike,
    it_power_w_per_gpu: ArrayLike,
    host_usd_per_gpu_kw: ArrayLike,
    facility_capex_usd_per_kw: ArrayLike,
    lifetime_years: ArrayLike,
    facility_lifetime_years: ArrayLike,
) -> tuple[np.ndarray, np.ndarray]:
    """(host, facility) USD per installed GPU.

    Host capacity (CPUs, DRAM, NICs, PSUs, chassis) is sized by the GPU power it feeds, so four
    quarter-power GPUs share what one full GPU needs (the GPU's own module is priced with the
    GPU: objectives.cost.module). The datacentre (power delivery and cooling) is built per kW
    of IT load and lives longer than the cluster, which is charged lifetime / facility lifetime
    of it.
    """
    host = np.asarray(gpu_power_w, float) / 1000.0 * np.asarray(host_usd_per_gpu_kw, float)
    share = np.minimum(
        np.asarray(lifetime_years, float) / np.asarray(facility_lifetime_years, float), 1.0
    )
    facility = (
        np.asarray(it_power_w_per_gpu, float)
        / 1000.0
        * np.asarray(facility_capex_usd_per_kw, float)
        * share
    )
    return host, facility


def energy_cost(
    facility_power_w: ArrayLike, lifetime_years: ArrayLike, usd_per_kwh: ArrayLike
) -> np.ndarray:
    """Electricity over the lifetime at the facility power (IT x PUE) the perf model reports."""
    kwh = (
        np.asarray(facility_power_w, float)
        / 1000.0
        * np.asarray(lifetime_years, float)
        * HOURS_PER_YEAR
    )
    return kwh * np.asarray(usd_per_kwh, float)


def usd_per_mtok(
    tco_usd: ArrayLike, tokens_per_s: ArrayLike, lifetime_years: ArrayLike
) -> np.ndarray:
    """TCO per million output tokens served over the lifetime at full load.

    A cluster that serves nothing (tokens_per_s = 0, e.g. the model does not fit) must still
    give a finite number for the engine: lifetime tokens are floored at one token, so its cost
    is TCO x 1e6 per Mtok, far above any real design (perf.model_fits excludes it anyway).
    """
    tokens = np.asarray(tokens_per_s, float) * np.asarray(lifetime_years, float) * SECONDS_PER_YEAR
    return np.asarray(tco_usd, float) * 1e6 / np.maximum(tokens, 1.0)


def capital_recovery_factor(rate_per_year: ArrayLike, years: ArrayLike) -> np.ndarray:
    """The level yearly payment that repays 1 dollar over ``years`` at ``rate_per_year``:
    r / (1 - (1 + r)^-n); 1 / n at a rate of 0."""
    r = np.asarray(rate_per_year, float)
    n = np.asarray(years, float)
    safe = np.where(r > 0, r, 1.0)
    return np.where(r > 0, safe / (1.0 - (1.0 + safe) ** -n), 1.0 / n)


def usd_per_gpu_hour(
    *,
    capex_usd: ArrayLike,
    opex_usd: ArrayLike,
    gpus: ArrayLike,
    lifetime_years: ArrayLike,
    cost_of_capital_per_year: ArrayLike,
) -> np.ndarray:
    """Cost of owning one serving GPU for an hour: the cluster capex as a level yearly charge
    (capital recovery factor) plus the lifetime opex spread evenly, per GPU and hour."""
    life = np.asarray(lifetime_years, float)
    yearly = (
        np.asarray(capex_usd, float) * capital_recovery_factor(cost_of_capital_per_year, life)
        + np.asarray(opex_usd, float) / life
    )
    return yearly / np.maximum(np.asarray(gpus, float), 1.0) / HOURS_PER_YEAR
