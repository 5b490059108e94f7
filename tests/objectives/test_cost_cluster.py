"""Network tiers and cost, per-GPU system share, and TCO arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from objectives.cost.cluster import (
    clos_tiers,
    energy_cost,
    installed_gpus,
    network_cost,
    packet_fabric_cost,
    packet_radix,
    system_share,
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
    "electrical_scaleup_domain_gpus": np.asarray(8.0),
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


def test_flat_circuit_fabric_vs_multi_tier_packet_fabric():
    n = np.array([64.0, 1024.0, 16384.0, 262144.0])
    kw = dict(installed=n, links_per_gpu=8.0, link_gbps=800.0, is_electrical=False, is_cpo=True)
    circuit, t_circuit = network_cost(optical_fabric="circuit", t=NET, **kw)
    packet, t_packet = network_cost(optical_fabric="packet", t=NET, **kw)
    np.testing.assert_array_equal(t_circuit, 1.0)  # flat at any size
    np.testing.assert_array_equal(t_packet, [1, 2, 3, 4])  # radix 64 at 800G
    # Circuit: 8 links x (OCS port $500 + fibre $75) = $4,600 per GPU, linear in N.
    np.testing.assert_allclose(circuit / n, 4600.0)
    # Packet per GPU grows with tiers: 8 x ((2t - 1) x 800 x ($1 + CPO $0.5) + t x $75).
    t = np.array([1, 2, 3, 4])
    np.testing.assert_allclose(packet / n, 8 * ((2 * t - 1) * 800 * 1.5 + t * 75))


def test_electrical_domain_then_scale_out():
    n = np.array([8.0, 1024.0])
    usd, tiers = network_cost(
        installed=n,
        links_per_gpu=18.0,
        link_gbps=200.0,
        is_electrical=True,
        is_cpo=False,
        optical_fabric="circuit",
        t=NET,
    )
    copper = 18 * 200 * 0.38  # $1,368 of NVSwitch baseboard per GPU
    # 1,024 GPUs outgrow the 8-GPU domain: 400G scale-out, radix 128, two tiers:
    # 3 ports x 400 x ($1 + $1) + 2 x $75 fibre + the NIC's own 400G transceiver $400 = $2,950.
    np.testing.assert_allclose(usd / n, [copper, copper + 2950.0])
    np.testing.assert_array_equal(tiers, [1.0, 2.0])


def test_unknown_fabric():
    with pytest.raises(ContextError, match="circuit"):
        network_cost(
            installed=8.0,
            links_per_gpu=1.0,
            link_gbps=1.0,
            is_electrical=False,
            is_cpo=False,
            optical_fabric="torus",
            t=NET,
        )


def test_system_share_hand_computation():
    host, board, facility = system_share(
        gpu_power_w=700.0,
        it_power_w_per_gpu=800.0,
        host_usd_per_gpu_kw=3770.0,
        board_usd_per_gpu=250.0,
        facility_capex_usd_per_kw=11000.0,
        lifetime_years=4.0,
        facility_lifetime_years=15.0,
    )
    assert float(host) == pytest.approx(0.7 * 3770)  # 2,639
    assert float(board) == 250.0
    assert float(facility) == pytest.approx(0.8 * 11000 * 4 / 15)  # 2,346.7
    # A cluster living longer than the building pays for all of it, not more.
    _, _, whole = system_share(
        gpu_power_w=700.0,
        it_power_w_per_gpu=1000.0,
        host_usd_per_gpu_kw=0.0,
        board_usd_per_gpu=0.0,
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
