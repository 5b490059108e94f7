"""Scale-up fabrics: topology limits reach the performance model, power per bit per direction."""

from __future__ import annotations

import numpy as np
import pytest

from objectives.fabric.topology import torus_steps
from objectives.perf import evaluate_perf
from objectives.perf.network import allreduce_s
from objectives.presets import resolve_context

# A quarter-die Lite-GPU with CPO (Llama-3-70B decode, 256 GPUs).
QUARTER = {
    "gpu": "h100-sxm",
    "die_area_mm2": 203.5,
    "cluster_size": 256,
    "hbm_stacks_per_die": 3,
    "hbm_gb_per_stack": 13.333,
    "hbm_tbps_per_stack": 0.5583,
    "links_per_gpu": 9,
    "optics_per_link": 2,
    "lane_gbps": 100,
    "link_type": "cpo",
    "workload": {
        "model": "llama3-70b",
        "phase": "decode",
        "precision": "fp8",
        "input_tokens": 2048,
        "output_tokens": 512,
        "batch": "auto",
        "tpot_slo_s": 0.05,
        "ttft_slo_s": 2.0,
    },
}


def perf(**kw) -> dict[str, float]:
    spec = {**QUARTER, **kw}
    return {k: float(v) for k, v in evaluate_perf(resolve_context(spec)).items()}


def test_one_port_ocs_cannot_form_tp16():
    pinned = {"tp_choices": [16], "pp_choices": [1]}
    ok = perf(scaleup_fabric="ocs", technology={"preset": "n4", **pinned})
    assert ok["tp"] == 16 and ok["topology_ok"] == 1
    # 1.8 Tb/s on a single port: the GPU cannot close a ring, so TP16 is infeasible ...
    one = perf(
        scaleup_fabric="ocs",
        links_per_gpu=1,
        optics_per_link=18,
        technology={"preset": "n4", **pinned},
    )
    assert one["tp"] == 16 and one["topology_ok"] == 0
    # ... and a free search avoids it: it picks a group the fabric can form (TP <= 2), slower.
    free = perf(scaleup_fabric="ocs", links_per_gpu=1, optics_per_link=18)
    assert free["topology_ok"] == 1 and free["tp"] * free["pp"] <= 2
    assert free["tokens_per_s"] < ok["tokens_per_s"]
    # On a switched or packet fabric the same single port can reach every peer.
    assert perf(scaleup_fabric="packet", links_per_gpu=1, optics_per_link=18)["topology_ok"] == 1


def test_direct_mesh_is_slower_than_ocs_with_wraparound():
    pinned = {"preset": "n4", "tp_choices": [8], "pp_choices": [1]}
    ocs = perf(scaleup_fabric="ocs", technology=pinned)
    direct = perf(scaleup_fabric="direct", technology=pinned)
    # half the ring bandwidth per TP all-reduce: fewer tokens/s under the same TPOT SLO
    assert direct["tokens_per_s"] < ocs["tokens_per_s"]
    assert direct["fabric_hops"] == ocs["fabric_hops"] == 0


def test_torus_steps_and_allreduce_by_hand():
    # 64 GPUs: ring 63 steps; 2-D 2 x 7 = 14; 3-D 3 x 3 = 9
    np.testing.assert_array_equal(torus_steps(64.0, np.array([1, 2, 3, 0])), [63, 14, 9, 63])
    n, bw, a = 1e6, 1e11, 1e-6
    fabric = {"alpha_s": np.asarray(2e-6), "torus_dims": np.asarray(3.0)}
    got = allreduce_s(np.asarray(n), np.asarray(64.0), np.asarray(bw), np.asarray(a), fabric)
    assert float(got) == pytest.approx(2 * 63 / 64 * n / bw + 2 * 9 * 2e-6)
    # no torus: min(ring, tree) with the plain alpha
    plain = allreduce_s(np.asarray(n), np.asarray(64.0), np.asarray(bw), np.asarray(a))
    assert float(plain) == pytest.approx(min(2 * 63 / 64 * n / bw + 126 * a, 2 * n / bw + 12 * a))


def test_packet_tiers_add_switch_hops_and_power():
    small = perf(scaleup_fabric="packet")
    assert small["fabric_hops"] == 1  # 256 x 200G ports fit one 51.2T switch per rail
    big = perf(scaleup_fabric="packet", cluster_size=4096)
    assert big["fabric_hops"] == 3  # two tiers: leaf - spine - leaf


def test_link_power_is_bandwidth_times_pj_per_direction():
    # Package power difference between CPO and pluggable = 1.8 Tb/s x (18.75 - 5.6) pJ / VRM.
    cpo, plug = perf(link_type="cpo"), perf(link_type="pluggable")
    assert plug["package_power_w"] - cpo["package_power_w"] == pytest.approx(
        1.8e12 * (18.75 - 5.6) * 1e-12 / 0.92
    )
    # The fabric's own power: a packet switch traversal at 9.8 pJ/bit plus a switch-side CPO
    # transceiver at 5.6 pJ/bit, per GPU, against the OCS fabric: with a rack of 64 quarter
    # dies' silicon, 256 GPUs are 4 blocks of 64, 9 ports as a 3-D torus of side 4, so 9/4
    # ports per GPU on the OCS at 0.8 W each.
    t = {"preset": "n4", "tp_choices": [8], "rack_silicon_mm2": 64 * 203.5}
    ocs = perf(scaleup_fabric="ocs", technology=t)
    pkt = perf(scaleup_fabric="packet", technology=t)
    per_gpu = (pkt["cluster_power_w"] - ocs["cluster_power_w"]) / 256
    gpu = (pkt["gpu_power_w"] - ocs["gpu_power_w"]) * pkt["replicas"] * 8 / 256
    assert per_gpu - gpu == pytest.approx(1.8e12 * (9.8 + 5.6) * 1e-12 - 9 / 4 * 0.8, rel=1e-6)


def test_fabrics_vectorized_equal_scalar():
    fabrics = np.array(["auto", "switched", "packet", "ocs", "direct", "ocs"])
    links = np.array([9.0, 9.0, 3.0, 1.0, 6.0, 2.0])
    kinds = np.array(["cpo", "electrical", "pluggable", "cpo", "electrical", "cpo"])
    batch = evaluate_perf(
        resolve_context(
            {
                **QUARTER,
                "scaleup_fabric": fabrics,
                "links_per_gpu": links,
                "link_type": kinds,
                "optics_per_link": 18 / links,
            }
        )
    )
    for i in range(len(fabrics)):
        one = perf(
            scaleup_fabric=str(fabrics[i]),
            links_per_gpu=float(links[i]),
            link_type=str(kinds[i]),
            optics_per_link=18 / float(links[i]),
        )
        for k in ("tokens_per_s", "tp", "topology_ok", "cluster_power_w", "fabric_hops"):
            assert float(batch[k][i]) == pytest.approx(one[k], rel=1e-12), (i, k)


@pytest.mark.parametrize(
    "fabric,link",
    [("switched", "electrical"), ("ocs", "cpo"), ("packet", "cpo"), ("direct", "cpo")],
)
@pytest.mark.parametrize("tpot_slo_s", [0.05, 10.0])
def test_decode_batch_is_bound_by_kv_capacity_or_tpot_on_every_fabric(fabric, link, tpot_slo_s):
    """The solved batch is the largest that fits the KV cache and meets the TPOT SLO: one more
    sequence on the same tp x pp breaks one of the two (or a batch cap of the engine)."""
    wl = {**QUARTER["workload"], "tpot_slo_s": tpot_slo_s, "ttft_slo_s": 1e3}
    r = perf(scaleup_fabric=fabric, link_type=link, workload=wl)
    assert r["model_fits"] == 1 and r["slo_met"] == 1 and r["topology_ok"] == 1
    pinned = {**wl, "tp": int(r["tp"]), "pp": int(r["pp"]), "batch": int(r["batch"]) + 1}
    more = perf(scaleup_fabric=fabric, link_type=link, workload=pinned)
    kv_bound = more["model_fits"] == 0 or more["memory_used_fraction"] > 1
    tpot_bound = more["tpot_s"] > tpot_slo_s
    assert kv_bound or tpot_bound
    if tpot_slo_s > 1:  # a loose SLO: the KV cache is what binds
        assert kv_bound and not tpot_bound


def test_copper_torus_reaches_one_rack_of_silicon_only():
    # One rack holds 115,200 mm2 of compute silicon: 566 quarter dies of 203.5 mm2 fit it over
    # copper, 567 do not (optics beyond a rack); optical links reach any size.
    fits = perf(scaleup_fabric="direct", link_type="electrical", cluster_size=566)
    assert fits["topology_ok"] == 1
    big = perf(scaleup_fabric="direct", link_type="electrical", cluster_size=567)
    assert big["topology_ok"] == 0
    assert perf(scaleup_fabric="direct", link_type="cpo", cluster_size=567)["topology_ok"] == 1


@pytest.mark.parametrize("cooling,ok", [("air", 0), ("liquid", 1)])
def test_rack_domain_is_liquid_cooled_and_reaches_a_rack(cooling, ok):
    # A switched copper domain of one baseboard holds 6,512 mm2 (32 quarter dies); of one rack
    # 115,200 mm2 (566), which only liquid cooling can carry.
    board = perf(scaleup_fabric="switched", link_type="electrical", cooling=cooling)
    assert board["scaleup_domain_gpus"] == 32 and board["topology_ok"] == 1
    rack = perf(scaleup_fabric="rack", link_type="electrical", cooling=cooling)
    assert rack["topology_ok"] == ok
    if ok:
        # the switch radix binds first: 12,800 Gb/s / (2 lanes x 100 Gb/s) = 64 GPUs
        assert rack["scaleup_domain_gpus"] == 64


def test_a_multi_die_package_pays_its_die_to_die_link_on_collectives():
    # Four quarter dies in one package (the chiplet class): 3/4 of a collective's bytes cross
    # the 10 TB/s (5 TB/s each way) die-to-die link, and each step pays 5 ns more.
    base = {**QUARTER, "die_area_mm2": 203.5, "cluster_size": 64, "dies_per_gpu": 4,
            "scaleup_fabric": "switched", "link_type": "electrical",
            "technology": {"preset": "n4", "tp_choices": [8], "pp_choices": [1],
                           "d2d_pj_per_bit": 0.0, "d2d_collective_penalty": True}}  # fmt: skip
    slow = perf(**{**base, "d2d_tbps": 10.0})
    fast = perf(**{**base, "d2d_tbps": 1e9})  # an ideal link (its power zeroed for both)
    assert slow["tp"] == fast["tp"] == 8
    assert slow["tokens_per_s"] < fast["tokens_per_s"]  # the batch fills the TPOT SLO
    from objectives.fabric.topology import fabric_hw, group_links

    d = resolve_context({**base, "d2d_tbps": 10.0})
    hw = fabric_hw(d, np.asarray("electrical"))
    assert float(hw["d2d_s_per_byte"]) == pytest.approx(0.75 / 5e12)
    assert float(hw["d2d_latency_s"]) == pytest.approx(5e-9)
    h = {k: np.asarray(v) for k, v in hw.items()}
    h.update(net_bytes_per_s=np.asarray(900e9), scaleout_gbps_per_gpu=np.asarray(400.0))
    group_links(d, h, np.asarray(8.0), np.asarray(1.0), None)
    assert float(h["net_bytes_per_s"]) == pytest.approx(1 / (1 / 900e9 + 0.75 / 5e12))
    # off (the default, as the Blackwell efficiencies were fitted) or one die: no term
    off = {**base, "technology": {**base["technology"], "d2d_collective_penalty": False}}
    assert float(fabric_hw(resolve_context({**off, "d2d_tbps": 10.0}),
                           np.asarray("electrical"))["d2d_s_per_byte"]) == 0  # fmt: skip
    one = fabric_hw(resolve_context({**base, "dies_per_gpu": 1, "d2d_tbps": 10.0}),
                    np.asarray("electrical"))  # fmt: skip
    assert float(one["d2d_s_per_byte"]) == 0 and float(one["d2d_latency_s"]) == 0
