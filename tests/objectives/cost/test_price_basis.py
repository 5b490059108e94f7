"""The price basis as a fixed field: `price_basis: cost | market`, each vendor at its own cited
margin (objectives/presets/technology/market.yaml), against published street prices."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from objectives.cost import METRICS, evaluate_cost, vendor_margin
from objectives.errors import ContextError
from objectives.presets import resolve_context
from tests.conftest import SPACES, run_dse

ROOT = Path(__file__).resolve().parents[3]
STREET = yaml.safe_load((ROOT / "benchmarks" / "cost_estimates.yaml").read_text())["street"]


def _at(gpu: str, basis: str, **extra: object) -> dict[str, float]:
    m = evaluate_cost(resolve_context({"gpu": gpu, "price_basis": basis, **extra}))
    return {k: float(v) for k, v in m.items()}


def test_margins_are_the_arithmetic_their_sources_state():
    t = resolve_context({"gpu": "h100-sxm"})["technology"]
    # Silicon Analysts' MI300X: $15,000 sold on $5,300 of cost.
    assert t["gpu_gross_margin_amd"] == pytest.approx(1 - 5300 / 15000, abs=5e-4)
    # Epoch's Broadcom TPU margin 50-65 %, middle.
    assert t["gpu_gross_margin_google"] == pytest.approx((0.50 + 0.65) / 2)
    # NVIDIA Blackwell: the middle of Epoch's B200 ~80 % and Silicon Analysts' B200 ~84 %;
    # Hopper: SemiAnalysis's H100 'exceeding 85%', its bound.
    assert t["gpu_gross_margin_nvidia"] == pytest.approx((0.80 + 0.84) / 2)
    assert t["gpu_gross_margin_nvidia_hopper"] == pytest.approx(0.85)
    # The check the Hopper source states (C): Raymond James's H100 $3,320 sold at $25-30k is
    # 87-89 %, above the 85 % bound, and above Blackwell's line.
    assert t["gpu_gross_margin_nvidia"] < 0.85 < 1 - 3320 / 25000
    # Cignal AI via mfanb: 800G built for $300-320, sold for $540-550.
    assert t["optics_gross_margin"] == pytest.approx(1 - 310 / 545, abs=5e-4)


@pytest.mark.parametrize("gpu", ["h100-sxm", "mi300x", "tpu-v5p"])
def test_cost_basis_is_manufacturing_cost_and_market_is_the_vendors_margin(gpu):
    c, m = _at(gpu, "cost"), _at(gpu, "market")
    assert c["gpu_price_usd"] == c["gpu_module_cost_usd"] and c["gpu_margin_usd"] == 0.0
    margin = {"h100-sxm": 0.85, "mi300x": 0.647, "tpu-v5p": 0.575}[gpu]
    assert m["gpu_price_usd"] == pytest.approx(c["gpu_module_cost_usd"] / (1 - margin))
    assert m["gpu_margin_usd"] == pytest.approx(m["gpu_price_usd"] - m["gpu_module_cost_usd"])
    for same in ("gpu_cost_usd", "gpu_module_cost_usd", "host_cost_usd", "energy_cost_usd"):
        assert m[same] == pytest.approx(c[same]), same
    n = c["installed_gpus"]
    assert m["cluster_capex_usd"] == pytest.approx(
        n * (m["gpu_price_usd"] + m["system_share_usd"]) + m["network_cost_usd"]
    )


def test_network_at_market_prices_switches_and_optics_at_their_class_margins():
    """A packet fabric of pluggable links: the switch-side transceivers at the optics margin,
    switches and fibre at the switch margin; the split is the list with optics at $0."""
    d = {"link_type": "pluggable", "cluster_size": 512, "scaleup_fabric": "packet"}
    c, m = _at("h100-sxm", "cost", **d), _at("h100-sxm", "market", **d)
    no_optics = {**d, "technology": {"preset": "n4", "pluggable_usd_per_gbps": 0.0}}
    switches = _at("h100-sxm", "cost", **no_optics)["network_cost_usd"]
    optics = c["network_cost_usd"] - switches
    assert optics > 0 and switches > 0
    assert m["network_cost_usd"] == pytest.approx(switches / (1 - 0.646) + optics / (1 - 0.431))


def test_a_mixed_batch_equals_each_design_alone():
    base = resolve_context({"gpu": "h100-sxm"})
    batch = dict(
        base,
        price_basis=np.array(["cost", "market", "market", "market"]),
        vendor=np.array(["nvidia", "nvidia", "amd", "google"]),
    )
    got = evaluate_cost(batch)
    for i, (basis, vendor) in enumerate(
        [("cost", "nvidia"), ("market", "nvidia"), ("market", "amd"), ("market", "google")]
    ):
        one = evaluate_cost(dict(base, price_basis=basis, vendor=vendor))
        for k in ("gpu_price_usd", "network_cost_usd", "tco_usd", "usd_per_mtok"):
            assert float(got[k][i]) == pytest.approx(float(one[k]), rel=1e-12), (k, i)


def test_unknown_basis_or_vendor_names_the_choices():
    base = resolve_context({"gpu": "h100-sxm"})
    with pytest.raises(ContextError, match="market"):
        evaluate_cost(dict(base, price_basis="retail"))
    with pytest.raises(ContextError, match="nvidia"):
        vendor_margin(dict(base, vendor="intel"))


def test_every_money_metric_names_its_basis():
    for name, (unit, text) in METRICS.items():
        if "USD" in unit:
            assert "price_basis" in text, name


@pytest.mark.parametrize("gpu", sorted(STREET))
def test_market_price_within_25_percent_of_the_street_price(gpu):
    """Issue 40: the vendor's cited margin on the model's cost gives a price within +-25 % of
    the nearest bound of the published street price (H100 -10 %, MI300X +18 %: see
    docs/validation.md)."""
    price = _at(gpu, "market")["gpu_price_usd"]
    low, high = STREET[gpu]["low"], STREET[gpu]["high"]
    assert low / 1.25 <= price <= high * 1.25, (gpu, price, low, high)


def test_set_price_basis_market_from_the_command_line():
    spec = str(SPACES / "h100.yaml")
    cost = json.loads(run_dse("evaluate", spec, "--json").stdout)["metrics"]
    res = run_dse("evaluate", spec, "--json", "--set", "price_basis=market")
    assert res.returncode == 0, res.stderr
    market = json.loads(res.stdout)["metrics"]
    assert market["cost.gpu_price_usd"] == pytest.approx(
        cost["cost.gpu_module_cost_usd"] / (1 - 0.85),
        rel=1e-9,  # the Hopper line
    )
    assert market["cost.tco_usd"] > cost["cost.tco_usd"]
    bad = run_dse("evaluate", spec, "--set", "price_basis=retail")
    assert bad.returncode == 2 and "market" in bad.stderr and "Traceback" not in bad.stderr


def test_switch_margin_is_aristas_and_a_zero_cost_of_capital_is_allowed():
    t = resolve_context({"gpu": "h100-sxm"})["technology"]
    assert t["switch_gross_margin"] == 0.646  # Arista FY2025 non-GAAP gross margin, 64.6 %
    # 0 % cost of capital: straight-line amortisation, a valid technology value.
    d = resolve_context(
        {"gpu": "h100-sxm", "technology": {"preset": "n4", "cost_of_capital_per_year": 0.0}}
    )
    m = {k: float(v) for k, v in evaluate_cost(d).items()}
    opex = m["energy_cost_usd"] + m["maintenance_cost_usd"]
    want = (m["cluster_capex_usd"] + opex) / 4 / 8 / 8766
    assert m["usd_per_gpu_hour"] == pytest.approx(want, rel=1e-12)
