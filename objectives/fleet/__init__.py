"""A mixed fleet: one cluster serving a request mix over several models, each with its SLO.

Allocation granularity is the paper's fourth claimed benefit: a cluster of big GPUs hands out
capacity in big pieces. Here each model m of the mix (``MIX``: Llama-3-8B, -70B, -405B) is
served by replicas of g_m GPUs delivering t_m tokens/s each, the best the performance model
finds for the design at m's own SLO; the fleet must serve the mix in its token shares s_m.
Replicas are bin-packed onto the cluster's N GPUs:

- the continuous optimum serves x* = N / sum_m (s_m g_m / t_m) tokens/s of the mix;
- whole replicas r_m = floor(x* s_m / t_m) are placed, then the leftover GPUs are given, one
  replica at a time, to the model that limits the mix (``ROUNDS`` rounds);
- the fleet serves X = min_m r_m t_m / s_m; the GPUs beyond the sum_m X s_m g_m / t_m it
  needs (idle GPUs and replicas beyond the limiting model's) are **stranded compute**; the HBM
  its replicas leave unused plus the HBM of GPUs no replica holds is **stranded HBM**.

Cost and power of the mix are each model's cluster figures weighted by the share of GPUs its
replicas hold (the hardware is the same; only the load differs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import broadcast, builtin_evaluator, tech, value
from objectives.presets import model_presets

#: The mix: model preset -> the technology keys of its token share and TPOT SLO.
MIX = {
    "llama3-8b": "llama3_8b",
    "llama3-70b": "llama3_70b",
    "llama3-405b": "llama3_405b",
}
#: Rounds of giving leftover GPUs to the model that limits the mix.
ROUNDS = 4

METRICS: dict[str, tuple[str, str]] = {
    "mix_tokens_per_s": ("tokens/s", "output tokens/s of the whole mix, replicas bin-packed"),
    "usd_per_mtok": ("USD/Mtok", "TCO per million tokens of the mix at full load"),
    "tokens_per_s_per_mw": ("tokens/s/MW", "mix tokens/s per MW of facility power"),
    "stranded_compute_fraction": (
        "1",
        "share of the cluster's serving capacity the mix cannot use: GPUs no replica holds and "
        "replica capacity beyond the limiting model's",
    ),
    "stranded_hbm_fraction": ("1", "share of the cluster's HBM no replica uses"),
    "largest_replica_fraction": (
        "1",
        "allocation granularity: the largest model's replica as a share of the cluster",
    ),
    "models_fit": (
        "0/1",
        "1 if every model of the mix runs (perf.runnable: it fits and its step ends) and meets "
        "its SLO",
    ),
}


def _for_model(design: Mapping[str, Any], model: str, tag: str) -> dict[str, Any]:
    """The design serving ``model`` alone at its own SLO (a new workload)."""
    d = dict(design)
    wl = dict(design["workload"])
    wl["model"] = {**model_presets()[model], "name": model}
    wl["tpot_slo_s"] = float(tech(design, f"mix_{tag}_tpot_slo_s"))
    d["workload"] = wl
    return d


def pack(
    n: np.ndarray, share: list[Any], gpus: list[Any], rate: list[Any]
) -> tuple[np.ndarray, list[np.ndarray]]:
    """(mix tokens/s, replicas per model) of replicas of ``gpus[m]`` GPUs serving ``rate[m]``
    tokens/s bin-packed onto ``n`` GPUs for a mix of token ``share``s; 0 where a model has no
    replica that serves."""
    s = [np.asarray(x, float) for x in share]
    g = [np.asarray(x, float) for x in gpus]
    t = [np.maximum(np.asarray(x, float), 0.0) for x in rate]
    with np.errstate(divide="ignore", invalid="ignore"):
        need = sum(sm * gm / tm for sm, gm, tm in zip(s, g, t, strict=True))
        x = np.where(np.isfinite(need) & (need > 0), n / need, 0.0)
        reps = [np.floor(x * sm / tm + 1e-9) for sm, tm in zip(s, t, strict=True)]
        reps = [np.where(np.isfinite(r), r, 0.0) for r in reps]
        for _ in range(ROUNDS):
            left = n - sum(r * gm for r, gm in zip(reps, g, strict=True))
            served = np.stack([r * tm / sm for r, tm, sm in zip(reps, t, s, strict=True)])
            low = np.argmin(served, axis=0)
            for m in range(len(reps)):
                add = (low == m) & (g[m] <= left) & (t[m] > 0)
                reps[m] = reps[m] + add
                left = left - add * g[m]
        served = np.stack([r * tm / sm for r, tm, sm in zip(reps, t, s, strict=True)])
        mix = np.min(served, axis=0)
    return np.where(np.isfinite(mix), mix, 0.0), reps


@builtin_evaluator(metrics=METRICS)
def evaluate_fleet(design: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Mixed-fleet metrics of a (batch of) design(s); see the module docstring."""
    from objectives.cost import cost_breakdown
    from objectives.perf import evaluate_perf

    n = value(design, "cluster_size")
    share, gpus, rate, used, tco, mw, ok = [], [], [], [], [], [], []
    for model, tag in MIX.items():
        d = _for_model(design, model, tag)
        p = evaluate_perf(d)
        c = cost_breakdown(d, p)
        fits = (np.asarray(p["runnable"]) > 0) & (np.asarray(p["slo_met"]) > 0)
        reps = np.maximum(np.asarray(p["replicas"], float), 1.0)
        share.append(tech(design, f"mix_{tag}_token_share"))
        gpus.append(np.asarray(p["gpus_per_replica"], float))
        rate.append(np.where(fits, np.asarray(p["tokens_per_s"], float) / reps, 0.0))
        used.append(np.clip(np.asarray(p["memory_used_fraction"], float), 0.0, 1.0))
        tco.append(np.asarray(c["tco_usd"], float))
        mw.append(np.asarray(p["facility_power_w"], float) / 1e6)
        ok.append(fits)
    total = sum(np.asarray(s, float) for s in share)
    share = [np.asarray(s, float) / total for s in share]
    mix, reps = pack(n, share, gpus, rate)
    held = [r * g for r, g in zip(reps, gpus, strict=True)]
    weight = [h / np.maximum(n, 1.0) for h in held]
    idle = np.maximum(1.0 - sum(weight), 0.0)  # GPUs no replica holds: paid, idle
    with np.errstate(divide="ignore", invalid="ignore"):
        # GPUs the mix actually needs: each model's tokens/s over its replicas' rate per GPU
        per = zip(share, gpus, rate, strict=True)
        needed = sum(np.where(t > 0, mix * s * g / t, 0.0) for s, g, t in per)
        stranded = np.where(mix > 0, 1.0 - needed / np.maximum(n, 1.0), 1.0)
    # cost and power: each model's whole-cluster figure weighted by its GPUs (idle GPUs at the
    # average of the models, a conservative stand-in for their idle power)
    w = [wm + idle / len(MIX) for wm in weight]
    tco_mix = sum(wm * c for wm, c in zip(w, tco, strict=True))
    mw_mix = sum(wm * p for wm, p in zip(w, mw, strict=True))
    life_s = tech(design, "lifetime_years") * 365.25 * 86400
    tokens = mix * life_s
    out = {
        "mix_tokens_per_s": mix,
        "usd_per_mtok": tco_mix * 1e6 / np.maximum(tokens, 1.0),
        "tokens_per_s_per_mw": mix / np.maximum(mw_mix, 1e-12),
        "stranded_compute_fraction": np.clip(stranded, 0.0, 1.0),
        "stranded_hbm_fraction": 1.0 - sum(wm * u for wm, u in zip(weight, used, strict=True)),
        # a replica larger than the cluster (no replica fits: models_fit 0) is all of it
        "largest_replica_fraction": np.minimum(
            np.max(np.stack(np.broadcast_arrays(*gpus)), axis=0) / np.maximum(n, 1.0), 1.0
        ),
        "models_fit": np.logical_and.reduce(np.broadcast_arrays(*ok)).astype(float),
    }
    return broadcast(out)
