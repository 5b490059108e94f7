"""Poisson arrivals at prefill and decode pools (objectives/perf/pools.py ``open_pools``): the
mean latencies by hand (Pollaczek-Khinchine, Erlang C, Little), the limits, the solved rate."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from objectives.errors import ContextError
from objectives.perf import evaluate_perf
from objectives.perf.pools import (
    decode_ladder,
    kv_bytes_per_request,
    nic_bytes_per_s,
    pool_design,
    pools_parts,
)
from objectives.presets import resolve_context
from tests.objectives.perf import test_pools as pools

#: test_pools' workload and pools (prefill on H200, decode on B200), open, without its SLOs
WL: dict[str, Any] = {**pools.WL, **pools.POOLS, "arrivals": "poisson", "ttft_slo_s": None,
                      "tpot_slo_s": None}  # fmt: skip


def design(**wl: Any) -> dict[str, Any]:
    return resolve_context({"gpu": "b200", "cluster_size": 64, "workload": {**WL, **wl}})


def perf(**wl: Any) -> dict[str, float]:
    return {k: float(v) for k, v in evaluate_perf(design(**wl)).items()}


def _erlang_c(c: int, a: float) -> float:
    """Erlang C by the Erlang B recursion B(k) = a B(k-1) / (k + a B(k-1)) (no gamma function)."""
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return b / (1 - a / c * (1 - b))


def _little_by_hand(r: float, out: float, bk: list[float], tk: list[float]) -> tuple[float, float]:
    """B = r L t(B) with t piecewise linear through (bk, tk): walk the segments (a scalar
    solver of its own, not the model's)."""
    if r * out * tk[0] <= bk[0]:
        return r * out * tk[0], tk[0]
    for i in range(1, len(bk)):
        b0, t0, b1, t1 = bk[i - 1], tk[i - 1], bk[i], tk[i]
        if r * out * t1 <= b1:
            beta = (t1 - t0) / (b1 - b0) if b1 > b0 else 0.0
            b = r * out * (t0 - beta * b0) / (1 - r * out * beta)
            return b, t0 + beta * (b - b0)
    raise AssertionError("unstable")


@pytest.mark.parametrize("dispatch", ["random", "shortest_queue"])
def test_mean_latencies_at_a_given_rate_by_hand(dispatch):
    """At 60 requests/s with mean latencies: TTFT = the prefill pool's one-prompt TTFT + the KV
    transfer + the M/G/1 mean wait rho (1 + cv^2) X / (2 (1 - rho)) at each prefill replica +
    the Erlang-C mean wait for a decode slot; TPOT = t(B) with B from Little's law B = r L t(B),
    t through the decode replica's TPOT at batches 1, 2, 4, ... its saturated batch c."""
    lam, cv_in, cv_out = 60.0, 0.5, 0.8
    wl = {"arrival_rate_per_s": lam, "latency_statistic": "mean", "input_tokens_cv": cv_in,
          "output_tokens_cv": cv_out, "dispatch": dispatch}  # fmt: skip
    got = perf(**wl)
    d = design(**wl)
    pre, dec, p, dd = pools_parts(d, evaluate_perf)
    bk, tk = decode_ladder(dec, dd, evaluate_perf)
    n_p, n_d, c = float(p["replicas"][0]), float(dd["replicas"][0]), float(dd["batch"][0])
    x = n_p * 2048 / float(p["tokens_per_s"][0])  # s of one replica per prompt
    rho = lam / n_p * x
    w_p = rho * (1 + cv_in**2) * x / (2 * (1 - rho))  # Pollaczek-Khinchine, one replica
    if dispatch == "shortest_queue":  # one queue for the n_p prefill replicas: M/G/n_p
        k = int(n_p)
        w_p = _erlang_c(k, k * rho) * x / (k - k * rho) * (1 + cv_in**2) / 2
    r, L = lam / n_d, 256
    b, t_b = _little_by_hand(r, L, list(bk[:, 0]), list(tk[:, 0]))
    hold = L * t_b
    k = int(n_d) if dispatch == "shortest_queue" else 1  # the decode slots pooled: M/G/(k c)
    w_d = _erlang_c(int(k * c), k * b) * hold / (k * c - k * b) * (1 + cv_out**2) / 2
    kv = float(kv_bytes_per_request(d["workload"]))
    bw = min(float(p["gpus_per_replica"][0] * nic_bytes_per_s(pre)),
             float(dd["gpus_per_replica"][0] * nic_bytes_per_s(dec)))  # fmt: skip
    ttft = float(p["ttft_s"][0]) + kv / bw + w_p + w_d
    assert 0.05 < rho < 0.95 and 1 < b < c  # a load where both queues matter
    assert got["ttft_s"] == pytest.approx(ttft, rel=1e-9)
    assert got["tpot_s"] == pytest.approx(t_b, rel=1e-9)
    assert got["batch"] == pytest.approx(b, rel=1e-9)
    assert got["tokens_per_s"] == pytest.approx(lam * L, rel=1e-12)
    assert got["load_served_fraction"] == 1.0 and got["slo_met"] == 1.0


@pytest.mark.parametrize("model", ["deepseek-v3", "llama3-405b"])
def test_the_open_decode_replica_is_the_saturated_one_at_its_own_batch(model):
    """The ladder times the replica the saturated decode pool chose (its tp, pp, ep, attention
    DP pinned): its last point is that pool's TPOT; and the TPOT the open system reports at its
    mean batch B is the decode replica's own at a pinned batch near B (within 5 %: the
    interpolation), for a mixture of experts too, whose step grows concavely with the batch."""
    wl = {"model": model, "arrival_rate_per_s": 20.0, "latency_statistic": "mean",
          "input_tokens": 1024, "decode_pool": {}, "prefill_pool": {"gpu": "h200"}}  # fmt: skip
    if model == "deepseek-v3":
        wl["precision"] = "fp8"
    got = perf(**wl)
    _, dec, _, dd = pools_parts(design(**wl), evaluate_perf)
    bk, tk = decode_ladder(dec, dd, evaluate_perf)
    assert tk[-1, 0] == pytest.approx(float(dd["tpot_s"][0]), rel=1e-9)
    b = round(got["batch"])
    assert 2 <= b < float(dd["batch"][0])
    pinned = {k: int(dd[k][0]) for k in ("tp", "pp", "ep")}
    pinned["attention_dp"] = bool(dd["attention_dp"][0])
    own = evaluate_perf({**dec, "workload": {**dec["workload"], **pinned, "batch": b}})
    assert got["tpot_s"] == pytest.approx(float(np.ravel(own["tpot_s"])[0]), rel=0.05)
    assert got["batch"] == pytest.approx(20.0 / float(dd["replicas"][0]) * 256 * got["tpot_s"])


def test_light_load_is_the_idle_latency_and_latency_grows_with_load():
    sat = perf(arrivals="saturated", ttft_slo_s=None)
    rates = [0.01, 20.0, 60.0, 90.0]
    runs = [perf(arrival_rate_per_s=r) for r in rates]
    d = design(arrival_rate_per_s=0.01)
    _, dec, p, _ = pools_parts(d, evaluate_perf)
    one = evaluate_perf({**dec, "workload": {**dec["workload"], "batch": 1}})
    idle = perf(arrival_rate_per_s=0.01, latency_statistic="mean")  # means: no spread
    assert idle["tpot_s"] == pytest.approx(float(np.ravel(one["tpot_s"])[0]), rel=1e-3)
    assert runs[0]["ttft_s"] == pytest.approx(float(p["ttft_s"][0]) + runs[0]["kv_transfer_s"],
                                              rel=1e-3)  # fmt: skip
    for a, b in zip(runs, runs[1:], strict=False):
        assert b["ttft_s"] > a["ttft_s"] and b["tpot_s"] > a["tpot_s"] and b["batch"] > a["batch"]
    assert all(r["tokens_per_s"] < sat["tokens_per_s"] for r in runs)


def test_a_load_beyond_the_pools_is_served_at_their_capacity_and_misses():
    sat = perf(arrivals="saturated", ttft_slo_s=None)
    cap = sat["tokens_per_s"] / 256
    over = perf(arrival_rate_per_s=2 * cap)
    assert over["tokens_per_s"] == pytest.approx(sat["tokens_per_s"], rel=1e-12)
    assert over["load_served_fraction"] == pytest.approx(0.5, rel=1e-12)
    assert over["slo_met"] == 0.0 and math.isfinite(over["ttft_s"])


@pytest.mark.parametrize("slo", [{"ttft_slo_s": 0.5}, {"ttft_slo_s": 2.0, "tpot_slo_s": 0.02}])
def test_the_solved_rate_is_the_largest_meeting_the_slos(slo):
    """At the solved rate the binding SLO percentile sits on its bound; 1 % more load breaks it."""
    got = perf(**slo)
    lam = got["tokens_per_s"] / 256
    assert got["slo_met"] == 1.0 and got["ttft_s"] <= slo["ttft_slo_s"] * (1 + 1e-9)
    bound = [got["ttft_s"] / slo["ttft_slo_s"], got["tpot_s"] / slo.get("tpot_slo_s", np.inf)]
    assert max(bound) == pytest.approx(1.0, rel=1e-6)
    more = perf(**{k: None for k in slo}, arrival_rate_per_s=lam * 1.01)
    assert (more["ttft_s"] > slo["ttft_slo_s"]) or (more["tpot_s"] > slo.get("tpot_slo_s", 9))


def test_the_pools_run_saturated_under_the_open_system():
    """Each pool is evaluated at saturation without the SLOs, which bind the open system."""
    d = design(ttft_slo_s=0.5, tpot_slo_s=0.02)
    for which in ("prefill", "decode"):
        w = pool_design(d, which, 8)["workload"]
        assert w["arrivals"] == "saturated" and w["ttft_slo_s"] is None
        assert w["tpot_slo_s"] is None and w["arrival_rate_per_s"] is None


def test_poisson_pools_need_an_slo_or_a_rate():
    with pytest.raises(ContextError, match="TTFT SLO or an arrival_rate_per_s"):
        evaluate_perf(design())
