"""``workload.dispatch``: Poisson arrivals split at random over the replicas (each queues alone)
or joining the shortest queue (one central queue for the n replicas: M/G/n, M/G/(n x slots))."""

from __future__ import annotations

import math

import numpy as np
import pytest

from objectives.errors import ContextError
from objectives.perf import evaluate_perf
from objectives.perf.queueing import fcfs_wait_s, pooled_fcfs_wait_s
from objectives.presets import resolve_context

WL = {"model": "llama3-70b", "precision": "fp8", "phase": "serve", "batch": "auto", "tp": 2,
      "pp": 1, "input_tokens": 2048, "output_tokens": 256, "arrivals": "poisson",
      "ttft_slo_s": 0.5, "tpot_slo_s": 0.05, "input_tokens_cv": 0.5,
      "output_tokens_cv": 0.8}  # fmt: skip


def perf(cluster: object = 8, **wl: object) -> dict[str, np.ndarray]:
    d = resolve_context({"gpu": "h100-sxm", "cluster_size": cluster, "workload": {**WL, **wl}})
    return evaluate_perf(d)


def _erlang_c(c: int, a: float) -> float:
    """Erlang C from the Erlang B recursion (no gamma function)."""
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return b / (1 - a / c * (1 - b))


@pytest.mark.parametrize("n", [1, 4, 18])
def test_central_queue_wait_by_hand(n):
    """M/G/n (Allen-Cunneen): P(wait) = Erlang C(n, a), the wait of those who wait exponential
    with mean X / (n - a) x (1 + cv^2) / 2; its 99th percentile mean x ln(C / 0.01)."""
    x, cv, rho = 0.04, 0.5, 0.85
    a = n * rho
    c = _erlang_c(n, a)
    want = x / (n - a) * (1 + cv**2) / 2 * math.log(c / 0.01) if c > 0.01 else 0.0
    got = float(pooled_fcfs_wait_s(n, a / x, x, cv, 0.99))
    assert got == pytest.approx(want, rel=1e-9)
    mean = float(pooled_fcfs_wait_s(n, a / x, x, cv, None))
    assert mean == pytest.approx(c * x / (n - a) * (1 + cv**2) / 2, rel=1e-9)
    if n == 1:  # one server: the M/G/1 queue of fcfs_wait_s
        assert got == pytest.approx(float(fcfs_wait_s(rho / x, x, cv, 0.99)), rel=1e-9)


def test_one_replica_is_the_same_under_either_dispatch():
    one = {k: float(v) for k, v in perf(2).items()}
    jsq = {k: float(v) for k, v in perf(2, dispatch="shortest_queue").items()}
    for k in ("tokens_per_s", "ttft_s", "tpot_s", "batch"):
        assert jsq[k] == pytest.approx(one[k], rel=1e-6), k


def test_a_central_queue_serves_more_under_the_same_slos():
    """Four replicas of TP2 on 8 H100s: joined queues wait less, so more load meets the TTFT
    p99; every figure still meets the SLOs."""
    rnd, jsq = perf(8), perf(8, dispatch="shortest_queue")
    assert float(jsq["replicas"]) == float(rnd["replicas"]) == 4
    assert float(jsq["tokens_per_s"]) > 1.5 * float(rnd["tokens_per_s"])
    for r in (rnd, jsq):
        assert float(r["slo_met"]) == 1 and float(r["ttft_s"]) <= 0.5 + 1e-9
        assert float(r["tpot_s"]) <= 0.05 + 1e-9


def test_cluster_sizes_in_one_call_equal_each_alone():
    """The timing reads the replica count under a central queue, so designs are grouped by
    cluster size too: a vectorized call over several sizes equals each size alone."""
    sizes = np.array([2.0, 4.0, 8.0, 18.0, 36.0, 8.0])
    many = perf(sizes, dispatch="shortest_queue")
    for i, n in enumerate(sizes):
        alone = perf(float(n), dispatch="shortest_queue")
        for k in ("tokens_per_s", "ttft_s", "tpot_s", "batch", "replicas"):
            assert float(np.ravel(many[k])[i]) == pytest.approx(float(alone[k]), rel=1e-12), k


def test_an_unknown_dispatch_is_refused_with_the_choices():
    with pytest.raises(ContextError, match="random.*shortest_queue|shortest_queue.*random"):
        perf(8, dispatch="round_robin")


def test_dispatch_without_poisson_arrivals_is_refused():
    """A setting that would be silently ignored is an error naming its valid use."""
    with pytest.raises(ContextError, match="set arrivals: poisson") as e:
        perf(8, arrivals="saturated", ttft_slo_s=None, dispatch="shortest_queue")
    assert e.value.path == "workload.dispatch"
