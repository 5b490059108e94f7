"""Network tiers and cost, per-GPU system share, and TCO arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from objectives.cost.cluster import (
    capital_recovery_factor,
    clos_tiers,
    energy_cost,
    installed_gpus,
    network_cost,
    packet_fabric_cost,
    packet_radix,
    system_share,
    usd_per_gpu_hour,
    usd_per_mtok,
)
from objectives.errors import ContextError

NET = {
    "packet_switch_gbps": np.asarray(51200.0),
    "packet_switch_max_ports": np.asarray(512.0),
    "packet_switch_usd_per_gbps": np.asarray(1.0),
    "fibre_usd_per_link": np.asarray(75.0),
    "electrical_switch_usd_per_gbps": np.asarray(0.38),
    "scaleout_gbps_per_gpu": np.asarray(400.0),
    "electrical_switch_gbps": np.asarray(12800.0),
    "switched_domain_silicon_mm2": np.asarray(6512.0),
    "rack_silicon_mm2": np.asarray(64 * 814.0),  # blocks of 64 GPUs of 814 mm2
    "wdm_wavelengths_per_fibre": np.asarray(8.0),
    "ocs_ports_per_fibre": np.asarray(1.0),
    "pluggable_usd_per_gbps": np.asarray(1.0),
    "cpo_usd_per_gbps": np.asarray(0.5),
    "ocs_usd_per_port": np.asarray(500.0),
}


def test_installed_gpus_counts_spares():
    assert float(installed_gpus(1024, 0.05)) == 1024 + 52  # ceil(51.2)
    assert float(installed_gpus(1024, 0.0)) == 1024
    assert float(installed_gpus(100, 0.1)) == 110  # 0.1 x 100 is 10.000000000000002 in floats


def test_clos_tiers_grow_with_cluster_size():
    # Radix 64: one switch up to 64, leaf-spine up to 64 x 32 = 2,048, three tiers to 65,536.
    n = np.array([2, 64, 65, 2048, 2049, 65536, 65537])
    np.testing.assert_array_equal(clos_tiers(n, 64), [1, 1, 2, 2, 3, 3, 4])
    sizes = np.logspace(0, 7, 200)
    assert np.all(np.diff(clos_tiers(sizes, 128)) >= 0)


def test_packet_radix():
    np.testing.assert_array_equal(
        packet_radix(np.array([800.0, 400.0, 100.0, 25.0]), 51200.0, 512.0), [64, 128, 512, 512]
    )


def test_packet_fabric_hand_computation():
    common = dict(
        switch_gbps=51200.0,
        max_ports=512.0,
        switch_usd_per_gbps=1.0,
        optics_usd_per_gbps=1.0,
        fibre_usd_per_link=75.0,
    )
    # 400G ports: radix 128. 100 endpoints, one tier: per link 1 port x 400 x ($1 + $1) + 1
    # fibre x $75 = $875 -> $87,500.
    usd, t = packet_fabric_cost(100.0, 1.0, 400.0, **common)
    assert float(t) == 1 and float(usd) == pytest.approx(87500.0)
    # 1,000 endpoints: two tiers, 3 ports x 400 x 2 + 2 x 75 = $2,550 per link.
    usd, t = packet_fabric_cost(1000.0, 1.0, 400.0, **common)
    assert float(t) == 2 and float(usd) == pytest.approx(2.55e6)


def _net(fabric: str, **kw):
    args = dict(is_cpo=True, is_electrical=False, silicon_mm2=814.0)
    args.update(kw)
    return network_cost(fabric=np.asarray(fabric), t=NET, **args)


def test_ocs_between_blocks_vs_multi_tier_packet_fabric():
    n = np.array([64.0, 1024.0, 16384.0, 262144.0])
    kw = dict(installed=n, links_per_gpu=8.0, lanes_per_link=4.0, lane_gbps=200.0)
    ocs, t_ocs = _net("ocs", **kw)
    packet, t_packet = _net("packet", **kw)
    np.testing.assert_array_equal(t_ocs, 1.0)  # flat at any size
    np.testing.assert_array_equal(t_packet, [1, 2, 3, 4])  # radix 64 at 800G
    # OCS: 8 ports form a 3-D torus in blocks of 64 (side 4): one link in 4 leaves the block,
    # 8 x 1/4 = 2 OCS ports per GPU (4 lanes fit one 8-lambda fibre). Per GPU: 4 cables $300
    # inside + 2 ports x $500 + 1 cable to the OCS $75; one block needs no OCS at all.
    np.testing.assert_allclose(ocs / n, [300.0, 1375.0, 1375.0, 1375.0])
    # Packet per GPU grows with tiers: 8 x ((2t - 1) x 800 x ($1 + CPO $0.5) + t x $75).
    t = np.array([1, 2, 3, 4])
    np.testing.assert_allclose(packet / n, 8 * ((2 * t - 1) * 800 * 1.5 + t * 75))


def test_wdm_ocs_costs_the_same_per_gbps_whatever_the_gpu_count():
    # Full 8 x 200G fibres (1.6 Tb/s a port), 6 ports per GPU (3-D torus), more than one block:
    # the network bill per Gb/s is the same for 2 blocks or 64 (the OCS is rate-agnostic; a
    # port is a fibre). A block is one rack of silicon (64 x 814 mm2), so a block of smaller
    # dies holds more GPUs, a longer cube side, and fewer of its links leave it.
    for silicon in (814.0, 203.5, 101.75):
        block = 64 * 814.0 / silicon
        gpus = block * np.array([2.0, 4.0, 16.0, 64.0])
        usd, _ = _net(
            "ocs",
            installed=gpus,
            links_per_gpu=6.0,
            lanes_per_link=8.0,
            lane_gbps=200.0,
            silicon_mm2=silicon,
        )
        per_gbps = usd / (gpus * 6 * 1600.0)
        # (1/side of the ports on the OCS x $500 + $75 / 2 per cable + 1/side x $75 / 2) / 1.6T
        f = 1 / block ** (1 / 3)
        np.testing.assert_allclose(per_gbps, (500 * f + 37.5 + 37.5 * f) / 1600, rtol=1e-12)
    # Under-filled fibres cost more per Gb/s: 2 lanes on an 8-lambda fibre pay a whole port.
    usd2, _ = _net("ocs", installed=1024.0, links_per_gpu=6.0, lanes_per_link=2.0, lane_gbps=200.0)
    assert float(usd2) / (1024 * 6 * 400.0) == pytest.approx(
        4 * (500 / 4 + 37.5 + 37.5 / 4) / 1600
    )


def test_switched_domain_from_radix_and_copper_reach_then_scale_out():
    n = np.array([8.0, 1024.0])
    usd, tiers = _net(
        "switched",
        installed=n,
        links_per_gpu=18.0,
        lanes_per_link=2.0,
        lane_gbps=100.0,
        is_electrical=True,
        is_cpo=False,
    )
    copper = 18 * 200 * 0.38  # $1,368 of NVSwitch baseboard per GPU
    # 1,024 GPUs outgrow the 8-GPU domain: 400G scale-out, radix 128, two tiers:
    # 3 ports x 400 x ($1 + $1) + 2 x $75 fibre + the NIC's own 400G transceiver $400 = $2,950.
    np.testing.assert_allclose(usd / n, [copper, copper + 2950.0])
    np.testing.assert_array_equal(tiers, [1.0, 2.0])
    from objectives.fabric.topology import switched_domain_gpus

    kw = dict(switch_gbps=12800.0, domain_silicon_mm2=6512.0)
    # H100: radix 64 at 200G, one baseboard of 814 mm2 GPUs -> 8
    assert float(switched_domain_gpus(200.0, 814.0, True, **kw)) == 8
    # quarter die: the board holds 32; one 1.8T port per GPU: radix 7 bounds it
    assert float(switched_domain_gpus(200.0, 203.5, True, **kw)) == 32
    assert float(switched_domain_gpus(1800.0, 203.5, True, **kw)) == 7
    # optics are not bounded by the board
    assert float(switched_domain_gpus(200.0, 203.5, False, **kw)) == 64


def test_unknown_fabric():
    from objectives.fabric import resolve_fabric

    d = {
        "scaleup_fabric": "torus",
        "link_type": "cpo",
        "technology": {"optical_fabric": "circuit"},
    }
    with pytest.raises(ContextError, match="ocs"):
        resolve_fabric(d)
    d = {"link_type": "cpo", "technology": {"optical_fabric": "torus"}}
    with pytest.raises(ContextError, match="circuit"):
        resolve_fabric(d)


def test_system_share_hand_computation():
    host, facility = system_share(
        gpu_power_w=700.0,
        it_power_w_per_gpu=800.0,
        host_usd_per_gpu_kw=3770.0,
        facility_capex_usd_per_kw=11000.0,
        lifetime_years=4.0,
        facility_lifetime_years=15.0,
    )
    assert float(host) == pytest.approx(0.7 * 3770)  # 2,639
    assert float(facility) == pytest.approx(0.8 * 11000 * 4 / 15)  # 2,346.7
    # A cluster living longer than the building pays for all of it, not more.
    _, whole = system_share(
        gpu_power_w=700.0,
        it_power_w_per_gpu=1000.0,
        host_usd_per_gpu_kw=0.0,
        facility_capex_usd_per_kw=11000.0,
        lifetime_years=20.0,
        facility_lifetime_years=15.0,
    )
    assert float(whole) == pytest.approx(11000.0)


def test_energy_cost_hand_computation():
    # 1 MW facility x 4 years x 8,766 h x $0.08/kWh = $2,805,120.
    assert float(energy_cost(1e6, 4.0, 0.08)) == pytest.approx(2805120.0)


def test_usd_per_mtok_and_zero_throughput_stays_finite():
    # $1M over 1 year at 1,000 tok/s: 3.15576e10 tokens = 31,557.6 Mtok -> $31.688/Mtok.
    assert float(usd_per_mtok(1e6, 1000.0, 1.0)) == pytest.approx(31.6881, abs=1e-4)
    zero = usd_per_mtok(np.array([1e6, 1e6]), np.array([0.0, 1e-30]), 4.0)
    assert np.all(np.isfinite(zero)) and np.all(zero == 1e12)


def test_capital_recovery_factor_hand_computation():
    # 10 % over 4 years: 0.1 / (1 - 1.1^-4) = 0.1 / (1 - 0.683013) = 0.315471.
    assert float(capital_recovery_factor(0.10, 4.0)) == pytest.approx(0.315471, abs=1e-6)
    # No cost of capital: straight-line, 1 / n; vectorized equals scalar.
    got = capital_recovery_factor(np.array([0.0, 0.10]), 4.0)
    np.testing.assert_allclose(got, [0.25, float(capital_recovery_factor(0.10, 4.0))])


def test_usd_per_gpu_hour_hand_computation():
    # $30M capex for 1,000 GPUs at 10 % over 4 years: 30e6 x 0.315471 = $9.464M a year, plus
    # $8M of opex over 4 years = $2M a year: $11.464M / 1,000 / 8,766 h = $1.3078 per GPU-hour.
    rate = usd_per_gpu_hour(
        capex_usd=30e6, opex_usd=8e6, gpus=1000, lifetime_years=4.0, cost_of_capital_per_year=0.1
    )
    assert float(rate) == pytest.approx((30e6 * 0.3154708 + 2e6) / 1000 / 8766, rel=1e-6)
