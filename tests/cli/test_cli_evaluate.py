"""`dse evaluate --breakdown` and `--simulate` through the real console script."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import SPACES, run_dse


def test_breakdown_lines_add_up_to_their_subtotals() -> None:
    res = run_dse("evaluate", str(SPACES / "h100.yaml"), "--breakdown")
    assert res.returncode == 0, res.stderr
    metrics = json.loads(run_dse("evaluate", str(SPACES / "h100.yaml"), "--json").stdout)[
        "metrics"
    ]
    text = res.stdout
    for label in (
        "compute dies (known good)",
        "HBM stacks",
        "= GPU manufacturing cost",
        "network",
        "energy",
        "= TCO",
    ):
        assert label in text, label
    # The printed GPU subtotal and TCO are the evaluator's own numbers, rounded to dollars.
    gpu = re.search(r"= GPU manufacturing cost\s*│\s*([\d,]+)", text)
    tco = re.search(r"= TCO\s*│\s*([\d,]+)", text)
    assert gpu and tco, text
    assert int(gpu.group(1).replace(",", "")) == round(metrics["cost.gpu_cost_usd"])
    assert int(tco.group(1).replace(",", "")) == round(metrics["cost.tco_usd"])


def test_simulate_matches_closed_form_capacity() -> None:
    res = run_dse(
        "evaluate",
        str(SPACES / "h100.yaml"),
        "--simulate",
        "--json",
        "--set",
        "cluster_size=1024",
        "--runs",
        "1500",
        "--seed",
        "7",
    )
    assert res.returncode == 0, res.stderr
    sim = json.loads(res.stdout)["samples"]["availability.capacity_fraction"]
    closed = json.loads(
        run_dse(
            "evaluate", str(SPACES / "h100.yaml"), "--json", "--set", "cluster_size=1024"
        ).stdout
    )["metrics"]["availability.capacity_availability"]
    # Expected capacity loss agrees within 5 % between the Monte Carlo and the closed form.
    assert (1 - sim["mean"]) == pytest.approx(1 - closed, rel=0.05)
    assert sim["p1"] <= sim["p50"] <= sim["p99"]
