"""Cost of heterogeneous prefill/decode pools (objectives.perf.pools): each pool priced as the
homogeneous cluster it is, with its own GPU, then summed.

Cluster lines (installed GPUs, network, capex, energy, maintenance, TCO) are the sums of the
two pools'; per-GPU lines (die, HBM, package, module, price, system share) are their means over
the installed GPUs (a 0/1 check: 1 if both pools pass), so ``cluster_capex = installed x (gpu
price + system share) + network`` still adds up; per-token and per-GPU-hour figures follow
from the sums and the system's tokens/s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from objectives._evaluator import broadcast, tech
from objectives.cost.cluster import usd_per_gpu_hour, usd_per_mtok

_SUMS = (
    "installed_gpus",
    "network_cost_usd",
    "cluster_capex_usd",
    "energy_cost_usd",
    "maintenance_cost_usd",
    "tco_usd",
)

_FLAGS = ("reticle_fits", "interposer_fits", "hbm_fits_generation")

Breakdown = Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, np.ndarray]]


def pools_cost(
    design: Mapping[str, Any], perf: Mapping[str, Any], breakdown: Breakdown
) -> dict[str, np.ndarray]:
    """All cost metrics of a pools design given the system's perf metrics (``breakdown`` is
    ``objectives.cost.cost_breakdown``, priced once per pool)."""
    from objectives.perf import evaluate_perf  # the perf model prices nothing; no cycle
    from objectives.perf.pools import at_load, pools_parts
    from objectives.perf.workload import serving_of

    shape = np.shape(perf["tokens_per_s"])
    split = {**design, "prefill_gpus": np.asarray(perf["prefill_gpus"], dtype=float)}
    pre, dec, p, d = pools_parts(split, evaluate_perf)
    # each pool's power at the system's load, as perf reports the whole's
    req = np.asarray(perf["tokens_per_s"], dtype=float).reshape(-1)
    req = req / serving_of(design["workload"])[0].output_tokens
    rates = (perf["prefill_requests_per_s"], perf["decode_requests_per_s"])
    rates_1d = (np.asarray(rates[0], float).reshape(-1), np.asarray(rates[1], float).reshape(-1))
    precision = str(design["workload"].get("precision"))
    p, d = at_load((pre, dec), (p, d), rates_1d, req, precision)
    cp = {k: v.reshape(-1) for k, v in breakdown(pre, p).items()}
    cd = {k: v.reshape(-1) for k, v in breakdown(dec, d).items()}
    n_p, n_d = cp["installed_gpus"], cd["installed_gpus"]
    out: dict[str, Any] = {}
    for k in cp:
        if k in _SUMS:
            out[k] = cp[k] + cd[k]
        elif k == "network_tiers":
            out[k] = np.maximum(cp[k], cd[k])
        elif k in _FLAGS:  # 1 only if both pools' GPUs pass
            out[k] = np.minimum(cp[k], cd[k])
        else:  # a per-GPU line: the mean over the installed GPUs
            out[k] = (n_p * cp[k] + n_d * cd[k]) / (n_p + n_d)
    life = tech(dec, "lifetime_years")
    gpus = pre["cluster_size"] + dec["cluster_size"]
    pflops = pre["cluster_size"] * p["tflops_per_gpu"]
    pflops = pflops + dec["cluster_size"] * d["tflops_per_gpu"]
    out["usd_per_pflops"] = out["tco_usd"] / np.maximum(pflops / 1000.0, 1e-12)
    out["usd_per_gpu_hour"] = usd_per_gpu_hour(
        capex_usd=out["cluster_capex_usd"],
        opex_usd=out["energy_cost_usd"] + out["maintenance_cost_usd"],
        gpus=gpus,
        lifetime_years=life,
        cost_of_capital_per_year=tech(dec, "cost_of_capital_per_year"),
    )
    out["usd_per_mtok"] = usd_per_mtok(
        out["tco_usd"], np.asarray(perf["tokens_per_s"], dtype=float).reshape(-1), life
    )
    return broadcast({k: np.asarray(v, dtype=float).reshape(shape) for k, v in out.items()})
