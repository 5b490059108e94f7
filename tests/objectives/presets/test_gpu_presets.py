"""Today's accelerators as presets: datasheet figures, FP4, and a package as data.

The datasheet table here is written from the vendors' figures (dense = half of NVIDIA's sparse
numbers), independently of the preset file, so a typo in either fails.
"""

from __future__ import annotations

import numpy as np
import pytest

from objectives.cost import evaluate_cost
from objectives.cost.silicon import die_yield, gross_dies_per_wafer, yield_negative_binomial
from objectives.errors import ContextError
from objectives.perf import evaluate_perf
from objectives.presets import resolve_context

# name: dense BF16, FP8 (TPU v5p: INT8), FP4 TFLOPS (None: no FP4); HBM GB, TB/s;
# TDP W (None: not published); scale-up GB/s both directions
DATASHEET = {
    # NVIDIA H100 SXM / H200 datasheets; MLPerf v4.1 H200 system JSON
    "h100-sxm": (989.4, 1978.9, None, 80, 3.35, 700, 900),
    "h200": (989.4, 1978.9, None, 141, 4.8, 700, 900),
    # NVIDIA HGX B200 (4.5/9/18 PF sparse; 180 GB shipped, MLPerf v5.0), TGP 1000 W (MLPerf v6.0)
    "b200": (2250, 4500, 9000, 180, 8.0, 1000, 1800),
    # NVIDIA GB200 NVL72 (per GPU: 360/720/1,440 PF sparse over 72; 186 GB, MLPerf v5.0)
    "gb200-nvl72": (2500, 5000, 10000, 186, 8.0, 1200, 1800),
    # NVIDIA HGX B300 (per GPU 2.25 / 4.5 PF dense BF16/FP8, FP4 105 PF dense for 8; 288 GB)
    "b300": (2250, 4500, 13125, 288, 8.0, 1100, 1800),
    # NVIDIA GB300 NVL72 (FP4 1,080 PF dense over 72; 288 GB, MLPerf v5.1)
    "gb300-nvl72": (2500, 5000, 15000, 288, 8.0, 1400, 1800),
    # AMD Instinct MI300X / MI355X datasheets (Infinity Fabric 896 / 1,075 GB/s)
    "mi300x": (1307.4, 2614.9, None, 192, 5.3, 750, 896),
    "mi355x": (2516.6, 5033.2, 10066.3, 288, 8.0, 1400, 1075.2),
    # Google Cloud TPU v5p documentation (ICI 4,800 Gb/s); Ironwood announcement (FP8 4,614,
    # ICI 1.2 TB/s)
    "tpu-v5p": (459, 918, None, 95, 2.765, None, 600),
    "tpu-ironwood": (2307, 4614, None, 192, 7.37, None, 1200),
}
NEW = [g for g in DATASHEET if g not in ("h100-sxm", "h200")]


def _perf(gpu: str, precision: str, **fixed: object) -> dict:
    return evaluate_perf(
        resolve_context({"gpu": gpu, **fixed, "workload": {"precision": precision}})
    )


@pytest.mark.parametrize("gpu", list(DATASHEET))
def test_preset_holds_its_datasheet(gpu):
    bf16, fp8, fp4, gb, tbps, tdp, scaleup = DATASHEET[gpu]
    p = _perf(gpu, "bf16")
    assert float(p["tflops_per_gpu"]) == pytest.approx(bf16, rel=5e-3)
    assert float(_perf(gpu, "fp8")["tflops_per_gpu"]) == pytest.approx(fp8, rel=5e-3)
    if fp4 is not None:
        assert float(_perf(gpu, "fp4")["tflops_per_gpu"]) == pytest.approx(fp4, rel=5e-3)
    assert float(p["hbm_gb_per_gpu"]) == pytest.approx(gb, rel=1e-2)
    assert float(p["hbm_tbps_per_gpu"]) == pytest.approx(tbps, rel=1e-2)
    assert float(p["net_gbps_per_gpu"]) * 2 / 8 == pytest.approx(scaleup, rel=1e-3)
    assert float(p["clock_eff_ghz"]) == pytest.approx(
        float(resolve_context({"gpu": gpu})["clock_ghz"])
    )
    if tdp is not None:
        # full-load package power: compute_power_factor is set on h100 (node), b200, b300,
        # mi300x and mi355x; h200, gb200 and gb300 predict theirs
        assert float(p["package_power_w"]) == pytest.approx(tdp, rel=0.10)


@pytest.mark.parametrize("gpu", ["h100-sxm", "mi300x", "tpu-v5p", "tpu-ironwood"])
def test_fp4_on_a_gpu_without_fp4_is_refused_naming_the_field(gpu):
    with pytest.raises(ContextError) as err:
        _perf(gpu, "fp4")
    assert err.value.path == "workload.precision"
    assert "fp4_flops_multiplier 0" in err.value.message and gpu in err.value.message


#: each preset's own technology node (objectives/presets/gpus.yaml), for --set technology=
NODE = {"b200": "n4", "gb200-nvl72": "n4", "b300": "n4", "gb300-nvl72": "n4", "mi300x": "n5",
        "mi355x": "n3", "tpu-v5p": "n5", "tpu-ironwood": "n3"}  # fmt: skip


@pytest.mark.parametrize("gpu", NEW)
def test_every_new_preset_serves_a_70b_model(gpu):
    fp4 = DATASHEET[gpu][2] is not None
    p = _perf(gpu, "fp4" if fp4 else "fp8", cluster_size=8)
    assert float(p["model_fits"]) == 1.0 and float(p["tokens_per_s"]) > 0
    c = evaluate_cost(resolve_context({"gpu": gpu, "cluster_size": 8}))
    assert float(c["interposer_fits"]) == 1.0 and float(c["hbm_fits_generation"]) == 1.0


def test_nvl72_is_one_72_gpu_copper_domain_and_hgx_one_of_8():
    nvl = _perf("gb200-nvl72", "fp4", cluster_size=72)
    hgx = _perf("b200", "fp4", cluster_size=72)
    assert float(nvl["scaleup_domain_gpus"]) == 72 and float(hgx["scaleup_domain_gpus"]) == 8


def _b200() -> dict:
    return resolve_context({"gpu": "b200", "cluster_size": 8})


def test_b200_as_two_dies_and_eight_stacks_on_cowos_l_costs_the_sum_of_its_parts():
    d = _b200()
    t = d["technology"]
    c = evaluate_cost(d)
    # compute die: 800 mm2 at aspect 1.19 on an N4 wafer, known good after wafer sort
    geo = dict(wafer_diameter_mm=300.0, edge_exclusion_mm=3.0, scribe_mm=0.2)
    dpw = gross_dies_per_wafer(800.0, 1.19, **geo)
    y = float(c["die_yield"])  # the die yield model (with harvesting): test_cost_silicon.py
    kgd = (17000 + 1000) / (dpw * y)
    hbm = 8 * (60 + 13 * 24)  # HBM3e 8-high: $60 + $13/GB of 8 x 3 GB dies (22.5 GB shipped)
    ip_area = (2 * 800 + 8 * 121) * 1.2  # RDL interposer under both dies and eight stacks
    y_ip = yield_negative_binomial(ip_area / 100 * 0.01, 6.0)
    bridges = 8 + 1  # one under each stack, one between the two dies
    interposer = (6000 / gross_dies_per_wafer(ip_area, 1.0, **geo) + bridges * 10) / (
        y_ip * 0.995**bridges
    )
    substrate = ip_area / 100 * 2.0 * 3.0
    bonds = 2 + 8 + 1  # dies, stacks, substrate attach
    assembly = 6.5 * bonds
    test = 15 * 0.0833 * 1600 / 100 / 60 * 715  # tester time (technology/module.yaml)
    parts = 2 * kgd + hbm
    package = (parts + interposer + substrate + assembly + test) / 0.99**bonds - parts
    for key, want in (
        ("die_cost_usd", kgd),
        ("silicon_cost_usd", 2 * kgd),
        ("hbm_cost_usd", hbm),
        ("interposer_area_mm2", ip_area),
        ("interposer_yield", y_ip * 0.995**bridges),
        ("interposer_cost_usd", interposer),
        ("package_yield", 0.99**bonds),
        ("package_cost_usd", package),
        ("gpu_cost_usd", parts + package),
    ):
        assert float(c[key]) == pytest.approx(float(want), rel=1e-9), key
    assert t["interposer_max_mm2"] < ip_area < t["cowos_l_max_mm2"]
    assert float(c["interposer_fits"]) == 1.0
    on_s = evaluate_cost({**d, "packaging": "cowos-s"})
    assert float(on_s["interposer_fits"]) == 0.0  # CoWoS-S's 2,700 mm2 cannot hold it


def test_b200_power_and_shoreline_follow_from_its_parts():
    d = _b200()
    p = evaluate_perf(d)
    assert float(p["package_power_w"]) == pytest.approx(1000.0, rel=0.10)
    # logic at full load + HBM (8 TB/s x 3.9 pJ/bit) + NVLink (7.2 Tb/s x 5.5 pJ/bit) +
    # NV-HBI (10 TB/s x 0.3 pJ/bit), behind a 92 % VRM
    logic = float(p["power_density_w_per_mm2"]) * 1600
    by_hand = (logic + 8e12 * 8 * 3.9e-12 + 7200e9 * 5.5e-12 + 10e12 * 8 * 0.3e-12) / 0.92
    assert float(p["package_power_w"]) == pytest.approx(by_hand, rel=1e-12)
    # per die: 4 stacks x 11 mm + both directions of its half of NVLink at 250 Gb/s/mm + both
    # ends of NV-HBI at 10,400 Gb/s/mm, over the 800 mm2, 1.19 die's perimeter
    long, short = np.sqrt(800 * 1.19), np.sqrt(800 / 1.19)
    edge = 4 * 11 + 2 * 7200 / 2 / 250 + 2 * 80000 / 2 / 10400
    assert float(p["shoreline_used_fraction"]) == pytest.approx(edge / (2 * (long + short)))


def test_chiplets_on_base_dies_pay_for_both_and_their_hybrid_bonds():
    d = resolve_context({"gpu": "mi300x", "cluster_size": 8})
    c = evaluate_cost(d)
    geo = dict(wafer_diameter_mm=300.0, edge_exclusion_mm=3.0, scribe_mm=0.2)
    xcd = (16000 + 1000) / (gross_dies_per_wafer(115.0, 1.5, **geo) * float(c["die_yield"]))
    # an IO die has no spare cores, only the node's share of defect-critical area
    y_iod = die_yield(
        320.0, 0.07, "negative_binomial", 10.0, d["technology"]["die_critical_area_fraction"]
    )
    iod = (10000 + 1000) / (gross_dies_per_wafer(320.0, 1.0, **geo) * y_iod)
    silicon = 8 * xcd + 4 * iod
    assert float(c["silicon_cost_usd"]) == pytest.approx(silicon, rel=1e-9)
    soic = 8 * 20.0  # eight hybrid bonds
    stack_scrap = (silicon + soic) * (1 / 0.99**8 - 1)
    # the interposer carries the four IODs (not the XCDs on them) and eight HBM3 stacks
    assert float(c["interposer_area_mm2"]) == pytest.approx((4 * 320 + 8 * 121) * 1.2)
    assert float(c["package_yield"]) == pytest.approx(0.99 ** (4 + 8 + 1))
    lines = ("interposer_cost_usd", "substrate_cost_usd", "assembly_cost_usd")
    lines += ("final_test_cost_usd", "assembly_scrap_usd")
    assert float(c["package_cost_usd"]) == pytest.approx(sum(float(c[k]) for k in lines))
    gpu = sum(float(c[k]) for k in ("silicon_cost_usd", "hbm_cost_usd", "optics_cost_usd"))
    assert float(c["gpu_cost_usd"]) == pytest.approx(gpu + float(c["package_cost_usd"]))
    assert float(c["assembly_scrap_usd"]) > stack_scrap > 0


def test_mixed_packages_vectorized_equal_each_alone():
    d = _b200()
    batch = {
        **d,
        "packaging": np.array(["cowos-s", "cowos-l", "organic", "cowos-l"]),
        "hbm_generation": np.array(["hbm3e", "hbm4", "auto", "hbm3e-12hi"]),
        "hbm_stacks_per_die": np.array([4, 4, 1, 2]),
        "base_dies_per_gpu": np.array([0, 2, 0, 0]),
        "base_die_area_mm2": np.array([0.0, 900.0, 0.0, 0.0]),
        "d2d_tbps": np.array([10.0, 0.0, 5.0, 10.0]),
        "fp4_flops_multiplier": np.array([4.0, 2.0, 4.0, 6.0]),
    }
    both = {**evaluate_cost(batch), **{f"p.{k}": v for k, v in evaluate_perf(batch).items()}}
    for i in range(4):
        one = {k: (v[i].item() if isinstance(v, np.ndarray) else v) for k, v in batch.items()}
        alone = {**evaluate_cost(one), **{f"p.{k}": v for k, v in evaluate_perf(one).items()}}
        for k, v in alone.items():
            assert float(both[k][i]) == pytest.approx(float(v), rel=1e-12, abs=1e-12), (i, k)
    # an organic package carries no HBM
    assert float(evaluate_cost({**d, "packaging": "organic"})["interposer_fits"]) == 0.0


def test_fp4_kv_cache_holds_more_sequences_than_fp8_and_fp4_weights_default_to_fp8_kv():
    def run(kv: str) -> dict:
        wl = {"model": "llama3-70b", "precision": "fp4", "kv_precision": kv, "tp": 1, "pp": 1,
              "batch": "auto", "input_tokens": 8192, "output_tokens": 8192}  # fmt: skip
        d = resolve_context({"gpu": "b200", "cluster_size": 1, "workload": wl})
        d["technology"]["cb_max_batch"] = 100000  # let the KV cache bind
        return evaluate_perf(d)

    auto, fp8, fp4 = run("auto"), run("fp8"), run("fp4")
    assert float(auto["batch"]) == float(fp8["batch"])  # auto = an FP8 cache under FP4 weights
    # 4.5 bits instead of 8 per element: ~1.78x the sequences in the same free HBM
    assert float(fp4["batch"]) / float(fp8["batch"]) == pytest.approx(8 / 4.5, rel=0.02)


def test_base_dies_without_area_are_refused_naming_the_field():
    d = resolve_context({"gpu": "mi300x", "base_die_area_mm2": 0.0})
    for evaluate in (evaluate_perf, evaluate_cost):
        with pytest.raises(ContextError) as err:
            evaluate(d)
        assert err.value.path == "base_die_area_mm2"
