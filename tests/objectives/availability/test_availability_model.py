"""Closed forms of the availability model against hand computations and the Monte Carlo."""

from __future__ import annotations

import math

import numpy as np
import pytest

from objectives.availability import capacity_availability, simulate_capacity, training_goodput
from objectives.availability._poisson import poisson_cdf, poisson_log_sf
from objectives.availability.closed_form import (
    daly_goodput,
    nines,
    spare_count,
    young_daly_interval,
)
from objectives.availability.rates import gpu_rates_per_hour
from objectives.presets import resolve_context

H = 1.0 / 3600.0  # one second in hours


def rates(**params: object) -> tuple[float, float]:
    hw, sw = gpu_rates_per_hour(resolve_context(params))
    return float(hw), float(sw)


H100 = rates(gpu="h100-sxm")
LITE = rates(gpu="h100-sxm", die_area_mm2=203.5, hbm_stacks_per_die=1.25, link_type="cpo")
BIG_PLUGGABLE = rates(
    gpu="h100-sxm", die_area_mm2=858, hbm_stacks_per_die=6, link_type="pluggable"
)
MID = rates(gpu="h100-sxm", die_area_mm2=400, hbm_stacks_per_die=3, link_type="cpo")
TIMES = {"mttr_h": 48.0, "swap_h": 300 * H, "restart_h": 300 * H}


def test_poisson_tails_match_direct_sums() -> None:
    # P(K <= 2 | mu = 1) = e^-1 (1 + 1 + 1/2) = 0.9196986
    assert poisson_cdf(2, 1.0) == pytest.approx(math.exp(-1) * 2.5, rel=1e-12)
    for n, mu in [(0, 0.3), (5, 3.0), (45, 50.0), (1100, 1000.0)]:
        direct = sum(math.exp(-mu + k * math.log(mu) - math.lgamma(k + 1)) for k in range(n + 1))
        assert poisson_cdf(n, mu) == pytest.approx(direct, rel=1e-8)
        assert np.exp(poisson_log_sf(n, mu)) == pytest.approx(1 - direct, rel=1e-6, abs=1e-15)
    # far tail stays in log space: log P(K > 60 | 1) ~ log(1/61!) - 1
    assert poisson_log_sf(60, 1.0) == pytest.approx(
        -math.lgamma(62) - 1 + math.log(1 + 1 / 62), rel=1e-3
    )
    assert poisson_cdf(-1, 2.0) == 0.0 and poisson_cdf(3, 0.0) == 1.0


def test_poisson_far_tail_stays_finite_in_log_space() -> None:
    # Where P(K > n) underflows a double the log is still exact: against the leading terms of
    # the series p(n+1) (1 + mu/(n+2) + mu^2/((n+2)(n+3)) + ...), summed here in log space.
    for n, mu in [(200, 1.0), (300, 0.01), (2000, 100.0), (100_000, 50_000.0)]:
        log_p = (n + 1) * math.log(mu) - mu - math.lgamma(n + 2)
        series, term = 0.0, 1.0
        for k in range(2, 100_000):
            series += term
            term *= mu / (n + k)
            if term < 1e-17 * series:
                break
        want = log_p + math.log(series)
        assert want < -700  # below what a double holds as a probability
        assert float(poisson_log_sf(n, mu)) == pytest.approx(want, rel=1e-12)
    # a mixed batch: near, far and zero means in one call
    got = poisson_log_sf(np.array([3.0, 200.0, 5.0]), np.array([2.0, 1.0, 0.0]))
    assert got[0] == pytest.approx(
        math.log(1 - sum(math.exp(-2) * 2**k / math.factorial(k) for k in range(4))), rel=1e-12
    )
    assert got[1] < -800 and got[2] == -np.inf


def test_poisson_tails_without_spares_are_exact_in_every_mix() -> None:
    # n = 0 has the closed form P(K <= 0) = e^-mu; a batch of only n = 0, n = 0 mixed with
    # n > 0 (series and continued-fraction regions), and mu = 0 all agree with direct sums.
    mu = np.array([0.0, 1e-12, 0.002, 0.7, 1.9, 2.1, 7.0, 40.0])
    direct_sf = [-math.expm1(-m) for m in mu]
    for n in (np.zeros(mu.size), np.array([0, 3, 0, 1, 0, 2, 0, 0])):
        cdf, log_sf = poisson_cdf(n, mu), poisson_log_sf(n, mu)
        for i in np.flatnonzero(n == 0):
            assert cdf[i] == pytest.approx(math.exp(-mu[i]), rel=1e-14)
            assert np.exp(log_sf[i]) == pytest.approx(direct_sf[i], rel=1e-14, abs=0)
        for i in np.flatnonzero(n > 0):
            k = int(n[i])
            direct = sum(math.exp(-mu[i]) * mu[i] ** j / math.factorial(j) for j in range(k + 1))
            assert cdf[i] == pytest.approx(direct, rel=1e-10)
    assert poisson_log_sf(np.zeros(2), np.zeros(2)).tolist() == [-np.inf, -np.inf]
    assert poisson_cdf(np.full(3, -1.0), np.ones(3)).tolist() == [0.0, 0.0, 0.0]


def test_spare_count_and_nines() -> None:
    assert spare_count(1024, 0.02) == 21  # ceil(20.48)
    assert spare_count(100, 0.07) == 7  # 0.07*100 = 7.000000000000001 must not become 8
    assert spare_count(4096, 0.0) == 0
    assert nines(0.999) == pytest.approx(3.0)
    assert np.isfinite(nines(1.0)) and nines(1.0) == pytest.approx(12.0)


def test_capacity_without_spares_matches_hand_computation() -> None:
    # No spares, many replicas: each failure keeps its replica down for MTTR, so the loss is about
    # (r * lambda_hw * MTTR) + (r * lambda_sw * restart) per replica (both << 1).
    lam, sw = 1e-5, 3e-6
    out = capacity_availability(
        replicas=10_000, gpus_per_replica=8, spares=0, hw_rate_h=lam, sw_rate_h=sw, **TIMES
    )
    hand = math.exp(-8 * 1e-5 * 48) * math.exp(-8 * 3e-6 * 300 / 3600)  # 0.996166
    assert out["capacity_availability"] == pytest.approx(hand, rel=1e-4)
    assert out["mean_gpus_in_repair"] == pytest.approx(80_000 * 1e-5 * 48)  # 38.4


def test_single_replica_is_up_only_when_no_slot_waits() -> None:
    # R = 1 (the whole cluster is one model-parallel group): up iff K <= S, then swap outages.
    m = 256 * 2e-5 * 48  # 0.24576 GPUs in repair on average
    out = capacity_availability(
        replicas=1,
        gpus_per_replica=256,
        spares=1,
        hw_rate_h=2e-5,
        sw_rate_h=0.0,
        mttr_h=48.0,
        swap_h=0.0,
        restart_h=0.0,
    )
    assert out["capacity_availability"] == pytest.approx(math.exp(-m) * (1 + m), rel=1e-10)


DESIGNS = [  # (rates, replicas, gpus per replica, spares): small/large dies, few/many spares
    (H100, 128, 8, 0),
    (H100, 128, 8, 1),
    (LITE, 64, 32, 0),
    (LITE, 64, 32, 2),
    (LITE, 64, 32, 41),
    (MID, 256, 4, 20),
    (BIG_PLUGGABLE, 1, 512, 2),
]


@pytest.mark.parametrize(("rate", "replicas", "group", "spares"), DESIGNS)
def test_closed_form_matches_monte_carlo(
    rate: tuple[float, float], replicas: int, group: int, spares: int
) -> None:
    args = dict(
        replicas=replicas,
        gpus_per_replica=group,
        spares=spares,
        hw_rate_h=rate[0],
        sw_rate_h=rate[1],
        **TIMES,
    )
    closed = float(capacity_availability(**args)["capacity_availability"])
    sim = simulate_capacity(**args, years=1.0, runs=1000, seed=7)["capacity_fraction"]
    assert sim.mean() == pytest.approx(closed, rel=0.02)
    # The loss itself, to within sampling error (4 standard errors) plus 2 % for the shortcut.
    se = sim.std(ddof=1) / np.sqrt(sim.size)
    assert abs((1 - sim.mean()) - (1 - closed)) <= 4 * se + 0.02 * (1 - closed)


def test_monte_carlo_is_reproducible_and_gives_a_distribution() -> None:
    args = dict(replicas=64, gpus_per_replica=8, spares=0, hw_rate_h=H100[0], sw_rate_h=H100[1])
    a = simulate_capacity(**args, **TIMES, runs=50, seed=3)
    b = simulate_capacity(**args, **TIMES, runs=50, seed=3)
    np.testing.assert_array_equal(a["capacity_fraction"], b["capacity_fraction"])
    p99 = np.percentile(a["capacity_fraction"], 1)
    assert 0 < p99 < a["capacity_fraction"].mean() < 1
    # 512 GPUs * 0.1469 failures per GPU-year ~ 75 per year
    assert a["hardware_failures"].mean() == pytest.approx(512 * H100[0] * 8760, rel=0.1)


def test_availability_never_falls_when_spares_are_added() -> None:
    spares = np.arange(0, 60)[:, None, None]
    groups = np.array([1, 2, 8, 32, 256])[None, :, None]
    rate = np.array([H100[0], LITE[0], 5 * H100[0]])[None, None, :]
    a = capacity_availability(
        replicas=np.floor(2048 / groups),
        gpus_per_replica=groups,
        spares=spares,
        hw_rate_h=rate,
        sw_rate_h=H100[1],
        **TIMES,
    )["capacity_availability"]
    assert np.all(np.diff(a, axis=0) >= -1e-12)
    assert np.all(a[-1] > a[0])


def test_loss_grows_with_replica_size() -> None:
    # Same GPUs, same failures: a bigger model-parallel group loses more capacity per failure.
    groups = np.array([1, 2, 4, 8, 16, 64, 256])
    a = capacity_availability(
        replicas=4096 / groups,
        gpus_per_replica=groups,
        spares=0,
        hw_rate_h=H100[0],
        sw_rate_h=H100[1],
        **TIMES,
    )["capacity_availability"]
    assert np.all(np.diff(a) < 0)
    # small-loss regime: loss is proportional to the group size
    assert (1 - a[1]) / (1 - a[0]) == pytest.approx(2.0, rel=0.01)


def test_young_daly_interval_and_goodput_by_hand() -> None:
    delta, m, rec = 0.01, 3.0, 0.2  # hours
    # Young: sqrt(2 * 0.01 * 3) = 0.244949
    # Daly: times (1 + sqrt(0.01 / 6) / 3 + 0.01 / 54), minus 0.01
    tau = 0.244949 * (1 + math.sqrt(0.01 / 6) / 3 + 0.01 / 54) - 0.01
    assert young_daly_interval(delta, m) == pytest.approx(tau, rel=1e-5)
    # Daly eq. 13: goodput = tau / (M e^{R/M} (e^{(tau+delta)/M} - 1))
    hand = tau / (3.0 * math.exp(0.2 / 3.0) * (math.exp((tau + 0.01) / 3.0) - 1))
    assert daly_goodput(tau, delta, m, rec) == pytest.approx(hand, rel=1e-12)
    # the interval is (near) optimal: no interval on a fine scan does better than 1e-4
    scan = daly_goodput(np.linspace(0.02, 2.0, 5000), delta, m, rec)
    assert scan.max() - daly_goodput(tau, delta, m, rec) < 1e-4
    assert young_daly_interval(10.0, 3.0) == 3.0  # checkpoint longer than 2 MTTI: every MTTI


def test_llama3_training_goodput_is_about_ninety_percent() -> None:
    # 16,384 H100s with ample spares, 405B params * 16 B / 2 TB/s = 3.24 s checkpoints,
    # 600 s restarts: Meta reports "effective training time above 90%".
    out = training_goodput(
        gpus=16_384,
        spares=1000,
        hw_rate_h=H100[0],
        sw_rate_h=H100[1],
        mttr_h=48.0,
        swap_h=300 * H,
        restart_h=600 * H,
        checkpoint_h=405e9 * 16 / 2e12 * H,
    )
    assert out["job_mtti_h"] == pytest.approx(54 * 24 / 419, rel=0.01)  # 3.09 h
    assert 0.88 < out["goodput_fraction"] < 0.95
    no_spares = training_goodput(
        gpus=16_384,
        spares=0,
        hw_rate_h=H100[0],
        sw_rate_h=H100[1],
        mttr_h=48.0,
        swap_h=300 * H,
        restart_h=600 * H,
        checkpoint_h=405e9 * 16 / 2e12 * H,
    )
    assert no_spares["goodput_fraction"] < out["goodput_fraction"]
