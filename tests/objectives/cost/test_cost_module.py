"""The GPU module's lines and test by tester time, against hand computations from the cited
figures (objectives/presets/technology/module.yaml)."""

from __future__ import annotations

import numpy as np
import pytest

from objectives.cost import evaluate_cost
from objectives.cost.module import cost_of_test_time, module_cost
from objectives.presets import resolve_context

MODULE = dict(
    module_core_voltage_v=0.8,
    module_amps_per_power_stage=19.445,
    module_usd_per_power_stage=6.15,
    module_pcb_mm2_per_amp=18.0,
    module_pcb_layers=22.0,
    module_pcb_usd_per_m2_layer=92.3,
    thermal_liquid_usd_per_kw=214.3,
    thermal_air_usd_per_kw=214.3,
)


def test_the_constants_are_the_arithmetic_their_sources_state():
    t = resolve_context({"gpu": "h100-sxm"})["technology"]
    # 700 W / 0.8 V = 875 A over the 45 stages in the middle of Cinda's 40-50 per H100.
    assert t["module_amps_per_power_stage"] == pytest.approx(700 / 0.8 / 45, rel=1e-4)
    # MPS's ~$80 of power content per ordinary server over a 13-stage server board.
    assert t["module_usd_per_power_stage"] == pytest.approx(80 / 13, abs=0.01)
    # 75 % of a 120 x 175 mm SXM5 board over 875 A.
    assert t["module_pcb_mm2_per_amp"] == pytest.approx(0.75 * 120 * 175 / 875, rel=1e-9)
    # DGX A100: 2,880 yuan / (8 x 0.03 m2) / 20 layers / 6.5 yuan per $.
    assert t["module_pcb_usd_per_m2_layer"] == pytest.approx(2880 / 0.24 / 20 / 6.5, abs=0.05)
    # $300 per GB300 cold plate over 1.4 kW.
    assert t["thermal_liquid_usd_per_kw"] == pytest.approx(300 / 1.4, abs=0.05)
    # 20 minutes over 15 insertions and 2 x 800 mm2 of logic.
    assert t["test_minutes_per_insertion_cm2"] == pytest.approx(20 / 15 / 16, abs=1e-4)
    # (500 + 50) $/h x 1.3 overhead.
    assert t["tester_usd_per_hour"] == pytest.approx((500 + 50) * 1.3)


def test_h100_module_hand_computation():
    # 700 W -> 875 A -> 45 stages x $6.15 = $276.75; board 875 A x 18 mm2/A + 3,410 mm2 of
    # substrate = 19,160 mm2 = 0.01916 m2 x 22 layers x $92.3 = $38.91; plate 0.7 kW x $214.3.
    m = module_cost(package_power_w=700.0, substrate_mm2=3410.0, is_liquid=False, **MODULE)
    assert float(m.power_stages) == 45.0
    assert float(m.power_delivery_usd) == pytest.approx(276.75)
    assert float(m.pcb_mm2) == pytest.approx(19160.0)
    assert float(m.pcb_usd) == pytest.approx(0.01916 * 22 * 92.3)
    assert float(m.thermal_usd) == pytest.approx(150.01)
    assert float(m.total_usd) == pytest.approx(276.75 + 0.01916 * 22 * 92.3 + 150.01)


def test_phases_follow_current_not_watts():
    """The same watts at a lower core voltage need more phases; a quarter-power package a
    quarter of the stages (rounded up), board and plate."""
    lo_v = dict(MODULE, module_core_voltage_v=0.7)
    a = module_cost(package_power_w=700.0, substrate_mm2=0.0, is_liquid=False, **MODULE)
    b = module_cost(package_power_w=700.0, substrate_mm2=0.0, is_liquid=False, **lo_v)
    assert float(b.power_stages) == np.ceil(1000 / 19.445) > float(a.power_stages)
    q = module_cost(package_power_w=175.0, substrate_mm2=0.0, is_liquid=True, **MODULE)
    assert float(q.power_stages) == np.ceil(45 / 4)
    assert float(q.thermal_usd) == pytest.approx(float(a.thermal_usd) / 4)
    assert float(q.pcb_usd) == pytest.approx(float(a.pcb_usd) / 4)


def test_cooling_type_picks_the_rate_and_batches_match_scalars():
    rates = dict(MODULE, thermal_air_usd_per_kw=100.0)
    both = module_cost(
        package_power_w=np.array([700.0, 1000.0]),
        substrate_mm2=np.array([3410.0, 6164.0]),
        is_liquid=np.array([False, True]),
        **rates,
    )
    np.testing.assert_allclose(both.thermal_usd, [70.0, 214.3])
    for i, (w, s, liq) in enumerate([(700.0, 3410.0, False), (1000.0, 6164.0, True)]):
        one = module_cost(package_power_w=w, substrate_mm2=s, is_liquid=liq, **rates)
        assert float(one.total_usd) == pytest.approx(float(both.total_usd[i]))


def test_tester_time_hand_computation():
    # B200: 15 insertions x 0.0833 min/cm2 x 16 cm2 = 20 min at $715/h = $238.2.
    minutes, usd = cost_of_test_time(
        1600.0, insertions=15, minutes_per_insertion_cm2=0.0833, usd_per_hour=715.0
    )
    assert float(minutes) == pytest.approx(19.992)
    assert float(usd) == pytest.approx(19.992 / 60 * 715)


def test_the_module_is_in_the_gpu_price_and_the_breakdown_adds_up():
    m = evaluate_cost(resolve_context({"gpu": "h100-sxm"}))
    assert float(m["gpu_module_cost_usd"]) == pytest.approx(
        float(m["gpu_cost_usd"]) + float(m["module_cost_usd"])
    )
    # Issue 40: the H100 with its module lines inside $2,700-3,600.
    assert 2700 <= float(m["gpu_module_cost_usd"]) <= 3600
    lines = evaluate_cost.waterfall({k: float(v) for k, v in m.items()})
    sections: dict[str, list[tuple[str, float]]] = {}
    for section, label, usd in lines:
        sections.setdefault(section, []).append((label, usd))
    for section, rows in sections.items():
        parts = [usd for label, usd in rows if not label.startswith("=")]
        total = [usd for label, usd in rows if label.startswith("=")]
        assert total and sum(parts) == pytest.approx(total[0], rel=1e-12), section


def test_air_heat_sink_takes_the_cold_plates_rate():
    """No air heat-sink price is published: the preset uses the cold plate's $/kW (E)."""
    t = resolve_context({"gpu": "h100-sxm"})["technology"]
    assert t["thermal_air_usd_per_kw"] == t["thermal_liquid_usd_per_kw"]


def test_hopper_generation_tests_in_its_own_insertions():
    """A GPU preset's test_insertions (Hopper: 8, from Advantest's 'Blackwell takes 3-4x
    Hopper's tester time' over 1.97x the silicon) replaces technology.test_insertions (15);
    0 or absent keeps it. By hand: H100 8 x 0.0833 min/cm2 x 8.14 cm2 = 5.42 min, $64.6."""
    h100 = resolve_context({"gpu": "h100-sxm"})
    assert h100["test_insertions"] == 8
    # 15 x 1,600 / 814 / 4 = 7.4 and / 3 = 9.8: 8 whole passes lie between.
    assert 15 * 1600 / 814 / 4 <= 8 <= 15 * 1600 / 814 / 3
    m = evaluate_cost(h100)
    minutes = 8 * 0.0833 * 8.14
    assert float(m["test_minutes"]) == pytest.approx(minutes, rel=1e-9)
    assert float(m["final_test_cost_usd"]) == pytest.approx(minutes / 60 * 715, rel=1e-9)
    today = evaluate_cost(dict(h100, test_insertions=0.0))
    assert float(today["test_minutes"]) == pytest.approx(15 * 0.0833 * 8.14, rel=1e-9)
    # The B200 says nothing: today's count; a batch mixing both matches the scalars.
    assert resolve_context({"gpu": "b200"})["test_insertions"] == 0
    both = evaluate_cost(dict(h100, test_insertions=np.array([8.0, 0.0])))
    np.testing.assert_allclose(
        both["test_minutes"], [float(m["test_minutes"]), float(today["test_minutes"])]
    )
