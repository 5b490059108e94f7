"""Poisson arrivals: the queue formulas against exact results and simulation, and the model's
behaviour in an open system (below saturation, by the margin the SLO percentile needs)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from objectives.errors import ContextError
from objectives.perf import evaluate_perf
from objectives.perf.queueing import (
    admission_wait_mean_s,
    admission_wait_s,
    erlang_c,
    fcfs_wait_s,
    normal_cdf,
    tpot_quantile_s,
)
from objectives.presets import resolve_context


def _erlang_c_exact(c: int, a: float) -> float:
    """Erlang C from its definition, in log space (c! and a^c overflow beyond c ~ 170)."""
    logs = [k * math.log(a) - math.lgamma(k + 1) for k in range(c)]
    top = c * math.log(a) - math.lgamma(c + 1) + math.log(c / (c - a))
    m = max(*logs, top)
    below = sum(math.exp(v - m) for v in logs)
    return math.exp(top - m) / (below + math.exp(top - m))


def test_normal_cdf_matches_erf() -> None:
    xs = np.linspace(-6, 6, 2001)
    want = np.array([0.5 * math.erfc(-x / math.sqrt(2)) for x in xs])
    np.testing.assert_allclose(normal_cdf(xs), want, rtol=1e-13, atol=1e-300)
    assert normal_cdf(1.959964) == pytest.approx(0.975, abs=1e-6)


def _erlang_c_fraction(c: int, a: Fraction) -> Fraction:
    """Erlang C as an exact rational: (a^c/c! c/(c-a)) / (sum_{k<c} a^k/k! + a^c/c! c/(c-a))."""
    term, below = Fraction(1), Fraction(0)
    for k in range(c):
        below += term
        term = term * a / (k + 1)  # a^(k+1) / (k+1)!
    top = term * c / (c - a)
    return top / (below + top)


_CS = [1, 2, 3, 5, 8, 10, 16, 32, 64, 100, 128, 256, 512]
_LOADS = ["0.1", "0.3", "0.5", "0.7", "0.8", "0.9", "0.95", "0.99"]


def test_erlang_c_and_the_mmc_waits_are_exact() -> None:
    """Against exact rational Erlang C over c = 1..512 and load a/c = 0.1..0.99: the probability
    of waiting, the mean wait C hold/(c - a) and the 99th percentile hold/(c - a) ln(C/0.01)
    of M/M/c (exponential holding, cv 1) within 1e-9 (the target is 1 %)."""
    c = np.array([float(x) for x in _CS for _ in _LOADS])
    a = np.array([float(Fraction(r) * x) for x in _CS for r in _LOADS])
    exact = np.array([float(_erlang_c_fraction(x, Fraction(r) * x)) for x in _CS for r in _LOADS])
    np.testing.assert_allclose(erlang_c(c, a), exact, rtol=1e-9)
    hold = 2.5
    mean = exact * hold / (c - a)
    np.testing.assert_allclose(admission_wait_mean_s(c, a, hold, 1.0), mean, rtol=1e-9)
    p99 = np.where(exact > 0.01, hold / (c - a) * np.log(exact / 0.01), 0.0)
    got = admission_wait_s(c, a, hold, 1.0, 0.99)
    np.testing.assert_allclose(got, p99, rtol=1e-6, atol=1e-12)
    assert (p99 > 0).sum() > 40  # most of the grid waits at the 99th percentile
    # the cases where Halfin-Whitt was 26-60 % low (issue 30): exact now
    for cc, aa in ((10, 5.0), (64, 50.0), (100, 80.0)):
        assert float(erlang_c(cc, aa)) == pytest.approx(_erlang_c_exact(cc, aa), rel=1e-10)


def test_erlang_c_edges() -> None:
    assert float(erlang_c(1, 0.7)) == pytest.approx(0.7, rel=1e-12)  # M/M/1: rho
    np.testing.assert_array_equal(erlang_c(np.array([4.0, 4.0, 4.0]), [0.0, 4.0, 9.0]), [0, 1, 1])
    # large c, light load: no overflow, essentially no wait
    assert 0.0 <= float(erlang_c(4096.0, 100.0)) < 1e-300
    # a non-integer number of slots lies between its integer neighbours
    lo, mid, hi = (float(erlang_c(x, 20.0)) for x in (24.0, 24.5, 25.0))
    assert hi < mid < lo


def test_mm1_wait_quantile_is_exact() -> None:
    """M/M/1: P(W > w) = rho exp(-mu (1 - rho) w), so w_q = ln(rho / (1 - q)) / (mu (1 - rho))."""
    rate, service, q = 0.7, 1.0, 0.99
    exact = math.log(0.7 / 0.01) / (1.0 * (1 - 0.7))
    assert float(fcfs_wait_s(rate, service, 1.0, q)) == pytest.approx(exact, rel=1e-12)
    # M/M/c, one server, is the same queue: Erlang C with c = 1 is rho exactly
    assert _erlang_c_exact(1, 0.7) == pytest.approx(0.7)


def _md1_wait_p99_simulated(rho: float, n: int = 2_000_000, seed: int = 7) -> float:
    """Lindley's recursion W' = max(0, W + X - A) for deterministic service X = 1."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rho, n)
    w, waits = 0.0, np.empty(n)
    for i in range(n):
        waits[i] = w
        w = max(0.0, w + 1.0 - gaps[i])
    return float(np.quantile(waits[n // 10 :], 0.99))


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_md1_wait_quantile_against_simulation(rho: float) -> None:
    """Deterministic service (cv 0), the other end from M/M/1: the exponential tail errs high,
    by ~18 % at rho 0.5 and ~6 % at 0.8 against a simulated M/D/1 queue's 99th-percentile wait
    (2,000,000 arrivals; across seeds that percentile moves by ~1.5 % at rho 0.8)."""
    simulated = _md1_wait_p99_simulated(rho)
    formula = float(fcfs_wait_s(rho, 1.0, 0.0, 0.99))
    assert simulated < formula < 1.25 * simulated


def test_queues_are_infinite_when_unstable_and_zero_when_nobody_waits() -> None:
    assert math.isinf(float(fcfs_wait_s(1.0, 1.0, 0.5, 0.99)))
    assert math.isinf(float(admission_wait_s(64, 64.0, 10.0, 0.5, 0.99)))
    assert float(fcfs_wait_s(0.005, 1.0, 0.5, 0.99)) == 0.0  # rho below 1 %: p99 waits 0
    assert float(admission_wait_s(900, 500.0, 30.0, 0.5, 0.99)) == 0.0
    # more load, longer waits; a more variable service, longer waits
    waits = fcfs_wait_s(np.array([0.3, 0.6, 0.9]), 1.0, 0.5, 0.99)
    assert np.all(np.diff(waits) > 0)
    assert fcfs_wait_s(0.6, 1.0, 1.0, 0.99) > fcfs_wait_s(0.6, 1.0, 0.0, 0.99)


def test_admission_wait_by_hand() -> None:
    """c = 1000 slots at 960 busy, held 40 s with cv 0.8: exact Erlang C P_wait, then an
    exponential wait of mean 40 / 40 x (1 + 0.64) / 2 = 0.82 s for those who wait."""
    p_wait = _erlang_c_exact(1000, 960.0)
    expected = 0.82 * math.log(p_wait / 0.01)
    assert float(admission_wait_s(1000, 960.0, 40.0, 0.8, 0.99)) == pytest.approx(expected)


def test_tpot_quantile_of_a_shared_deviation_is_the_normal_one() -> None:
    """With no per-step noise every request deviates alike: mean + z_q sd."""
    assert float(tpot_quantile_s(0.2, 0.01, 0.0, 292, 0.8, 0.99)) == pytest.approx(
        0.2 + 2.326348 * 0.01, rel=1e-5
    )
    assert float(tpot_quantile_s(0.2, 0.0, 0.0, 292, 0.8, 0.99)) == pytest.approx(0.2)


def test_tpot_quantile_against_sampled_requests() -> None:
    """The quadrature over lognormal output lengths against 400,000 sampled requests, each
    the mean of its own normal step deviations plus a shared one."""
    rng = np.random.default_rng(3)
    mean, common, step, steps, cv = 0.15, 0.004, 0.05, 250.0, 0.8
    s2 = math.log1p(cv * cv)
    n = np.maximum(steps * np.exp(rng.normal(-s2 / 2, math.sqrt(s2), 400_000)), 1.0)
    tpot = mean + rng.normal(0, common, n.size) + rng.normal(0, 1, n.size) * step / np.sqrt(n)
    for q in (0.9, 0.99):
        sampled = float(np.quantile(tpot, q))
        assert float(tpot_quantile_s(mean, common, step, steps, cv, q)) == pytest.approx(
            sampled, rel=0.004
        )
    # short answers make the tail: more spread in lengths, a longer 99th percentile
    assert tpot_quantile_s(mean, common, step, steps, 1.5, 0.99) > tpot_quantile_s(
        mean, common, step, steps, 0.2, 0.99
    )


def perf(gpu: str = "h200", n: int = 8, **wl: object) -> dict[str, float]:
    d = resolve_context({"gpu": gpu, "cluster_size": n,
                         "workload": {"batch": "auto", "phase": "serve", **wl}})  # fmt: skip
    return {k: float(v) for k, v in evaluate_perf(d).items()}


WL = {"model": "llama3-8b", "precision": "fp8", "tp": 1, "pp": 1, "input_tokens": 2048,
      "output_tokens": 128, "input_tokens_cv": 0.8, "output_tokens_cv": 0.8}  # fmt: skip


def test_an_open_system_runs_below_saturation_by_its_queues_margin() -> None:
    saturated = perf(**WL, ttft_slo_s=0.5)
    poisson = perf(**WL, ttft_slo_s=0.5, arrivals="poisson")
    assert poisson["tokens_per_s"] < 0.95 * saturated["tokens_per_s"]
    assert poisson["ttft_s"] <= 0.5 + 1e-9 and poisson["slo_met"] == 1
    assert poisson["ttft_s"] > saturated["ttft_s"]  # the waits are in it
    # The TTFT percentile is the SLO's: a median SLO leaves a smaller margin.
    median = perf(**WL, ttft_slo_s=0.5, arrivals="poisson", slo_percentile=50)
    assert poisson["tokens_per_s"] < median["tokens_per_s"] <= saturated["tokens_per_s"]
    # Prompts all of one length queue less.
    steady = perf(**{**WL, "input_tokens_cv": 0.0}, ttft_slo_s=0.5, arrivals="poisson")
    assert steady["tokens_per_s"] > poisson["tokens_per_s"]


def test_a_tighter_ttft_slo_lowers_poisson_throughput_and_the_batch() -> None:
    slos = (2.0, 1.0, 0.5)
    figures = [perf(**WL, ttft_slo_s=s, arrivals="poisson") for s in slos]
    tps = [f["tokens_per_s"] for f in figures]
    assert tps[0] > tps[1] > tps[2] > 0
    assert figures[0]["batch"] > figures[1]["batch"] > figures[2]["batch"]
    assert all(f["ttft_s"] <= s + 1e-9 for f, s in zip(figures, slos, strict=True))
    # one more sequence in the running batch would miss the SLO
    above = perf(**WL, ttft_slo_s=0.5, arrivals="poisson", batch=figures[2]["batch"] + 1)
    assert above["ttft_s"] > 0.5


def test_at_a_low_percentile_nobody_waits() -> None:
    """The 1st percentile of a wait is 0 unless a queue is over 99 % busy, so TTFT is then the
    saturated model's (one prefill and one step) at the same batch."""
    for batch in (1, 64):
        poisson = perf(**WL, batch=batch, arrivals="poisson", ttft_slo_s=0.5, slo_percentile=1)
        saturated = perf(**WL, batch=batch)
        assert poisson["ttft_s"] == pytest.approx(saturated["ttft_s"], rel=1e-12)
        assert poisson["tokens_per_s"] == pytest.approx(saturated["tokens_per_s"], rel=1e-12)


def test_poisson_vectorized_equals_scalar() -> None:
    """Prompt-length spread per design broadcasts like any numeric workload field."""
    cvs = np.array([0.0, 0.4, 0.77, 1.2])
    d = resolve_context({"gpu": "h200", "cluster_size": 8,
                         "workload": {**WL, "batch": "auto", "phase": "serve",
                                      "arrivals": "poisson", "ttft_slo_s": 0.45}})  # fmt: skip
    d["workload"]["input_tokens_cv"] = cvs
    many = evaluate_perf(d)
    for i, cv in enumerate(cvs):
        one = perf(**{**WL, "input_tokens_cv": float(cv)}, arrivals="poisson", ttft_slo_s=0.45)
        assert float(many["tokens_per_s"][i]) == pytest.approx(one["tokens_per_s"], rel=1e-12)
        assert float(many["ttft_s"][i]) == pytest.approx(one["ttft_s"], rel=1e-12)
    assert np.all(np.diff(many["tokens_per_s"]) <= 0)


@pytest.mark.parametrize(
    ("wl", "field"),
    [
        ({"arrivals": "bursty"}, "workload.arrivals"),
        ({"arrivals": "poisson", "scheduler": "static", "batch": 64}, "workload.arrivals"),
        ({"arrivals": "poisson", "disaggregated": True}, "workload.arrivals"),
        ({"arrivals": "poisson", "slo_percentile": 100}, "workload.slo_percentile"),
        ({"input_tokens_cv": -0.1}, "workload.input_tokens_cv"),
        ({"arrivals": "poisson"}, "workload.ttft_slo_s"),
    ],
)
def test_bad_arrival_fields_are_named(wl: dict[str, object], field: str) -> None:
    with pytest.raises(ContextError, match=field.replace(".", r"\.")):
        perf(**{**WL, **wl})


def test_under_poisson_arrivals_the_tpot_slo_bounds_its_percentile() -> None:
    """The TPOT SLO bounds the 99th percentile over requests, which lies above the mean step:
    the batch that meets it is smaller than the saturated one that meets it on average."""
    wl = {**WL, "output_tokens": 512, "ttft_slo_s": 5.0, "tpot_slo_s": 0.03}
    saturated = perf(**wl)
    poisson = perf(**wl, arrivals="poisson")
    assert saturated["tpot_s"] <= 0.03 and poisson["tpot_s"] <= 0.03 + 1e-9
    assert poisson["batch"] < saturated["batch"]
    mean_at_that_batch = perf(**{**wl, "batch": poisson["batch"]})["tpot_s"]
    assert 1.0 < poisson["tpot_s"] / mean_at_that_batch < 1.5
