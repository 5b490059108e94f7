"""Designs that cannot run (issue 39, finite by construction): each reason is flagged by name
(perf.coolable, perf.runnable, perf.model_fits) and the metrics follow the one convention of
docs/evaluators.md: no replica, rates 0, a never-ending time is the lifetime, cost per token on
one token per lifetime; a spec that constrains perf.runnable keeps them off the front."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from objectives import resolve_context
from objectives.availability import evaluate_availability
from objectives.cost import evaluate_cost
from objectives.perf import evaluate_perf

#: technology.lifetime_years of the n4 node (4 years) in seconds: 4 x 365.25 x 86,400
LIFETIME_S = 126_230_400.0

#: (why it cannot run, phase, design values): each on an H100 SXM serving or training Llama-3-8B
CANNOT_RUN: dict[str, tuple[str, dict[str, Any]]] = {
    # 200 links x 8 lanes x 400 Gb/s draw more than the air-cooled package may: no clock cools it
    "no clock cools it": (
        "serve",
        {"links_per_gpu": 200, "optics_per_link": 8, "lane_gbps": 400.0, "cooling": "air"},
    ),
    "no HBM bandwidth": ("serve", {"hbm_tbps_per_stack": 0.0}),
    "no link for the gradients": ("train", {"links_per_gpu": 0}),
}


def _design(phase: str, **values: Any) -> dict[str, Any]:
    workload = {"model": "llama3-8b", "phase": phase, "precision": "fp8"}
    context = resolve_context({"gpu": "h100-sxm", "workload": workload})
    return {**context, "cluster_size": 64, **values}


@pytest.mark.parametrize("why", sorted(CANNOT_RUN))
def test_a_design_that_cannot_run_is_flagged_and_finite(why: str) -> None:
    phase, values = CANNOT_RUN[why]
    d = _design(phase, **values)
    perf = evaluate_perf(d)
    avail = evaluate_availability(d, perf=perf)
    cost = evaluate_cost(d, perf=perf, availability=avail)
    for name, out in (("perf", perf), ("availability", avail), ("cost", cost)):
        bad = [k for k, v in out.items() if not np.all(np.isfinite(v))]
        assert not bad, (name, bad)
    assert perf["runnable"] == 0.0
    assert perf["coolable"] == (0.0 if why == "no clock cools it" else 1.0)
    assert perf["model_fits"] == 1.0  # the weights fit: the reason is elsewhere
    assert perf["replicas"] == 0.0 and perf["tokens_per_s"] == 0.0
    assert perf["tokens_per_joule"] == 0.0 and perf["mfu"] == 0.0
    assert perf["step_s"] == pytest.approx(LIFETIME_S, rel=1e-12)  # the step never ends
    assert perf["cluster_power_w"] > 0.0  # the GPUs are powered all the same
    assert avail["capacity_availability"] == 0.0 and avail["interruptions_per_day"] == 0.0
    # one token over the lifetime: TCO per token, x 1e6 per Mtok
    assert cost["usd_per_mtok"] == pytest.approx(cost["tco_usd"] * 1e6, rel=1e-12)


def test_a_design_that_runs_is_flagged_runnable() -> None:
    perf = evaluate_perf(_design("serve"))
    assert perf["runnable"] == 1.0 and perf["coolable"] == 1.0
    assert perf["replicas"] == 64.0 and perf["tokens_per_s"] > 0.0


def test_a_batch_gives_each_design_what_it_gets_alone() -> None:
    """Vectorized == scalar across designs that run and designs that cannot."""
    batch = {
        "hbm_tbps_per_stack": np.array([0.67, 0.0, 0.67, 0.67]),
        "links_per_gpu": np.array([18, 18, 200, 0]),
        "optics_per_link": np.array([2, 2, 8, 2]),
        "lane_gbps": np.array([100.0, 100.0, 400.0, 100.0]),
    }
    d = _design("serve", cooling="air", **batch)
    got = evaluate_perf(d)
    assert got["runnable"].tolist() == [1.0, 0.0, 0.0, 1.0]
    for i in range(4):
        alone = evaluate_perf(
            _design("serve", cooling="air", **{k: v[i] for k, v in batch.items()})
        )
        for k, v in alone.items():
            assert got[k][i] == pytest.approx(float(v), rel=1e-12, abs=0.0), (i, k)


SPEC = """
study: cannot-run
fixed:
  gpu: h100-sxm
  technology: auto
  cooling: air
  workload: {model: llama3-8b, phase: serve, precision: fp8}
space:
  hbm_tbps_per_stack: {type: categorical, choices: [0.0, 0.67]}  # H100 SXM: 3.35 TB/s / 5
  links_per_gpu:      {type: categorical, choices: [18, 200]}
  optics_per_link:    {type: categorical, choices: [2, 8]}
  lane_gbps:          {type: categorical, choices: [100, 400]}
  cluster_size:       {type: categorical, choices: [8, 64]}
objectives:
  - {metric: cost.tco_usd, direction: minimize}
  - {metric: perf.tokens_per_joule, direction: maximize}
constraints:
  - perf.runnable
search: {sampler: random, trials: 1, seed: 0}
"""


@pytest.mark.slow
def test_designs_that_cannot_run_never_reach_the_front(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole grid: every design finite, those that cannot run infeasible, the front all
    runnable; without the constraint the cheapest design of this grid, one that cannot run,
    is on the front (the flag is what keeps it off)."""
    from dse import api

    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "cannot-run.yaml"
    spec.write_text(SPEC)
    result = api.sweep(spec)
    assert result.designs_evaluated == 32 and result.finite == 32
    assert 0 < result.feasible < 32
    assert len(result.front) > 0
    assert (result.front["perf.runnable"] == 1.0).all()
    free = tmp_path / "unconstrained.yaml"
    unconstrained = SPEC.replace("study: cannot-run", "study: free").replace(
        "constraints:\n  - perf.runnable\n", ""
    )
    free.write_text(unconstrained)
    assert (api.sweep(free).front["perf.runnable"] == 0.0).any()
