"""The cost evaluator end to end: contract, breakdown identities, batches, overrides."""

from __future__ import annotations

import numpy as np
import pytest

from objectives.cost import METRICS, cost_breakdown, evaluate_cost
from objectives.errors import ContextError
from objectives.presets import resolve_context


@pytest.fixture(scope="module")
def h100() -> dict:
    return resolve_context({"gpu": "h100-sxm", "cluster_size": 1024})


def _grid(base: dict) -> dict:
    """A 4 x 3 x 3 x 2 batch over die area, link type, cluster size and spares."""
    d = dict(base)
    d["die_area_mm2"] = np.array([100.0, 203.5, 400.0, 814.0]).reshape(4, 1, 1, 1)
    d["link_type"] = np.array(["electrical", "pluggable", "cpo"]).reshape(1, 3, 1, 1)
    d["cluster_size"] = np.array([8.0, 512.0, 4096.0]).reshape(1, 1, 3, 1)
    d["spare_fraction"] = np.array([0.0, 0.05]).reshape(1, 1, 1, 2)
    return d


def _check_identities(m: dict) -> None:
    def close(a, b):
        np.testing.assert_allclose(a, b, rtol=1e-12)

    close(
        m["package_cost_usd"],
        m["interposer_cost_usd"]
        + m["substrate_cost_usd"]
        + m["assembly_cost_usd"]
        + m["final_test_cost_usd"]
        + m["assembly_scrap_usd"],
    )
    close(
        m["gpu_cost_usd"],
        m["silicon_cost_usd"] + m["hbm_cost_usd"] + m["optics_cost_usd"] + m["package_cost_usd"],
    )
    close(
        m["module_cost_usd"],
        m["power_delivery_cost_usd"] + m["module_board_cost_usd"] + m["thermal_cost_usd"],
    )
    close(m["gpu_module_cost_usd"], m["gpu_cost_usd"] + m["module_cost_usd"])
    close(m["system_share_usd"], m["host_cost_usd"] + m["facility_cost_usd"])
    per_gpu = m["gpu_module_cost_usd"] + m["gpu_margin_usd"] + m["system_share_usd"]
    close(m["cluster_capex_usd"], m["installed_gpus"] * per_gpu + m["network_cost_usd"])
    close(m["tco_usd"], m["cluster_capex_usd"] + m["energy_cost_usd"] + m["maintenance_cost_usd"])


def test_h100_metrics_contract_and_breakdown(h100):
    m = evaluate_cost(h100)
    assert set(m) == set(evaluate_cost.metrics) == set(METRICS)
    for name in (
        "dies_per_wafer",
        "die_yield",
        "die_cost_usd",
        "gpu_cost_usd",
        "cluster_capex_usd",
        "tco_usd",
        "usd_per_pflops",
        "usd_per_mtok",
        "hbm_cost_usd",
        "package_cost_usd",
        "optics_cost_usd",
        "system_share_usd",
        "network_cost_usd",
        "energy_cost_usd",
        "reticle_fits",
    ):
        assert name in m and np.isfinite(m[name]).all() and m[name].shape == ()
    _check_identities(m)
    # n4 preset: NB alpha 10, D0 0.07; 60 % of the 814 mm2 in 144 SMs of which 12 may fail (a
    # 3.4 mm2 SM fails with p = 0.0024, so P(> 12 of 144 bad) ~ 1e-20), half of the rest
    # critical: yield (1 + 8.14 x 0.4 x 0.5 x 0.07 / 10)^-10 = 0.893 (0.575 without harvesting).
    assert float(m["die_yield"]) == pytest.approx(0.8929, abs=6e-4)
    # 814 mm2 at aspect 1.21 (25.94 x 31.38 mm) + 0.2 mm scribe -> pitch 26.14 x 31.58 =
    # 825.5 mm2; usable d = 294 mm: pi 147^2 / 825.5 = 82.24, minus the edge band
    # pi 294 (26.14 + 31.58) / (2 sqrt 2) / 825.5 = 22.83 -> 59.40 gross dies.
    assert float(m["dies_per_wafer"]) == pytest.approx(59.40, abs=0.01)
    # ($17,000 + $1,000 sort) / (59.40 x 0.8929) = $339 (public estimates: ~$200-300).
    assert float(m["die_cost_usd"]) == pytest.approx(18000 / (59.40 * 0.8929), rel=1e-3)
    # An H100-class GPU costs a few thousand dollars to make (Raymond James: $3,320).
    assert 2000 < float(m["gpu_cost_usd"]) < 4500
    assert float(m["optics_cost_usd"]) == 0.0  # NVLink copper
    assert float(m["reticle_fits"]) == 1.0  # 25.94 x 31.38 mm fits the 26 x 33 mm field


def test_grid_all_finite_breakdown_sums_and_vectorized_equals_scalar(h100):
    batch = _grid(h100)
    m = evaluate_cost(batch)
    for name, v in m.items():
        assert v.shape == (4, 3, 3, 2), name
        assert np.isfinite(v).all(), name
    _check_identities(m)
    for idx in [(0, 2, 0, 0), (1, 1, 1, 1), (3, 0, 2, 1), (2, 2, 2, 0)]:
        one = dict(h100)
        one["die_area_mm2"] = float(batch["die_area_mm2"].reshape(-1)[idx[0]])
        one["link_type"] = str(batch["link_type"].reshape(-1)[idx[1]])
        one["cluster_size"] = float(batch["cluster_size"].reshape(-1)[idx[2]])
        one["spare_fraction"] = float(batch["spare_fraction"].reshape(-1)[idx[3]])
        scalar = evaluate_cost(one)
        for name in m:
            assert m[name][idx] == pytest.approx(float(scalar[name]), rel=1e-12), name


def test_spares_are_paid_for(h100):
    d = dict(h100, spare_fraction=np.array([0.0, 0.1]))
    m = evaluate_cost(d)
    np.testing.assert_array_equal(m["installed_gpus"], [1024, 1024 + 103])
    assert m["cluster_capex_usd"][1] > m["cluster_capex_usd"][0]


def test_technology_overrides_reach_the_model():
    base = resolve_context({"gpu": "h100-sxm"})
    worse = resolve_context({"gpu": "h100-sxm", "technology": {"defect_density_per_cm2": 0.1}})
    # (1 + 8.14 x 0.2 x 0.1 / 10)^-10 = 0.851; Murphy ((1 - e^-x) / x)^2 at x = 0.114: 0.893
    assert evaluate_cost(worse)["die_yield"] == pytest.approx(0.8509, abs=6e-4)
    murphy = resolve_context({"gpu": "h100-sxm", "technology": {"yield_model": "murphy"}})
    assert evaluate_cost(murphy)["die_yield"] == pytest.approx(0.8933, abs=6e-4)
    assert evaluate_cost(base)["die_cost_usd"] < evaluate_cost(worse)["die_cost_usd"]
    packet = resolve_context(
        {
            "gpu": "h100-sxm",
            "link_type": "cpo",
            "cluster_size": 100000,
            "technology": {"optical_fabric": "packet"},
        }
    )
    assert float(evaluate_cost(packet)["network_tiers"]) == 3  # 200G ports: radix 256
    with pytest.raises(ContextError) as err:  # refused by the technology schema
        resolve_context({"gpu": "h100-sxm", "technology": {"yield_model": "murphey"}})
    assert err.value.path == "technology.yield_model"
    assert "did you mean 'murphy'?" in str(err.value)


def test_tco_arithmetic_with_given_perf_figures(h100):
    # Hand-set perf figures isolate the TCO arithmetic from the performance model.
    perf = {
        "tokens_per_s": 1.0e6,
        "tflops_per_gpu": 1000.0,
        "gpu_power_w": 600.0,
        "package_power_w": 700.0,
        "cluster_power_w": 1024 * 700.0,
        "facility_power_w": 1024 * 700.0 * 1.2,
        "facility_w_per_gpu": 800.0 * 1.2,
    }
    m = cost_breakdown(h100, perf)
    _check_identities(m)
    # Host 0.7 kW x $3,770; facility 800 W provisioned (960 W all-in / PUE 1.2) x $11,000/kW
    # x 4 / 15 years.
    assert float(m["host_cost_usd"]) == pytest.approx(0.7 * 3770)
    assert float(m["facility_cost_usd"]) == pytest.approx(0.8 * 11000 * 4 / 15)
    # 860.16 kW x 4 x 8,766 h x $0.08.
    assert float(m["energy_cost_usd"]) == pytest.approx(860.16 * 4 * 8766 * 0.08)
    assert float(m["maintenance_cost_usd"]) == pytest.approx(
        0.03 * 4 * float(m["cluster_capex_usd"])
    )
    assert float(m["usd_per_pflops"]) == pytest.approx(float(m["tco_usd"]) / 1024.0)
    tokens = 1.0e6 * 4 * 365.25 * 86400
    assert float(m["usd_per_mtok"]) == pytest.approx(float(m["tco_usd"]) * 1e6 / tokens)
    # The price basis: at market the GPU carries its vendor's margin and the network its
    # gear's (switches 64.6 %, the scale-out optics 43.1 %), the manufacturing cost neither.
    assert float(m["gpu_price_usd"]) == float(m["gpu_module_cost_usd"])
    assert float(m["gpu_margin_usd"]) == 0.0
    marked = cost_breakdown(dict(h100, price_basis="market"), perf)
    assert float(marked["gpu_cost_usd"]) == pytest.approx(float(m["gpu_cost_usd"]))
    assert float(marked["gpu_price_usd"]) == pytest.approx(
        float(m["gpu_module_cost_usd"]) / (1 - 0.85)  # H100: the Hopper line, market.yaml
    )
    net = float(m["network_cost_usd"])
    assert net / (1 - 0.431) < float(marked["network_cost_usd"]) < net / (1 - 0.646)


def test_design_that_serves_nothing_stays_finite(h100):
    tiny = dict(h100, hbm_stacks_per_die=1, hbm_gb_per_stack=1.0, cluster_size=8)
    m = evaluate_cost(tiny)
    assert np.isfinite(m["usd_per_mtok"]) and float(m["usd_per_mtok"]) > 1e6


def test_lite_gpu_yields_better_and_costs_less_per_good_mm2(h100):
    d = dict(h100, die_area_mm2=np.array([203.5, 814.0]), hbm_stacks_per_die=np.array([1.25, 5]))
    m = evaluate_cost(d)
    assert m["die_yield"][0] > m["die_yield"][1]
    # Harvesting (GH100 ships 132 of 144 SMs) narrows the gap: 0.78x per good mm2, where a
    # die with no spare cores would give 0.55x.
    assert m["cost_per_good_mm2_usd"][0] < 0.8 * m["cost_per_good_mm2_usd"][1]
    assert m["package_yield"][0] > m["package_yield"][1]
