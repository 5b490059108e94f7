"""docs/validation.md keeps the cost model's lines against published manufacturing-cost estimates
(benchmarks/cost_estimates.yaml, evaluated by benchmarks/validate_cost.py)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _vc():
    path = ROOT / "benchmarks" / "validate_cost.py"
    spec = importlib.util.spec_from_file_location("validate_cost", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def res():
    vc = _vc()
    return vc, vc.results()[0]


@pytest.fixture(scope="module")
def rows():
    return _vc().market_rows()


def _section() -> str:
    text = (ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
    section = text[text.index("<!-- section: cost") :]
    return section.split("\n<!-- section: ", 1)[0]  # up to the next script's section


def test_doc_table_matches_the_model(res):
    """Regenerate with `.venv/bin/python benchmarks/validate_cost.py` after a cost change."""
    _, r = res
    doc = {
        (m[1], m[2]): float(m[3].replace(",", ""))
        for m in re.finditer(r"^\| ([\w-]+) \| (\w+) \| ([\d,.]+)%? \|", _section(), re.M)
    }
    assert set(doc) == {(x["gpu"], x["line"]) for x in r}
    for x in r:
        share = x["line"].endswith("share")
        want = 100 * x["pred"] if share else x["pred"]
        assert doc[(x["gpu"], x["line"])] == pytest.approx(want, abs=0.05 if share else 1.0), x


def test_doc_prices_hours_and_power_match_the_model(rows):
    doc = {
        (m[1], m[2]): float(m[3].replace(",", ""))
        for m in re.finditer(r"^\| ([^|]+ [^|]+) \| ([\w-]+) \| ([\d,.]+) \|", _section(), re.M)
    }
    vc = _vc()
    assert set(doc) == {(vc._TABLES[x["table"]], x["gpu"]) for x in rows}
    for x in rows:
        got = doc[(vc._TABLES[x["table"]], x["gpu"])]
        assert got == pytest.approx(x["pred"], abs=0.005 if x["table"] == "gpu_hour_ratio" else 1)


def test_error_is_zero_inside_the_range_and_to_the_nearest_bound_outside():
    vc = _vc()
    assert vc.error(250, 200, 300) == 0.0
    assert vc.error(150, 200, 300) == pytest.approx(-0.25)
    assert vc.error(390, 200, 300) == pytest.approx(0.30)


def test_lines_within_25_percent_of_the_public_splits(res):
    """Issue 30: the die, HBM and packaging lines and the totals within +-25 % of the public
    estimates, for every GPU with a preset (packaging = the packaging service; the dies and
    stacks scrapped in failed packages are in the total). Not asserted: the H100 test line
    ($392 against $920, which includes the SXM module, see docs/validation.md), and the totals
    being inside their ranges, which they are not (H100 -10.9 %, H200 -6.6 %, B200 -5.1 %)."""
    _, r = res
    checked = [x for x in r if x["line"] in ("die", "hbm", "packaging", "total")]
    assert {x["gpu"] for x in checked} >= {"h100-sxm", "h200", "b200", "mi300x"}
    assert len([x for x in checked if x["line"] == "packaging"]) == 3
    for x in checked:
        assert abs(x["err"]) <= 0.25, x
    die = next(x for x in r if (x["gpu"], x["line"]) == ("h100-sxm", "die"))
    assert die["low"] / 1.25 <= die["pred"] <= die["high"] * 1.25


def test_totals_keep_their_distance_to_the_published_ranges(res):
    """The totals' misses, kept so they cannot grow unnoticed (before issue 30's second round:
    H100 -10.9 %, H200 -18.2 %, B200 -7.8 %, MI300X +14.2 %; the H200's range gained Silicon
    Analysts' June 2026 $4,250, its -17.3 % against $4,800 alone is now -6.6 %). MI355X's
    total is compared since then (+4.6 %). Issue 40 priced the module (power delivery, board,
    cold plate) and test by tester time: H100 -4.5 %, H200 -1.6 %, B200 -0.6 %, MI300X
    +18.3 %, MI355X +9.6 %; the H100 inside issue 40's $2,700-3,600. The Hopper generation's
    own test insertions (8, from Advantest's 3-4x) moved H100 to -6.5 %, H200 -3.1 %, MI300X
    +15.0 %."""
    _, r = res
    total = {x["gpu"]: x["err"] for x in r if x["line"] == "total"}
    assert total["h100-sxm"] == pytest.approx(-0.065, abs=0.002)
    assert total["h200"] == pytest.approx(-0.031, abs=0.002)
    assert total["b200"] == 0.0  # inside Epoch's $5,700-7,300 (SA's $6,400 alone: -0.6 %)
    assert total["mi300x"] == pytest.approx(0.150, abs=0.002)
    assert total["mi355x"] == pytest.approx(0.093, abs=0.002)
    h100 = next(x["pred"] for x in r if (x["gpu"], x["line"]) == ("h100-sxm", "total"))
    assert 2700 <= h100 <= 3600


def test_auxiliary_share_inside_epochs_range(res):
    """Epoch AI: substrates, boards and final assembly are 9-15 % of AI-chip component spend."""
    _, r = res
    shares = {x["gpu"]: x for x in r if x["line"] == "auxiliary_share"}
    assert set(shares) == {"h100-sxm", "b200"}
    for x in shares.values():
        assert x["err"] == 0.0, x


def test_gpu_hour_ratios_and_nameplate_power(rows):
    """Issue 40: GPU-hour ratios to the H100 within +-20 %, nameplate power within +-15 %.
    GB200's GPU-hour ratio was +47 % with one NVIDIA margin for Hopper and Blackwell; with
    each line's own (market.yaml) it is +15 % against SemiAnalysis's ~1.6x. GB200's rack
    power is +12.8 % with no server fans provisioned in a liquid-cooled node (+17.5 % with
    them, an explained row then)."""
    by = {(x["table"], x["gpu"]): x for x in rows}
    for gpu in ("h200", "b200", "gb200-nvl72", "mi300x"):
        assert abs(by[("gpu_hour_ratio", gpu)]["err"]) <= 0.20, gpu
    for gpu in ("h100-sxm", "b200", "gb200-nvl72"):
        assert abs(by[("it_w_per_gpu", gpu)]["err"]) <= 0.15, gpu
    # SemiAnalysis's AI Cloud TCO Model (SAH, 2026-12-04): all-in kW per GPU within +-15 % for
    # all six GPUs; the GB200 GPU-hour range widened to 1.39-1.70 (+8.2 %, was +14.9 %)
    for gpu in ("h100-sxm", "h200", "b200", "gb200-nvl72", "mi300x", "mi355x"):
        assert abs(by[("all_in_kw_per_gpu", gpu)]["err"]) <= 0.15, gpu
    assert by[("gpu_hour_ratio", "gb200-nvl72")]["err"] == pytest.approx(0.082, abs=0.005)
    # The MI355X's one published ownership rate: +14.9 %, inside +-20 % since its Infinity
    # Fabric mesh is priced without the switch ports it does not have (+28.4 % -> +23.4 %), its
    # host as its platform is built (-> +16.0 %), its XCD at 110 mm2 (-> +15.5 %) and its mesh
    # draws no switch power (-> +14.9 %; cost_estimates.yaml notes)
    assert by[("gpu_hour_ratio", "mi355x")]["err"] == pytest.approx(0.149, abs=0.005)
    gb_w = by[("it_w_per_gpu", "gb200-nvl72")]
    assert gb_w["err"] == pytest.approx(0.128, abs=0.005) and not gb_w["explained"]
    for gpu in ("h100-sxm", "b200", "mi300x", "mi355x"):
        assert abs(by[("street", gpu)]["err"]) <= 0.25, gpu
    # The NVL72 rack at market: 72 x (GPU + host) + network, within 5 % of Morgan Stanley's
    # and Bernstein's $3.1-3.4 M (+11.7 % with one NVIDIA margin).
    assert abs(by[("rack", "gb200-nvl72")]["err"]) <= 0.05


def test_check_fails_only_on_the_unexplained_rows(res, rows):
    """Every bounded row is inside its tolerance, or its row says how its definition differs
    and names a second source. Left unexplained, inside the +-25 % the check bounds lines
    with: MI300X die, packaging and test & assembly (cost_estimates.yaml notes)."""
    vc, r = res
    # no bounded row outside its tolerance without an explanation (the MI355X's GPU-hour ratio
    # was, +28.4 %, until 2026-12-04: test_gpu_hour_ratios_and_nameplate_power)
    assert vc.failures(r, rows) == []
    explained = {(x["gpu"], x["line"]) for x in r if x.get("explained")}
    assert explained == {
        ("h100-sxm", "hbm"),
        ("h100-sxm", "test_assembly"),
        ("b200", "scrap"),
        ("b200", "auxiliary"),
        # 2026-12-04: a second source for each (test_second_sources_agree_by_hand)
        ("h100-sxm", "packaging"),
        ("h100-sxm", "total"),
        ("h200", "total"),
        ("b200", "die"),
        ("b200", "packaging"),
        ("mi300x", "hbm"),
        ("mi300x", "total"),
        ("mi355x", "total"),
    }
    # An explained row still fails if its note is removed.
    bare = [dict(x, explained=None) for x in r]
    assert len(vc.failures(bare, rows)) == 3


def test_test_time_ratio_is_the_fit_row_of_the_hopper_insertions(rows):
    """Advantest: Blackwell takes 3-4x Hopper's tester time. The Hopper presets' 8 insertions
    are 15 x (1,600 / 814 mm2) / 3-4 rounded to whole passes, so the row is in sample: the
    B200 / H100 ratio is 15 x 1,600 / (8 x 814) by hand."""
    by = {(x["table"], x["gpu"]): x for x in rows}
    row = by[("test_time_ratio", "b200")]
    assert "fit row" in row["src"]
    assert row["pred"] == pytest.approx(15 * 1600 / (8 * 814), rel=1e-9)
    assert row["err"] == 0.0


def test_h100_hbm_is_five_stacks_at_the_published_rate_per_gb(res):
    """SZ's ~$1,500 counts six 16 GB stacks at ~$15/GB; the H100 SXM5's 80 GB are five. At
    that rate (also OKX's 2025 figure) five stacks are 5 x 16 x 15 = $1,200 by hand, and the
    model's line is within 5 % of it, as the explained row says (-3.3 %)."""
    _, r = res
    hbm = next(x for x in r if (x["gpu"], x["line"]) == ("h100-sxm", "hbm"))
    assert hbm["pred"] / (5 * 16 * 15.0) - 1 == pytest.approx(-0.033, abs=0.002)
    assert "six 16 GB stacks" in hbm["explained"] and "OKX" in hbm["explained"]


def test_standing_counts_every_line_once(res):
    """The one-line standing printed and written to docs/validation.md: inside + explained +
    unexplained = all lines, and every unexplained line is named with its error."""
    vc, r = res
    line = vc.standing(r)
    inside = sum(x["err"] == 0 for x in r)
    unexplained = [x for x in r if x["err"] != 0 and not x.get("explained")]
    explained = len(r) - inside - len(unexplained)
    assert line.startswith(f"{inside} of {len(r)} cost lines")
    assert f"{explained} outside with a definition that differs" in line
    assert f"{len(unexplained)} outside unexplained" in line
    for x in unexplained:
        assert f"{x['gpu']} {x['line']} " in line


def test_every_unexplained_line_says_what_its_source_states_of_its_uncertainty(res):
    """Issue 40: for each line outside its range with no explanation, the row says what
    uncertainty its source states ("none" for a single figure), and the doc prints it."""
    _, r = res
    section = _section()
    for x in r:
        if x["err"] != 0 and not x.get("explained"):
            assert x.get("stated"), (x["gpu"], x["line"])
            assert f"The source's own uncertainty: {x['stated']}." in section, x["gpu"]


def _model(gpu: str) -> dict[str, float]:
    from objectives.cost import evaluate_cost
    from objectives.presets import resolve_context

    return {k: float(v) for k, v in evaluate_cost(resolve_context({"gpu": gpu})).items()}


def test_second_sources_agree_by_hand(res):
    """The second sources the explained rows of 2026-12-04 name, recomputed by hand from their
    published inputs: OKX (N4 wafer $18-20k for 55 good GH100 dies, CoWoS wafer $12k for 28
    packages, HBM3E $15/GB), Epoch's B200 split (packaging without substrates; HBM3e 192 GB
    $2,800-3,100) with TrendForce's ~20 % HBM3e premium, and the published totals without the
    model's scrap line."""
    _, r = res
    line = {(x["gpu"], x["line"]): x for x in r}
    die_lo, die_hi, cowos = 18000 / 55, 20000 / 55, 12000 / 28
    # B200: two reticle-size N4 dies at OKX's cost per good die
    assert 2 * die_lo <= line[("b200", "die")]["pred"] <= 2 * die_hi
    # H100 and H200 totals: OKX's die, HBM (80 and 141 GB at $15) and CoWoS, plus the
    # model's own substrate, test, module and scrap, which OKX does not price
    for gpu, gb, lo, hi in (("h100-sxm", 80, 0.0, 0.025), ("h200", 141, 0.06, 0.08)):
        m = _model(gpu)
        rest = (m["substrate_cost_usd"] + m["final_test_cost_usd"] + m["module_cost_usd"]
                + m["assembly_scrap_usd"])  # fmt: skip
        okx = (die_lo + 15 * gb + cowos + rest, die_hi + 15 * gb + cowos + rest)
        total = line[(gpu, "total")]["pred"]
        assert lo <= total / okx[1] - 1 and total / okx[0] - 1 <= hi, (gpu, okx, total)
        assert total < line[(gpu, "total")]["low"]  # between OKX's and the published figures
    # H100 packaging: between OKX's CoWoS charge with the model's substrate and SZ's $723
    m = _model("h100-sxm")
    assert cowos + m["substrate_cost_usd"] < line[("h100-sxm", "packaging")]["pred"] < 723
    # B200 packaging without its substrate: inside Epoch's $1,000-1,200
    b = _model("b200")
    assert 1000 <= line[("b200", "packaging")]["pred"] - b["substrate_cost_usd"] <= 1200
    # MI300X HBM3: Epoch's B200 HBM3e for the same 192 GB less HBM3e's ~20 % premium
    hbm = line[("mi300x", "hbm")]["pred"]
    assert hbm / (3100 / 1.2) - 1 == pytest.approx(0.016, abs=0.002)
    # MI300X and MI355X totals without the scrap the published totals have no line for
    for gpu, pub, err in (("mi300x", 5300, 0.009), ("mi355x", 8000, -0.018)):
        m = _model(gpu)
        assert (m["gpu_module_cost_usd"] - m["assembly_scrap_usd"]) / pub - 1 == pytest.approx(
            err, abs=0.002
        )
        assert "packaging loss" in line[(gpu, "total")]["explained"]


def test_amd_host_is_the_dgx_h100_node_bill_per_gpu(rows):
    """The AMD presets' host is their platform's bill per GPU (host_usd_per_gpu): an 8-GPU OAM
    node with two CPUs and one 400G NIC per GPU holds what a DGX H100 does, whose non-GPU bill
    less the NVSwitch baseboard is $21,102 per 8 GPUs (SemiAnalysis via Epoch AI). Sized by
    GPU power instead (0 = technology.host_usd_per_gpu_kw) an MI355X paid twice that, and its
    GPU-hour ratio to the H100 was +23.4 % against SAH's 1.138, now +15.5 %; designs without
    the field keep the per-kW host."""
    from objectives.cost import evaluate_cost
    from objectives.presets import resolve_context

    def hour(gpu: str, **fixed: float) -> tuple[float, float]:
        d = resolve_context({"gpu": gpu, "price_basis": "market", "cluster_size": 1024, **fixed})
        m = evaluate_cost(d)
        return float(m["usd_per_gpu_hour"]), float(m["host_cost_usd"])

    h100, h100_host = hour("h100-sxm")
    assert h100_host == pytest.approx(21102 / 8, rel=2e-3)  # the per-kW rule's calibration
    for gpu in ("mi300x", "mi355x"):
        assert resolve_context({"gpu": gpu})["host_usd_per_gpu"] == 2638
        assert hour(gpu)[1] == 2638
    per_kw, host_kw = hour("mi355x", host_usd_per_gpu=0.0)
    assert host_kw == pytest.approx(1.399 * 3770, rel=2e-3)
    assert per_kw / h100 / 1.138 - 1 == pytest.approx(0.223, abs=0.005)
    by = {(x["table"], x["gpu"]): x for x in rows}
    assert by[("gpu_hour_ratio", "mi355x")]["pred"] / 1.138 - 1 == pytest.approx(0.149, abs=0.005)


def test_amd_mesh_has_no_switch_ports_by_hand():
    """AMD's Infinity Fabric links each OAM to each other GPU of its baseboard with no switch
    (scaleup_fabric: mesh): at cost the network is exactly the switched domain's less its
    switch ports, installed x links x lanes x Gb/s x electrical_switch_usd_per_gbps / the
    list markup: 1,024 x 7 x 16 x 38.4 x 0.38 / 2.6 for an MI355X cluster; the scale-out
    network stays, and perf is untouched."""
    from objectives.cost import evaluate_cost
    from objectives.perf import evaluate_perf
    from objectives.presets import resolve_context

    def both(fabric: str) -> tuple[float, float]:
        d = resolve_context({"gpu": "mi355x", "cluster_size": 1024, "scaleup_fabric": fabric})
        return float(evaluate_cost(d)["network_cost_usd"]), float(evaluate_perf(d)["tokens_per_s"])

    (sw, tok_sw), (mesh, tok_mesh) = both("switched"), both("mesh")
    assert sw - mesh == pytest.approx(1024 * 7 * 16 * 38.4 * 0.38 / 2.6, rel=1e-9)
    assert mesh > 0 and tok_mesh == tok_sw
    assert resolve_context({"gpu": "mi355x"})["scaleup_fabric"] == "mesh"
    assert resolve_context({"gpu": "mi300x"})["scaleup_fabric"] == "mesh"


def test_amd_packages_are_their_published_facts_by_hand():
    """The AMD packages as their published facts make them (cost_estimates.yaml, note on the AMD
    packages' facts): 8 XCDs hybrid-bonded in pairs on 4 IODs (MI300X) or four on each of 2
    (MI355X), 8 HBM stacks (AMD CDNA 3 and CDNA 4 white papers): 8 SoIC bonds at $20 and
    4 + 8 + 1 = 13 (2 + 8 + 1 = 11) micro-bump bonds at $6.50 and 0.99 each; the interposer is
    1.2 x (IODs + 8 x 121 mm2) within CoWoS-S's 2,700 mm2; the MI355X's XCD is AMD's published
    110 mm2 (ISSCC 2026) on a $20,000 N3 wafer with $1,000 of sort; a forum's 370 mm2 MI300X IOD
    would put the interposer past CoWoS-S, which MI300X is built on."""
    from objectives.cost import evaluate_cost
    from objectives.cost.silicon import gross_dies_per_wafer
    from objectives.presets import resolve_context

    def cost(gpu: str, **fixed: float) -> dict[str, float]:
        m = evaluate_cost(resolve_context({"gpu": gpu, **fixed}))
        return {k: float(v) for k, v in m.items()}

    for gpu, iods, iod_mm2, micro in (("mi300x", 4, 320, 13), ("mi355x", 2, 640, 11)):
        d, c = resolve_context({"gpu": gpu}), cost(gpu)
        assert d["dies_per_gpu"] == 8 and d["base_dies_per_gpu"] == iods
        assert c["package_yield"] == pytest.approx(0.99**micro, rel=1e-12)
        assert c["assembly_cost_usd"] == pytest.approx(8 * 20 + micro * 6.5, rel=1e-12)
        assert c["interposer_area_mm2"] == pytest.approx(1.2 * (iods * iod_mm2 + 8 * 121))
        assert c["interposer_area_mm2"] <= 2700 and c["interposer_fits"] == 1.0
    c = cost("mi355x")
    dpw = gross_dies_per_wafer(110.0, 1.5, wafer_diameter_mm=300.0, edge_exclusion_mm=3.0,
                               scribe_mm=0.2)  # fmt: skip
    assert c["dies_per_wafer"] == pytest.approx(float(dpw))
    assert c["die_cost_usd"] == pytest.approx((20000 + 1000) / (float(dpw) * c["die_yield"]))
    wide = cost("mi300x", base_die_area_mm2=370.0)
    assert wide["interposer_area_mm2"] == pytest.approx(1.2 * (4 * 370 + 8 * 121))  # 2,937.6
    assert wide["interposer_fits"] == 0.0


def test_hgx_products_carry_the_same_platform_host():
    """Every shipped 8-GPU x86 platform whose node holds what a DGX H100 does (two server CPUs,
    2 TB of DDR5, one 400G NIC per GPU, the same drives and power supplies: DGX H200, DGX B200,
    MI300X and MI355X platforms) pays the DGX H100 node's bill per GPU, $21,102 / 8; the H100
    itself pays it through the per-kW rule calibrated on it (700 W x 3,770 $/kW). Sized by its
    1,000 W instead, a B200 paid 1,000 / 700 of it, 43 % more host for the same node, which
    favoured the AMD products (given their platform bill) over it by construction."""
    from objectives.cost import evaluate_cost
    from objectives.presets import resolve_context

    def host(gpu: str, **fixed: float) -> float:
        d = resolve_context({"gpu": gpu, "price_basis": "market", "cluster_size": 1024, **fixed})
        return float(evaluate_cost(d)["host_cost_usd"])

    bill = 21102 / 8
    assert host("h100-sxm") == pytest.approx(bill, rel=2e-3)
    for gpu in ("h200", "b200", "mi300x", "mi355x"):
        assert host(gpu) == pytest.approx(bill, rel=2e-4), gpu
    assert host("b200", host_usd_per_gpu=0.0) == pytest.approx(3770 * 1.0, rel=5e-3)


def test_mesh_draws_no_switch_power_by_hand():
    """A mesh domain (scaleup_fabric: mesh, AMD Infinity Fabric) has no switch chip for its bits
    to cross; the same MI355X on a switched domain pays 7 links x 16 lanes x 38.4 Gb/s x one
    hop x the electrical switch's pJ/bit (copper: no switch-side optics) more in its
    provisioned power per GPU, through the same fan and PUE factors as the rest of it."""
    from objectives.perf import evaluate_perf
    from objectives.presets import resolve_context

    mesh = resolve_context({"gpu": "mi355x", "cluster_size": 64})
    switched = resolve_context({"gpu": "mi355x", "cluster_size": 64, "scaleup_fabric": "switched"})
    pm, ps = evaluate_perf(mesh), evaluate_perf(switched)
    t = {k: v["value"] if isinstance(v, dict) else v for k, v in mesh["technology"].items()}
    hand_w = 7 * 16 * 38.4e9 * t["electrical_switch_pj_per_bit"] * 1e-12
    nameplate = float(pm["package_power_w"]) * (
        1 + t["node_nameplate_overhead_w_per_w"] + t["network_power_per_gpu_watt"]
    )
    chain = float(pm["facility_w_per_gpu"]) / nameplate  # fans x PUE: no fabric term in a mesh
    got = float(ps["facility_w_per_gpu"]) - float(pm["facility_w_per_gpu"])
    assert got == pytest.approx(hand_w * chain, rel=1e-9)
    assert hand_w == pytest.approx(42.1, abs=0.1)  # W per MI355X, before fans and PUE
