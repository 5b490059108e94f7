"""Waiting-time percentiles of the two queues a request meets in an open (Poisson) system.

A serving engine under Poisson arrivals (MLPerf Server, a production front end) holds each
request in two queues before its first token:

* **admission**: the running batch has ``c`` slots (the KV cache, ``max_batch``); a request
  holds one for its whole life. That is an M/G/c queue. Its probability of waiting is Erlang C,
  exact, from the Poisson tails: B = p(c) / P(K <= c) for K ~ Poisson(a) (Erlang B; for a
  non-integer c the same ratio with the regularized incomplete gamma, Jagerman, Bell Syst.
  Tech. J. 53(3), 1974), C = B / (1 - (a/c)(1 - B)). Given a wait, the wait is exponential with
  rate (c - a)/hold (exact for M/M/c), scaled by (1 + cs^2)/2 for a general holding time of
  coefficient of variation cs (Allen-Cunneen; Allen, Probability, Statistics and Queueing
  Theory, 2nd ed., 1990). (Before: Halfin-Whitt, 26-60 % low at moderate load.)
* **prefill**: prompts are prefilled first come, first served, at the engine's prompt-token
  rate. That is an M/G/1 queue: mean wait lam E[X^2] / (2 (1 - rho)) (Pollaczek-Khinchine),
  tail P(W > w) ~ rho exp(-w rho / E[W]), the exponential approximation that is exact for M/M/1
  and the heavy-traffic limit for any service time (Kingman, J. R. Stat. Soc. B 24, 1962); for
  constant service times its 99th percentile is ~18 % high at rho = 0.5 and ~6 % at 0.8 (against
  simulation, in the tests), so it errs towards a longer wait.

Every function broadcasts over numpy arrays; infinite where the queue is unstable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from objectives._special import gammainc_pq, gammaln, ndtr


def normal_cdf(x: Any) -> Any:
    """Standard normal distribution function, ``objectives._special.ndtr`` (numpy alone:
    scipy.special's import cost ~0.23 s of every ``dse evaluate``; scipy is the tests' oracle)."""
    return ndtr(np.asarray(x, dtype=float))


def erlang_c(c: Any, a: Any) -> Any:
    """Probability that an arrival waits in an M/M/c queue of offered load ``a`` (< c), exact:
    Erlang B = a^c e^-a / Gamma(c + 1) / Q(c + 1, a) (Q the regularized upper incomplete gamma,
    P(K <= c) for an integer c), C = B / (1 - (a/c)(1 - B)); 1 when a >= c, 0 when a <= 0."""
    c, a = np.asarray(c, dtype=float), np.asarray(a, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        safe_a = np.where(a > 0, a, 1.0)
        log_pmf = c * np.log(safe_a) - safe_a - gammaln(c + 1.0)
        b = np.exp(log_pmf) / gammainc_pq(c + 1.0, safe_a)[1]
        p = b / (1.0 - a / c * (1.0 - b))
    p = np.where(a <= 0, 0.0, p)
    return np.where(a >= c, 1.0, np.clip(p, 0.0, 1.0))


def admission_wait_s(c: Any, a: Any, hold_s: Any, hold_cv: Any, q: float) -> Any:
    """The ``q`` quantile of the wait for one of ``c`` slots at mean occupancy ``a``, each held
    ``hold_s`` on average (coefficient of variation ``hold_cv``); +inf when a >= c."""
    c, a = np.asarray(c, dtype=float), np.asarray(a, dtype=float)
    p_wait = erlang_c(c, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_if_waiting = hold_s / (c - a) * (1.0 + np.square(hold_cv)) / 2.0
        w = mean_if_waiting * np.log(p_wait / (1.0 - q))
    w = np.where(p_wait > 1.0 - q, w, 0.0)
    return np.where(a >= c, np.inf, w)


def admission_wait_mean_s(c: Any, a: Any, hold_s: Any, hold_cv: Any) -> Any:
    """The mean of the wait ``admission_wait_s`` takes quantiles of: P(wait) times the mean
    wait of those who wait; +inf when a >= c."""
    c, a = np.asarray(c, dtype=float), np.asarray(a, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = erlang_c(c, a) * hold_s / (c - a) * (1.0 + np.square(hold_cv)) / 2.0
    return np.where(a >= c, np.inf, np.where(a <= 0, 0.0, w))


def fcfs_wait_s(rate: Any, service_s: Any, service_cv: Any, q: float) -> Any:
    """The ``q`` quantile of the wait in an M/G/1 queue: arrivals at ``rate`` per second, mean
    service ``service_s``, its coefficient of variation ``service_cv``; +inf when rho >= 1."""
    rho = np.asarray(rate, dtype=float) * service_s
    with np.errstate(divide="ignore", invalid="ignore"):
        # E[W] / rho = E[X^2] / (2 E[X] (1 - rho)), the mean wait of those who wait
        mean_if_waiting = (1.0 + np.square(service_cv)) * service_s / (2.0 * (1.0 - rho))
        w = mean_if_waiting * np.log(rho / (1.0 - q))
    w = np.where(rho > 1.0 - q, w, 0.0)
    return np.where(rho >= 1.0, np.inf, w)


def pooled_fcfs_wait_s(
    servers: Any, rate: Any, service_s: Any, service_cv: Any, q: float | None
) -> Any:
    """The ``q`` quantile (None: the mean) of the wait in one first-come-first-served queue in
    front of ``servers`` replicas (an M/G/n queue: requests joining the shortest queue of n
    replicas, in the central-queue limit), arrivals at ``rate`` per second for all of them,
    each served in ``service_s`` (coefficient of variation ``service_cv``): the M/G/c wait of
    ``admission_wait_s`` with n servers, offered load rate x service; n = 1 is the M/G/1 queue
    of ``fcfs_wait_s``. +inf when the load reaches n."""
    a = np.asarray(rate, dtype=float) * service_s
    if q is None:
        return admission_wait_mean_s(servers, a, service_s, service_cv)
    return admission_wait_s(servers, a, service_s, service_cv, q)


def fcfs_wait_mean_s(rate: Any, service_s: Any, service_cv: Any) -> Any:
    """The mean wait in that M/G/1 queue (Pollaczek-Khinchine, exact for any service time
    distribution): rho (1 + cv^2) E[X] / (2 (1 - rho)); +inf when rho >= 1."""
    rho = np.asarray(rate, dtype=float) * service_s
    with np.errstate(divide="ignore", invalid="ignore"):
        w = rho * (1.0 + np.square(service_cv)) * service_s / (2.0 * (1.0 - rho))
    return np.where(rho >= 1.0, np.inf, w)


#: Gauss-Hermite nodes and weights (probabilists', 24 points) over which the spread of output
#: lengths is integrated.
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(24)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def tpot_quantile_s(
    mean_s: Any, common_sd_s: Any, step_sd_s: Any, steps: Any, steps_cv: Any, q: float
) -> Any:
    """The ``q`` quantile over requests of the time per output token.

    A request's TPOT is the mean of the steps it lives through: ``mean_s`` plus a deviation
    shared by the whole life (the running batch's fluctuation, sd ``common_sd_s``) plus the
    mean of its steps' own deviations (the prompt work arriving step by step, sd
    ``step_sd_s`` each, independent), which shrinks as 1/sqrt(steps). Steps per request are
    lognormal with mean ``steps`` and coefficient of variation ``steps_cv``: short answers
    average over few steps, so they make the tail.
    """
    mean_s, steps = np.asarray(mean_s, dtype=float), np.asarray(steps, dtype=float)
    s2 = np.log1p(np.square(np.asarray(steps_cv, dtype=float)))[..., None]
    n = np.maximum(steps[..., None] * np.exp(np.sqrt(s2) * _NODES - s2 / 2), 1.0)
    sd = np.sqrt(np.square(common_sd_s)[..., None] + np.square(step_sd_s)[..., None] / n)
    sd = np.maximum(sd, 1e-300)
    lo = np.zeros(np.broadcast(mean_s, sd[..., 0]).shape)
    hi = lo + 10.0 * np.max(sd, axis=-1)
    for _ in range(40):  # the tail probability falls with x: bisect P(TPOT > mean + x) = 1 - q
        mid = (lo + hi) / 2
        tail = np.sum(_WEIGHTS * (1.0 - normal_cdf(mid[..., None] / sd)), axis=-1)
        above = tail > 1.0 - q
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return mean_s + (lo + hi) / 2


_RATE_STEPS = 24  # regula falsi steps for the mean batch at a given arrival rate
_RATE_BISECT = 40  # then halvings of the bracket of a row those did not pin down


def batch_at_rate(round_s: Callable[[Any], Any], slots: Any, rate: Any, out: Any) -> Any:
    """The mean running batch at ``rate`` requests/s: each request holds a slot for its
    decode, so (Little) B = rate x output_tokens x t_round(B), solved on [0, slots]; ``slots``
    where no B below it holds the load (the round time grows with B, so the excess
    rate x out x t_round(B) - B changes sign once where the replica keeps up).

    The round time is nearly affine in B, with kinks where a roofline changes sides, so the
    Illinois variant of regula falsi (Dowell & Jarratt, BIT 11, 1971) finds the root in a dozen
    steps where bisection takes 40; it keeps the root bracketed, and a row it has not pinned
    to 1e-12 after ``_RATE_STEPS`` steps is bisected on its bracket. ``round_s(B)``: the
    round time at a running batch of B (at least one sequence)."""

    def excess(b: Any) -> Any:
        return rate * out * round_s(np.maximum(b, 1.0)) - b

    top = np.maximum(np.asarray(slots, dtype=float), 0.0)
    fb = excess(top)
    b = top + np.zeros_like(fb)
    over = fb >= 0
    lo = np.zeros_like(b)
    fa = excess(lo)  # > 0: a request's decode takes time
    x = lo
    for _ in range(_RATE_STEPS):
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(fb != fa, b - fb * (b - x) / (fb - fa), b)
        c = np.clip(c, np.minimum(x, b), np.maximum(x, b))
        fc = excess(c)
        flip = fc * fb < 0  # the root lies between c and b: b becomes the other end
        x, fa = np.where(flip, b, x), np.where(flip, fb, fa / 2)
        b, fb = c, fc
    done = over | (np.abs(fb) <= 1e-12 * np.maximum(b, 1.0))
    if not np.all(done):  # bisect what is left on its bracket [x, b]
        lo, hi = np.minimum(x, b), np.maximum(x, b)
        for _ in range(_RATE_BISECT):
            mid = (lo + hi) / 2
            up = excess(mid) > 0
            lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
        b = np.where(done, b, (lo + hi) / 2)
    return np.where(over, top, b)


def solve_batch(bmax: Any, ok: Any) -> Any:
    """Largest whole B in [1, bmax] with ok(B) (ok grows false with B); 1 if none."""
    lo = np.ones_like(bmax)
    good = ok(np.maximum(bmax, 1.0))
    hi = np.where(good, lo, np.maximum(bmax, 1.0))
    lo = np.where(good, np.maximum(bmax, 1.0), lo)
    top = float(np.max(hi)) if hi.size else 1.0
    for _ in range(int(np.ceil(np.log2(max(top, 1.0)))) + 1):
        if not (hi > lo).any():
            break  # every interval is one batch: further halvings change nothing
        mid = np.floor((lo + hi + 1) / 2)
        m_ok = ok(mid) & (mid <= hi)
        lo = np.where(m_ok, mid, lo)
        hi = np.where(m_ok, hi, np.minimum(hi, mid - 1))
        hi = np.maximum(hi, lo)
    return lo
