"""A given load (``workload.arrival_rate_per_s``): the mean waits against exact results and
simulation, Little's law, and the latencies as the load grows to the replica's capacity."""

from __future__ import annotations

import math

import numpy as np
import pytest

from objectives.errors import ContextError
from objectives.perf import evaluate_perf
from objectives.perf.queueing import admission_wait_mean_s, fcfs_wait_mean_s
from objectives.presets import resolve_context
from tests.objectives.perf.test_perf_queueing import _erlang_c_exact


def test_mm1_mean_wait_is_exact() -> None:
    """M/M/1 (service cv 1): W_q = lambda / (mu (mu - lambda)); unstable at rho >= 1."""
    rate, service = 0.7, 1.0  # mu = 1
    exact = 0.7 / (1.0 * (1.0 - 0.7))
    assert float(fcfs_wait_mean_s(rate, service, 1.0)) == pytest.approx(exact, rel=1e-12)
    assert math.isinf(float(fcfs_wait_mean_s(rate, 2.0, 1.0)))  # rho 1.4


def _md1_mean_wait_simulated(rho: float, n: int = 400_000, seed: int = 11) -> float:
    """Lindley's recursion W' = max(0, W + X - A) for deterministic service X = 1."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rho, n)
    w, total = 0.0, 0.0
    start = n // 10
    for i in range(n):
        if i >= start:
            total += w
        w = max(0.0, w + 1.0 - gaps[i])
    return total / (n - start)


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_md1_mean_wait_against_simulation(rho: float) -> None:
    """Pollaczek-Khinchine is exact for any service time: rho / (2 (1 - rho)) at cv 0 (0.5 and
    2.0 service times); the simulated mean is within its sampling error (~2 % at rho 0.8)."""
    formula = float(fcfs_wait_mean_s(rho, 1.0, 0.0))
    assert formula == pytest.approx(rho / (2 * (1 - rho)), rel=1e-12)
    assert _md1_mean_wait_simulated(rho) == pytest.approx(formula, rel=0.04)


@pytest.mark.parametrize(("c", "a"), [(10, 8.0), (100, 90.0), (900, 850.0)])
def test_admission_mean_wait_against_exact_mmc(c: int, a: float) -> None:
    """M/M/c (exponential holding times, cv 1): W_q = C(c, a) x hold / (c - a), with C the
    exact Erlang C (computed here from its definition)."""
    hold = 30.0
    exact = _erlang_c_exact(c, a) * hold / (c - a)
    assert float(admission_wait_mean_s(c, a, hold, 1.0)) == pytest.approx(exact, rel=1e-9)
    assert math.isinf(float(admission_wait_mean_s(c, float(c), hold, 1.0)))
    assert float(admission_wait_mean_s(c, 0.0, hold, 1.0)) == 0.0


def perf(gpu: str = "h100-sxm", n: int = 1, **wl: object) -> dict[str, float]:
    base = {"model": "llama3-8b", "precision": "bf16", "phase": "serve", "input_tokens": 467,
            "output_tokens": 256, "batch": "auto", "tp": 1, "pp": 1}  # fmt: skip
    d = resolve_context({"gpu": gpu, "cluster_size": n, "workload": {**base, **wl}})
    return {k: float(v) for k, v in evaluate_perf(d).items()}


AT = {"arrivals": "poisson", "latency_statistic": "mean"}


def test_a_replica_that_keeps_up_serves_the_offered_load_by_littles_law() -> None:
    for rate in (0.2, 2.0, 20.0):
        m = perf(n=8, arrival_rate_per_s=rate, **AT)
        assert m["replicas"] == 8
        assert m["tokens_per_s"] == pytest.approx(8 * rate * 256, rel=1e-9)
        # a request holds its slot for its decode: mean batch = rate x out x mean step
        assert m["batch"] == pytest.approx(rate * 256 * m["tpot_s"], rel=1e-9)
        assert m["load_served_fraction"] == 1.0 and m["slo_met"] == 1


def test_latencies_grow_with_the_load_up_to_the_capacity() -> None:
    saturated = perf()
    capacity_rps = saturated["tokens_per_s"] / 256
    rates = capacity_rps * np.array([0.01, 0.3, 0.6, 0.85])
    figures = [perf(arrival_rate_per_s=float(r), **AT) for r in rates]
    ttft = [f["ttft_s"] for f in figures]
    tpot = [f["tpot_s"] for f in figures]
    batch = [f["batch"] for f in figures]
    assert np.all(np.diff(ttft) > 0) and np.all(np.diff(tpot) > 0) and np.all(np.diff(batch) > 0)
    # almost idle: one request at a time, its prefill and a one-sequence step
    alone = perf(batch=1)
    assert figures[0]["tpot_s"] == pytest.approx(alone["tpot_s"], rel=1e-9)
    assert figures[0]["ttft_s"] == pytest.approx(alone["ttft_s"], rel=0.01)
    # below one request on average the GPU idles between them: less power than when busy
    assert figures[0]["gpu_power_w"] < alone["gpu_power_w"]


def test_a_load_beyond_the_capacity_is_served_at_the_capacity_and_missed() -> None:
    saturated = perf()
    over = perf(arrival_rate_per_s=1.2 * saturated["tokens_per_s"] / 256, **AT)
    for k in ("tokens_per_s", "batch", "ttft_s", "tpot_s", "gpu_power_w"):
        assert over[k] == pytest.approx(saturated[k], rel=1e-12), k
    assert over["load_served_fraction"] == pytest.approx(1 / 1.2, rel=1e-12)
    assert over["slo_met"] == 0  # its queue grows without bound: no latency is kept
    kept = perf(arrival_rate_per_s=0.5 * saturated["tokens_per_s"] / 256, **AT)
    assert kept["load_served_fraction"] == 1.0 and kept["slo_met"] == 1


def test_a_parallelism_that_keeps_up_wins_over_one_that_does_not() -> None:
    """70B bf16 on 8 H100 at 10 requests/s per replica: four TP2 replicas cannot keep up, yet
    serve more tokens (7.9k/s) than two TP4 replicas that can (5.1k/s); the search takes TP4."""
    wl = {"model": "llama3-70b", "tp": "auto", "arrival_rate_per_s": 10.0, **AT}
    chosen = perf(n=8, **wl)
    assert chosen["tp"] == 4 and chosen["load_served_fraction"] == 1 and chosen["slo_met"] == 1
    assert chosen["tokens_per_s"] == pytest.approx(2 * 10.0 * 256, rel=1e-9)
    tp2 = perf(n=8, **{**wl, "tp": 2})
    assert tp2["load_served_fraction"] < 1 and tp2["slo_met"] == 0
    assert tp2["tokens_per_s"] > chosen["tokens_per_s"]


def test_the_percentiles_lie_above_the_means() -> None:
    wl = {"arrivals": "poisson", "arrival_rate_per_s": 25.0, "input_tokens_cv": 0.5,
          "output_tokens_cv": 0.5}  # fmt: skip
    mean = perf(**wl, latency_statistic="mean")
    p99 = perf(**wl)
    assert p99["ttft_s"] > mean["ttft_s"] and p99["tpot_s"] > mean["tpot_s"]
    assert p99["batch"] == mean["batch"] and p99["tokens_per_s"] == mean["tokens_per_s"]


def test_the_rate_an_slo_allows_gives_back_that_slo() -> None:
    """The SLO-bound open system runs at the rate batch / (out x step); given that rate, the
    mean batch is the same and so is the TTFT percentile."""
    wl = {"arrivals": "poisson", "input_tokens_cv": 0.8, "output_tokens_cv": 0.8}
    bound = perf(**wl, ttft_slo_s=0.1)
    rate = bound["tokens_per_s"] / 256
    given = perf(**wl, arrival_rate_per_s=rate)
    assert given["batch"] == pytest.approx(bound["batch"], rel=1e-6)
    assert given["ttft_s"] == pytest.approx(bound["ttft_s"], rel=1e-6)


def test_rate_vectorized_equals_scalar() -> None:
    """Within 1e-9: the mean batch is bisected to ~1e-11 of its interval, and a vector and a
    scalar path may round a step time differently in the last bit."""
    rates = np.array([0.5, 5.0, 20.0, 60.0])  # the last is beyond the capacity
    base = {"model": "llama3-8b", "precision": "bf16", "phase": "serve", "input_tokens": 467,
            "output_tokens": 256, "batch": "auto", "tp": 1, "pp": 1, **AT}  # fmt: skip
    d = resolve_context(
        {"gpu": "h100-sxm", "cluster_size": 1, "workload": {**base, "arrival_rate_per_s": rates}}
    )
    many = evaluate_perf(d)
    for i, r in enumerate(rates):
        one = perf(arrival_rate_per_s=float(r), **AT)
        for k in ("tokens_per_s", "ttft_s", "tpot_s", "batch", "gpu_power_w", "slo_met",
                  "load_served_fraction"):  # fmt: skip
            assert float(many[k][i]) == pytest.approx(one[k], rel=1e-9), k


@pytest.mark.parametrize(
    ("wl", "field"),
    [
        ({"arrival_rate_per_s": 5.0}, "workload.arrival_rate_per_s"),
        ({"arrivals": "poisson", "arrival_rate_per_s": 0.0}, "workload.arrival_rate_per_s"),
        ({"arrivals": "poisson", "arrival_rate_per_s": 5.0, "batch": 64}, "workload.batch"),
        (
            {"arrivals": "poisson", "ttft_slo_s": 1, "latency_statistic": "p50"},
            "workload.latency_statistic",
        ),  # fmt: skip
    ],
)
def test_bad_rate_fields_name_the_field(wl: dict[str, object], field: str) -> None:
    with pytest.raises(ContextError) as err:
        perf(**wl)
    assert err.value.path == field
    if field == "workload.latency_statistic":
        assert "percentile" in str(err.value) and "mean" in str(err.value)


@pytest.mark.parametrize("wl", [{"ttft_slo_s": 1.0}, {"arrival_rate_per_s": 1.0}])
def test_an_open_system_that_does_not_fit_keeps_every_metric_finite(wl: dict) -> None:
    """405B on one H100: no batch slot fits, so no queue is stable; the design is infeasible
    (model_fits 0, slo_met 0), not a failed evaluation (the engine rejects non-finite metrics)."""
    m = perf(model="llama3-405b", precision="fp8", arrivals="poisson", **wl)
    assert all(math.isfinite(v) for v in m.values()), {k: v for k, v in m.items()}
    assert m["model_fits"] == 0 and m["slo_met"] == 0 and m["tokens_per_s"] == 0


def test_the_bracket_bisection_agrees_with_regula_falsi(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows regula falsi has not pinned down are bisected on their bracket: with one step
    of it every row is, and the mean batch is the same."""
    import objectives.perf.queueing as queueing

    rates = (0.5, 5.0, 20.0, 30.0)
    fast = [perf(arrival_rate_per_s=r, **AT) for r in rates]
    monkeypatch.setattr(queueing, "_RATE_STEPS", 1)
    slow = [perf(arrival_rate_per_s=r, **AT) for r in rates]
    for f, s in zip(fast, slow, strict=True):
        assert s["batch"] == pytest.approx(f["batch"], rel=1e-9)
        assert s["tpot_s"] == pytest.approx(f["tpot_s"], rel=1e-9)
