"""Spares provisioned per silicon: equal spare silicon, more and smaller spares for small dies."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from objectives.availability import evaluate_availability
from objectives.availability.spares import provisioned_spares, silicon_spares
from objectives.cost import evaluate_cost
from objectives.presets import resolve_context

WORKLOAD = {"model": "llama3-70b", "phase": "decode", "precision": "fp8"}


def _design(area: float, n: int, **kw: Any) -> dict[str, Any]:
    return resolve_context(
        {"gpu": "h100-sxm", "die_area_mm2": area, "cluster_size": n, "workload": WORKLOAD, **kw}
    )


def _perf(group: float, replicas: float) -> dict[str, np.ndarray]:
    """The replica shape the availability model reads (the paper's 70B decode shapes)."""
    one = np.array(1.0)
    return {"gpus_per_replica": np.array(group), "replicas": np.array(replicas),
            "tokens_per_joule": one, "tokens_per_s": one,
            "facility_power_w": np.array(1e5)}  # fmt: skip


def _poisson_quantile_by_hand(q: float, m: float) -> int:
    k, term, cdf = 0, math.exp(-m), math.exp(-m)
    while cdf < q:
        k += 1
        term *= m / k
        cdf += term
    return k


def test_floor_of_the_silicon_share_against_the_ceil_of_the_gpu_share() -> None:
    # 2 % of 64 reticle dies is 1.28 GPUs: ceil buys 2 (1,628 mm2, 3.1 % of the silicon),
    # floor 1 (814 mm2); of 512 eighth dies it is 10.24: 11 by ceil, 10 by floor
    for n, ceil_, floor_ in ((64, 2, 1), (512, 11, 10)):
        by_gpu = _design(814.0, n, spare_fraction=0.02)
        by_si = _design(814.0, n, spare_silicon_fraction=0.02)
        assert float(provisioned_spares(by_gpu)) == ceil_
        assert float(silicon_spares(by_si)) == float(provisioned_spares(by_si)) == floor_
    both = _design(814.0, 64, spare_fraction=0.02, spare_silicon_fraction=0.05)
    assert float(provisioned_spares(both)) == 2 + 3  # the two fields add
    batch = _design(814.0, 64, spare_silicon_fraction=np.array([0.0, 1 / 64, 0.07]))
    np.testing.assert_array_equal(provisioned_spares(batch), [0.0, 1.0, 4.0])


def test_equal_spare_silicon_p99_capacity_by_hand_for_two_die_sizes() -> None:
    # 1/64 of 52,096 mm2 of compute silicon = 814 mm2 of spares: one reticle die for 64 full
    # dies in replicas of 4, four quarter dies for 256 quarter dies in replicas of 16
    # (Llama-3-70B decode); repairs of 14 days (reliability.yaml's range top: RMA)
    tech = {"preset": "n4", "repair_mttr_h": 336.0}
    cases = ((814.0, 64, 4.0, 1.0), (203.5, 256, 16.0, 4.0))
    p99 = []
    for area, n, group, spares in cases:
        d = _design(area, n, spare_silicon_fraction=1 / 64, technology=tech)
        a = evaluate_availability(d, perf=_perf(group, n / group))
        assert float(a["spares"]) == spares
        assert spares * area == 814.0  # equal spare silicon
        m = float(a["mean_gpus_in_repair"])  # failures per hour x 336 h, Poisson (M/G/inf)
        k99 = _poisson_quantile_by_hand(0.99, m)
        replicas = n / group
        by_hand = 1.0 - min(max(k99 - spares, 0.0), replicas) / replicas
        assert float(a["capacity_p99"]) == pytest.approx(by_hand, rel=1e-12)
        p99.append(by_hand)
    # the full die: m = 0.36, K99 = 2 (P(K <= 2) = 0.994), one spare: one replica of 16 down;
    # the quarter die: m = 0.67, K99 = 3 (0.995), four spares cover it
    assert p99 == [pytest.approx(1 - 1 / 16), 1.0]


def test_silicon_spares_are_priced_as_installed_gpus() -> None:
    d = _design(814.0, 64, spare_silicon_fraction=1 / 32)
    c = evaluate_cost(d)
    assert float(c["installed_gpus"]) == 66.0
    plain = evaluate_cost(_design(814.0, 64))
    assert float(plain["installed_gpus"]) == 64.0
    assert float(c["cluster_capex_usd"]) > float(plain["cluster_capex_usd"])
