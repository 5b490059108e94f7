"""Uncertain assumptions: parsing, nominal values, sampling, vectorized robust evaluation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dse import api
from dse.errors import SpecError
from dse.model.robust import (
    Uncertain,
    evaluate_under,
    extract_uncertain,
    reduce,
    robust_model,
    sample,
)
from tests.conftest import SPACES as ROOT_SPACES

SPEC = """\
study: rob
fixed:
  gpu: h100-sxm
  technology:
    preset: n4
    defect_density_per_cm2: {dist: lognormal, median: 0.07, sigma: 0.3}
    wafer_cost_usd: {dist: triangular, low: 15000, mode: 17000, high: 22000}
    electricity_usd_per_kwh: {dist: uniform, low: 0.05, high: 0.15}
  cluster_size: 64
  link_type: cpo
  workload: {model: llama3-70b, phase: decode, precision: fp8, batch: 16}
space:
  die_area_mm2: {type: float, low: 200, high: 800, step: 2}
  hbm_stacks_per_die: {type: int, low: 2, high: 6}
objectives:
  - {metric: cost.usd_per_mtok, direction: minimize}
  - {metric: perf.tokens_per_joule, direction: maximize}
constraints: [perf.model_fits]
search: {sampler: random, trials: 6, seed: 3}
"""


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    p = tmp_path / "rob.yaml"
    p.write_text(SPEC)
    return p


DESIGN = {"die_area_mm2": 400.0, "hbm_stacks_per_die": 4}


def test_extract_replaces_distributions_by_nominal() -> None:
    fixed, found = extract_uncertain(
        {
            "technology": {"preset": "n4", "x": {"dist": "normal", "mean": 2.0, "sd": 0.5}},
            "workload": {"output_tokens": {"dist": "uniform", "low": 64, "high": 192}},
        }
    )
    assert fixed == {"technology": {"preset": "n4", "x": 2.0}, "workload": {"output_tokens": 128}}
    assert [u.name for u in found] == ["technology.x", "workload.output_tokens"]


@pytest.mark.parametrize(
    ("dist", "params", "nominal", "p10", "p90"),
    [
        ("normal", {"mean": 10.0, "sd": 2.0}, 10.0, 10 - 2 * 1.2815516, 10 + 2 * 1.2815516),
        ("lognormal", {"median": 1.0, "sigma": 0.5}, 1.0, np.exp(-0.6407758), np.exp(0.6407758)),
        ("uniform", {"low": 0.0, "high": 10.0}, 5.0, 1.0, 9.0),
        (
            "triangular",
            {"low": 0.0, "mode": 0.0, "high": 1.0},
            0.0,
            1 - np.sqrt(0.9),
            1 - np.sqrt(0.1),
        ),
    ],
)
def test_quantiles_and_nominal(
    dist: str, params: dict, nominal: float, p10: float, p90: float
) -> None:
    u = Uncertain(("technology", "x"), dist, params)
    assert u.nominal == pytest.approx(nominal)
    assert u.ppf([0.1, 0.9]) == pytest.approx([p10, p90], rel=1e-6)
    s = sample([u], 2000, seed=1)["technology.x"]
    assert np.percentile(s, 10) == pytest.approx(p10, rel=0.02, abs=0.02)
    assert np.percentile(s, 90) == pytest.approx(p90, rel=0.02, abs=0.02)


def test_samples_are_seeded() -> None:
    u = [Uncertain(("a",), "lognormal", {"median": 1.0, "sigma": 0.3})]
    assert np.array_equal(sample(u, 8, seed=5)["a"], sample(u, 8, seed=5)["a"])
    assert not np.array_equal(sample(u, 8, seed=5)["a"], sample(u, 8, seed=6)["a"])


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("{dist: gamma, k: 1}", "unknown distribution 'gamma' (valid choices: lognormal, normal"),
        ("{dist: lognormal, median: 0.07}", "needs median, sigma; 'sigma' is missing"),
        ("{dist: lognormal, median: 0.07, sigma: -1}", "must be > 0"),
        ("{dist: uniform, low: 2, high: 1}", "low (2.0) must be below high"),
        ("{dist: normal, mean: 1, sd: 1, sigma: 2}", "unknown field 'sigma'"),
    ],
)
def test_bad_distributions_report_the_line(tmp_path: Path, value: str, needle: str) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text(SPEC.replace("{dist: lognormal, median: 0.07, sigma: 0.3}", value))
    with pytest.raises(SpecError) as exc:
        api.load(p)
    text = str(exc.value.problems[0])
    assert needle in text
    assert ":6: fixed.technology.defect_density_per_cm2" in text


def test_nominal_context_and_plain_evaluation(spec: Path) -> None:
    model = api.load(spec)
    assert model.context["technology"]["defect_density_per_cm2"] == 0.07
    assert model.context["technology"]["wafer_cost_usd"] == 17000
    assert model.context["technology"]["electricity_usd_per_kwh"] == pytest.approx(0.1)
    plain = spec.with_name("plain.yaml")
    plain.write_text(
        SPEC.replace("{dist: lognormal, median: 0.07, sigma: 0.3}", "0.07")
        .replace("{dist: triangular, low: 15000, mode: 17000, high: 22000}", "17000")
        .replace("{dist: uniform, low: 0.05, high: 0.15}", "0.1")
    )
    assert api.evaluate(model, DESIGN) == api.evaluate(api.load(plain), DESIGN)


def test_vectorized_equals_loop_and_each_scenario(spec: Path) -> None:
    model = api.load(spec)
    values = sample(model.uncertain, 5, seed=0)
    fast = evaluate_under(model, DESIGN, values, vectorized=True)
    slow = evaluate_under(model, DESIGN, values, vectorized=False)
    for k in slow:
        assert np.allclose(fast[k], slow[k]), k
    d0 = float(values["technology.defect_density_per_cm2"][2])
    wafer = float(values["technology.wafer_cost_usd"][2])
    kwh = float(values["technology.electricity_usd_per_kwh"][2])
    one, params = api.load_for_evaluate(
        spec,
        [
            f"technology.defect_density_per_cm2={d0!r}",
            f"technology.wafer_cost_usd={wafer!r}",
            f"technology.electricity_usd_per_kwh={kwh!r}",
            "die_area_mm2=400",
            "hbm_stacks_per_die=4",
        ],
    )
    assert not one.uncertain  # --set replaced every distribution
    assert fast["cost.usd_per_mtok"][2] == pytest.approx(
        api.evaluate(one, params)["cost.usd_per_mtok"]
    )


def test_reduce_statistics() -> None:
    a = np.arange(11.0)
    assert reduce(a, "mean", maximize=True) == 5.0
    assert reduce(a, "p10", maximize=True) == 1.0
    assert reduce(a, "p90", maximize=False) == 9.0
    assert reduce(a, "pessimistic", maximize=True) == 1.0
    assert reduce(a, "pessimistic", maximize=False) == 9.0
    assert reduce(a, "optimistic", maximize=False) == 1.0


def test_robust_model_metrics(spec: Path) -> None:
    model = api.load(spec)
    rm = robust_model(model, k=16, statistic="pessimistic")
    assert rm.spec.study == "rob-robust-pessimistic-k16"
    assert rm.vectorized
    out = {k: float(v) for k, v in rm.evaluate(DESIGN).items()}
    nominal = api.evaluate(model, DESIGN)
    assert out["nominal.cost.usd_per_mtok"] == pytest.approx(nominal["cost.usd_per_mtok"])
    assert out["cost.usd_per_mtok"] == pytest.approx(out["robust.cost.usd_per_mtok.p90"])
    assert out["robust.cost.usd_per_mtok.p10"] < out["robust.cost.usd_per_mtok.p90"]
    assert out["robust.cost.usd_per_mtok.std"] > 0
    # energy price moves tokens/J not at all: every scenario has the same value
    assert out["perf.tokens_per_joule"] == pytest.approx(nominal["perf.tokens_per_joule"])


def test_workload_assumption_is_vectorized(spec: Path, tmp_path: Path) -> None:
    p = tmp_path / "wl.yaml"
    p.write_text(
        SPEC.replace(
            "batch: 16}", "batch: 16, output_tokens: {dist: uniform, low: 64, high: 256}}"
        )
    )
    model = api.load(p)
    assert model.context["workload"]["output_tokens"] == 160
    rm = robust_model(model, k=4, statistic="mean")
    # the perf model takes numeric workload fields per design, so the scenarios ride the batch
    # axis (vectorizable() checked the batch against the per-scenario loop)
    assert rm.vectorized
    out = rm.evaluate(DESIGN)
    assert np.isfinite(float(out["cost.usd_per_mtok"]))
    fast = evaluate_under(model, DESIGN, rm.samples, vectorized=True, strict=False)
    slow = evaluate_under(model, DESIGN, rm.samples, vectorized=False, strict=False)
    for k, v in slow.items():
        np.testing.assert_allclose(fast[k], v, rtol=1e-12, err_msg=k)


def test_robust_needs_distributions(tmp_path: Path) -> None:
    from dse.errors import DseError

    p = tmp_path / "plain.yaml"
    p.write_text(
        SPEC.replace("{dist: lognormal, median: 0.07, sigma: 0.3}", "0.07")
        .replace("{dist: triangular, low: 15000, mode: 17000, high: 22000}", "17000")
        .replace("{dist: uniform, low: 0.05, high: 0.15}", "0.1")
    )
    with pytest.raises(DseError, match="--robust needs uncertain assumptions"):
        robust_model(api.load(p), k=4, statistic="mean")


def test_robust_run_of_a_population_sampler_gets_no_warm_start(tmp_path: Path) -> None:
    """The default warm start sweeps batches; a robust model scores one design at a time, so
    ``--robust`` on an NSGA-II spec (spaces/paper/robust.yaml) runs without one."""
    from dse.search.study.warm_start import warm_start_samples

    nominal = api.load(ROOT_SPACES / "paper" / "robust.yaml")
    assert warm_start_samples(nominal) > 0 or nominal.spec.search.warm_start == 0
    rm = robust_model(nominal, k=2, statistic="pessimistic")
    assert warm_start_samples(rm) == 0
