"""HBM, interposer, package assembly yield and GPU-side optics cost."""

from __future__ import annotations

import numpy as np
import pytest

from objectives.cost.package import (
    gpu_optics_cost,
    hbm_stack_cost,
    interposer_area_mm2,
    interposer_cost,
    link_masks,
    package_cost,
)
from objectives.errors import ContextError
from objectives.package import GENERATIONS, hbm_generation_code, hbm_spec
from objectives.presets import technology_presets

OPTICS = dict(
    pluggable_usd_per_gbps=1.0,
    cpo_usd_per_gbps=0.5,
    cpo_engine_gbps=6400.0,
    cpo_lanes_per_laser=4.0,
    cpo_laser_usd=40.0,
)
PACKAGE = dict(
    substrate_area_ratio=2.0,
    substrate_usd_per_cm2=3.0,
    assembly_usd_per_bond=6.5,
    bond_yield=0.99,
)


def test_hbm_stack_prices_by_generation():
    # HBM3 16 GB: 40 + 12 x 16 = 232; HBM3e 24 GB: 60 + 13 x 24 = 372 (~$370 SK hynix->NVIDIA).
    got = hbm_stack_cost(
        np.array([16.0, 24.0]), usd_per_gb=np.array([12.0, 13.0]), usd_per_stack=[40.0, 60.0]
    )
    np.testing.assert_allclose(got, [232.0, 372.0])
    # H100: 5 x 16 GB HBM3 = $1,160, within the $1,200-1,500 public estimates' low end.
    assert 5 * float(hbm_stack_cost(16.0, usd_per_gb=12.0, usd_per_stack=40.0)) == 1160.0


def _gen(declared: object, tbps: object, node: str = "auto", gb: object = 16.0) -> np.ndarray:
    t = dict(technology_presets()["n4"], hbm_generation=node)
    code = hbm_generation_code(
        {
            "hbm_generation": declared,
            "hbm_tbps_per_stack": tbps,
            "hbm_gb_per_stack": gb,
            "technology": t,
        }
    )
    return np.asarray(GENERATIONS)[code]


def test_hbm_generation_auto_by_bandwidth_declared_otherwise():
    # auto: the first of HBM3 (0.819 TB/s), HBM3e (1.2288) and HBM4 (2.048) that covers it
    np.testing.assert_array_equal(
        _gen("auto", np.array([0.67, 0.819, 1.2, 1.5])), ["hbm3", "hbm3", "hbm3e", "hbm4"]
    )
    # ... and whose capacity covers it: HBM3 and 8-high HBM3e hold 24 GB, 12-high HBM3e 36
    np.testing.assert_array_equal(
        _gen("auto", np.array([0.819, 1.2288, 1.2288, 1.2288, 2.048]),
             gb=np.array([24.0, 24.0, 36.0, 48.0, 48.0])),
        ["hbm3", "hbm3e", "hbm3e-12hi", "hbm4", "hbm4"],
    )  # fmt: skip
    # declared: priced as declared whatever its speed (the H200's 0.8 TB/s HBM3e stacks)
    assert str(_gen("hbm3e", 0.8)) == "hbm3e" and str(_gen("hbm3", 1.2)) == "hbm3"
    assert str(_gen("auto", 0.8, node="hbm3e-12hi")) == "hbm3e-12hi"
    np.testing.assert_array_equal(
        _gen(np.array(["hbm4", "auto", "hbm2e"]), 1.0), ["hbm4", "hbm3e", "hbm2e"]
    )
    with pytest.raises(ContextError, match="hbm_generation: unknown HBM generation 'hbm5'"):
        _gen("hbm5", 1.0)


def test_hbm_generation_table_matches_its_interfaces():
    t = technology_presets()["n4"]
    for name, bits, gbps in (("hbm3", 1024, 6.4), ("hbm3e", 1024, 9.6), ("hbm4", 2048, 8.0)):
        spec = hbm_spec({"hbm_generation": name, "hbm_tbps_per_stack": 1.0, "technology": t})
        assert spec["interface_bits"] == bits
        # pin rate x interface width: HBM3 819 GB/s, HBM3e 1.23 TB/s, HBM4 2.05 TB/s (JEDEC)
        assert float(spec["max_tbps_per_stack"]) == pytest.approx(bits * gbps / 8 / 1000, 1e-3)
    spec = hbm_spec({"hbm_generation": "hbm4", "hbm_tbps_per_stack": 1.0, "technology": t})
    h3e = hbm_spec({"hbm_generation": "hbm3e", "hbm_tbps_per_stack": 1.0, "technology": t})
    # the shoreline argument: HBM4 carries more bandwidth per mm of die edge than HBM3e
    per_mm = float(spec["max_tbps_per_stack"] / spec["beachfront_mm"])
    assert per_mm > 1.3 * float(h3e["max_tbps_per_stack"] / h3e["beachfront_mm"])


def test_interposer_area_and_yield():
    # (814 + 5 x 121) x 1.2 = 1,702.8 mm2 (legitlads CoWoS calculator: 1,705 mm2).
    area = float(interposer_area_mm2(814, 1, 5, 121, 1.2))
    assert area == pytest.approx(1702.8)
    usd, y = interposer_cost(
        area,
        aspect_ratio=1.0,
        wafer_cost_usd=8000.0,
        defect_density_per_cm2=0.02,
        alpha=6.0,
        wafer_diameter_mm=300.0,
        edge_exclusion_mm=3.0,
        scribe_mm=0.2,
    )
    # Y = (1 + 17.028 x 0.02 / 6)^-6 = 0.7179 (legitlads: 74%).
    assert float(y) == pytest.approx((1 + 17.028 * 0.02 / 6) ** -6, rel=1e-9)
    # Pitch 41.465^2 = 1,719.4 mm2 on d = 294: DPW = 39.48 - 15.75 = 23.73; 8000 / (23.73 x Y).
    assert float(usd) == pytest.approx(8000 / (23.73 * 0.7179), rel=2e-3)


def test_package_cost_hand_computation():
    pkg = package_cost(
        parts_usd=1000.0,
        components=2.0,
        interposer_usd=100.0,
        interposer_area_mm2=1000.0,
        final_test_usd=95.0,
        **PACKAGE,
    )
    # 3 bonds: yield 0.99^3 = 0.970299; substrate 10 cm2 x 2 x $3 = 60; assembly 19.5;
    # test 95 (given); everything assembled = 1000 + 100 + 60 + 19.5 + 95 = 1274.5,
    # good package = 1274.5 / 0.970299 = 1313.512, scrap = 39.012.
    assert float(pkg.package_yield) == pytest.approx(0.970299)
    assert float(pkg.substrate_usd) == pytest.approx(60.0)
    assert float(pkg.assembly_usd) == pytest.approx(19.5)
    assert float(pkg.final_test_usd) == pytest.approx(95.0)
    assert float(pkg.scrap_usd) == pytest.approx(39.012, abs=1e-3)
    assert float(pkg.total_usd) + 1000.0 == pytest.approx(1313.512, abs=1e-3)


def test_more_hbm_stacks_pay_for_their_yield_loss():
    stacks = np.arange(1.0, 9.0)
    parts = 500.0 + 232.0 * stacks
    area = interposer_area_mm2(814, 1, stacks, 121, 1.2)
    pkg = package_cost(
        parts_usd=parts,
        components=1.0 + stacks,
        interposer_usd=300.0,
        interposer_area_mm2=area,
        final_test_usd=121.2,
        **PACKAGE,
    )
    assert np.all(np.diff(pkg.package_yield) < 0)
    assert np.all(np.diff(pkg.scrap_usd) > 0)
    # Scrap grows faster than linearly: each stack adds its own cost and a bond's risk on all.
    assert np.all(np.diff(pkg.scrap_usd, 2) > 0)


def test_bigger_die_pays_more_scrap():
    area = np.array([200.0, 400.0, 800.0])
    pkg = package_cost(
        parts_usd=area * 0.65 + 1160.0,
        components=6.0,
        interposer_usd=300.0,
        interposer_area_mm2=(area + 605.0) * 1.2,
        final_test_usd=area / 100 * 15,
        **PACKAGE,
    )
    assert np.all(np.diff(pkg.total_usd) > 0)


def test_gpu_optics_cost_by_link_type():
    # 18 links x 2 lanes x 100 Gb/s = 3,600 Gb/s over 36 lanes.
    lt = np.array(["electrical", "pluggable", "cpo"])
    _, plug, cpo = link_masks(lt)
    engines_usd, outside_usd, engines = gpu_optics_cost(3600.0, 36.0, plug, cpo, **OPTICS)
    # CPO: engines 0.5 x 3600 = 1800 (one 6.4 Tb/s engine), lasers ceil(36 / 4) = 9 x 40 = 360.
    np.testing.assert_allclose(engines_usd, [0.0, 0.0, 1800.0])
    np.testing.assert_allclose(outside_usd, [0.0, 3600.0, 360.0])
    np.testing.assert_allclose(engines, [0.0, 0.0, 1.0])


def test_optics_per_link_trades_money_for_bandwidth():
    lanes = 18 * np.array([1.0, 2.0, 4.0, 8.0])
    for plug, cpo in ((True, False), (False, True)):
        e, o, _ = gpu_optics_cost(lanes * 200.0, lanes, plug, cpo, **OPTICS)
        assert np.all(np.diff(e + o) > 0)


def test_unknown_link_type():
    with pytest.raises(ContextError) as err:
        link_masks(np.array(["cpo", "optical"]))
    assert err.value.path == "link_type" and "pluggable" in str(err.value)


def test_hbm_stacks_are_priced_at_whole_dram_dies_by_hand():
    """A stack is built from whole core dies of its generation: the B200's 22.5 GB per stack
    (180 GB shipped) is 8 x 3 GB HBM3e dies = 24 GB, the H200's 23.5 GB too; an H100's 16 GB
    HBM3 stack is 8 x 2 GB exactly; 36 GB 12-high HBM3e is 12 dies."""
    from objectives.cost.gpu import physical_stack_gb

    got = physical_stack_gb(np.array([22.5, 23.5, 24.0, 16.0, 36.0, 16.1]), [3, 3, 3, 2, 3, 2])
    np.testing.assert_allclose(got, [24.0, 24.0, 24.0, 16.0, 36.0, 18.0])
