"""Cost and energy per token actually delivered: training goodput, serving capacity that is up."""

from __future__ import annotations

import numpy as np
import pytest

from objectives.availability import evaluate_availability
from objectives.cost import evaluate_cost
from objectives.perf import evaluate_perf
from objectives.presets import resolve_context

WL = {"model": "llama3-70b", "precision": "fp8", "input_tokens": 2048, "output_tokens": 512}


def design(phase: str, **over: object) -> dict:
    d = resolve_context(
        {
            "gpu": "h100-sxm",
            "technology": "n4",
            "cluster_size": 64,
            "workload": {**WL, "phase": phase},
        }
    )
    d.update(over)
    return d


@pytest.mark.parametrize(
    ("phase", "kept"),
    [
        ("train", "goodput_fraction"),
        ("decode", "capacity_availability"),
        ("prefill", "capacity_availability"),
    ],
)
def test_delivered_metrics_divide_by_what_failures_leave(phase: str, kept: str) -> None:
    d = design(phase)
    a, c, p = evaluate_availability(d), evaluate_cost(d), evaluate_perf(d)
    frac = float(a[kept])
    assert 0.5 < frac < 1.0
    assert float(a["delivered_fraction"]) == frac
    assert float(c["usd_per_mtok_delivered"]) == pytest.approx(
        float(c["usd_per_mtok"]) / frac, rel=1e-12
    )
    assert float(a["delivered_tokens_per_joule"]) == pytest.approx(
        float(p["tokens_per_joule"]) * frac, rel=1e-12
    )
    # at fixed site power: delivered tokens/s per MW of facility power (IT x PUE)
    assert float(a["delivered_tokens_per_s_per_mw"]) == pytest.approx(
        float(p["tokens_per_s"]) * frac / (float(p["facility_power_w"]) / 1e6), rel=1e-12
    )


def test_training_goodput_falls_with_cluster_size_and_delivered_cost_rises() -> None:
    small, big = design("train", cluster_size=64), design("train", cluster_size=1024)
    gs = float(evaluate_availability(small)["goodput_fraction"])
    gb = float(evaluate_availability(big)["goodput_fraction"])
    assert gb < gs

    def ratio(d: dict) -> float:
        m = evaluate_cost(d)
        return float(m["usd_per_mtok_delivered"]) / float(m["usd_per_mtok"])

    assert ratio(big) > ratio(small) > 1.0


def test_batch_equals_scalars_and_given_availability_is_used() -> None:
    sizes = np.array([64.0, 256.0, 1024.0])
    batch = evaluate_cost(design("train", cluster_size=sizes))["usd_per_mtok_delivered"]
    for i, n in enumerate(sizes):
        one = evaluate_cost(design("train", cluster_size=n))["usd_per_mtok_delivered"]
        assert batch[i] == pytest.approx(float(one), rel=1e-12)
    d = design("decode")
    first = evaluate_cost(d)
    assert float(first["usd_per_mtok_delivered"]) > float(first["usd_per_mtok"])
    avail = dict(evaluate_availability(d))
    avail["capacity_availability"] = np.asarray(0.5)  # what cost is given is what it uses
    half = evaluate_cost(d, perf=evaluate_perf(d), availability=avail)
    assert float(half["usd_per_mtok_delivered"]) == pytest.approx(2 * float(first["usd_per_mtok"]))
