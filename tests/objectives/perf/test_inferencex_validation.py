"""docs/validation_inferencex.md keeps the serving model's errors against InferenceX rows.

benchmarks/validate_inferencex.py maps SemiAnalysis InferenceX single-node serving runs
(benchmarks/inferencex_rows.json, picked by a rule declared before evaluation) onto the
workload and compares output tokens/s per GPU, mean TPOT and mean TTFT. Validation only:
these tests keep the figures so that a later model change shows here.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from tests.bench_scripts import load

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "benchmarks" / "inferencex_rows.json"
DOC = ROOT / "docs" / "validation_inferencex.md"
#: Per family, output tokens/s per GPU (median |error|, p90 |error|, signed median), kept to
#: 0.5 points: a model change moves them. Since round 16 the SGLang rows run with
#: ``prefill_batching: separate`` (SGLang's default); when declared (mixed steps) they read
#: Hopper 30 / 60 / -30 %, Blackwell 29 / 62 / -21 %, AMD 29 / 66 / -25 %.
KEPT = {
    "Hopper": (0.02, 0.04, -0.02),
    "Blackwell": (0.23, 0.57, -0.13),
    "AMD": (0.27, 0.95, -0.15),
}
#: Sample B (declared after A's evaluation and the SGLang mapping; out of sample for it), the
#: same figures with the mapping as declared, and with every row mixed (``--mixed``).
KEPT_B = {
    "Hopper": (0.20, 0.50, -0.07),
    "Blackwell": (0.57, 0.63, -0.57),
    "AMD": (0.10, 0.21, -0.10),
}
KEPT_B_MIXED = {
    "Hopper": (0.20, 0.50, -0.07),
    "Blackwell": (0.57, 0.68, -0.57),
    "AMD": (0.27, 0.29, -0.27),
}
#: Sample C (rule 5: declared after B's evaluation, before any of C's metrics was read; the
#: two other stored captures of the fixture; out of sample for everything), as declared and
#: with every row mixed.
KEPT_C = {
    "Hopper": (0.32, 0.36, -0.32),
    "Blackwell": (0.29, 0.68, -0.21),
    "AMD": (0.23, 0.60, 0.15),
}
KEPT_C_MIXED = {
    "Hopper": (0.42, 0.46, -0.42),
    "Blackwell": (0.36, 0.58, -0.36),
    "AMD": (0.23, 0.43, -0.08),
}
#: Rows per sample by (hardware, framework), as the rule picked them.
COUNTS = {
    "A": {("mi355x", "sglang"): 9, ("mi355x", "atom"): 7, ("h200", "sglang"): 3,
          ("b200", "sglang"): 5, ("b200", "trt"): 3, ("b300", "sglang"): 6},
    "B": {("mi355x", "sglang"): 3, ("b200", "trt"): 11, ("h200", "trt"): 3,
          ("b200", "sglang"): 2},
    "C": {("b200", "sglang"): 12, ("b200", "trt"): 7, ("b300", "sglang"): 7,
          ("h200", "sglang"): 3, ("mi300x", "sglang"): 6, ("mi355x", "atom"): 9,
          ("mi355x", "sglang"): 4},
}  # fmt: skip
#: Sample C's captures (rule 5), newer first.
C_COMMITS = (
    "528c4146b8f502fcbce8df7870a935a970cbae25",
    "cac6246e9fef70841e48e1434cbf10bb9a2802a8",
)


@pytest.fixture(scope="module")
def vi():
    return load("validate_inferencex")


@pytest.fixture(scope="module")
def res(vi):
    return vi.results()


@pytest.fixture(scope="module")
def res_mixed(vi):
    return vi.results(mixed=True)


def test_rule_picks_the_declared_rows() -> None:
    """Every row satisfies the declared filter, in a declared window (A, B) or capture (C),
    once."""
    doc = json.loads(DATA.read_text())
    rows = doc["rows"]
    assert len(rows) == 100
    for r in rows:
        assert r["sample"] in ("A", "B", "C")
        if r["sample"] == "C":
            assert "w" not in r and r["index"] >= 0
            assert r["src"].split("@")[1].split()[0] in C_COMMITS
        else:
            assert 0 <= r["w"] <= 23
        assert r["conc"] in (4, 32, 128)
        assert (r["isl"], r["osl"]) in ((1024, 1024), (1024, 8192), (8192, 1024))
        assert r["model"] in ("dsr1", "gptoss", "llama70b")
        assert r["hardware"] in ("h100", "h200", "b200", "b300", "gb200", "gb300", "mi300x",
                                 "mi355x")  # fmt: skip
        assert r["run_url"].startswith("https://github.com/SemiAnalysisAI/InferenceX/actions/")
    keys = {(r["hardware"], r["framework"], r["precision"], r["tp"], r["ep"],
             r["dp_attention"], r["isl"], r["osl"], r["conc"]) for r in rows}  # fmt: skip
    assert len(keys) == len(rows)
    assert "96000 k" in doc["rule"] and "k = 0..23" in doc["rule"]
    assert "[96000 k + 48000, 96000 k + 64000)" in doc["rule"]
    # A's rows come first (rows are numbered in file order), then B's, then C's
    assert [r["sample"] for r in rows] == ["A"] * 33 + ["B"] * 19 + ["C"] * 48
    assert all(c in doc["rule"] for c in C_COMMITS) and "Sample C" in doc["rule"]


def test_sample_c_follows_rule_5(vi) -> None:
    """C is disjoint from A and B by key, one row per key, the newer capture first and each
    capture in file order; the records the rule picked on a GPU with no preset are listed as
    not expressible, not evaluated."""
    doc = json.loads(DATA.read_text())
    key = lambda r: tuple(r[k] for k in vi.KEY)  # noqa: E731
    ab = {key(r) for r in doc["rows"] if r["sample"] != "C"}
    c = [r for r in doc["rows"] if r["sample"] == "C"]
    assert not ab & {key(r) for r in c}
    order = [(vi.C_SOURCES.index(r["src"]), r["index"]) for r in c]
    assert order == sorted(order) and len(set(order)) == len(order)
    assert [vi.C_SOURCES.index(r["src"]) for r in c].count(0) == 36
    nx = doc["not_expressible"]
    assert len(nx) == 6 and {r["hardware"] for r in nx} == {"mi325x"}
    assert all(r["hardware"] not in vi.GPUS and r["reason"] for r in nx)
    assert not {key(r) for r in nx} & ({key(r) for r in c} | ab)


def test_select_c_by_hand(vi) -> None:
    """``select_c`` on made-up captures: filter (2), A/B keys dropped, the newer capture wins
    a shared key, a GPU without preset goes to the not-expressible list."""
    base = {"hardware": "mi300x", "framework": "sglang", "model": "dsr1", "precision": "fp8",
            "spec_method": "none", "disagg": False, "is_multinode": False, "decode_tp": 8,
            "decode_ep": 1, "decode_dp_attention": False, "isl": 1024, "osl": 1024, "conc": 4,
            "image": None, "date": "2026-05-18", "run_url": "u",
            "metrics": {"tput_per_gpu": 2.0, "output_tput_per_gpu": 1.0, "mean_tpot": 0.01,
                        "mean_ttft": 0.1}}  # fmt: skip
    newer = [base, {**base, "conc": 8}, {**base, "disagg": True, "conc": 32},
             {**base, "hardware": "mi325x"}, {**base, "isl": 8192}]  # fmt: skip
    older = [{**base, "date": "old"}, {**base, "conc": 32}]
    taken = [vi.as_row({**base, "isl": 8192})]  # an A/B row's key
    rows, nx = vi.select_c([newer, older], taken)
    assert [(r["index"], r["conc"], r["date"]) for r in rows] == [
        (0, 4, "2026-05-18"),
        (1, 32, "2026-05-18"),
    ]
    assert rows[1]["src"] == vi.C_SOURCES[1] and rows[0]["src"] == vi.C_SOURCES[0]
    assert [r["hardware"] for r in nx] == ["mi325x"]
    assert rows[0]["output_tput_per_gpu"] == 1.0 and rows[0]["mean_tpot_s"] == 0.01


def test_row_counts_per_sample() -> None:
    rows = json.loads(DATA.read_text())["rows"]
    for sample, want in COUNTS.items():
        got: dict[tuple[str, str], int] = {}
        for r in rows:
            if r["sample"] == sample:
                k = (r["hardware"], r["framework"])
                got[k] = got.get(k, 0) + 1
        assert got == want, sample
    # every stored fixture is the API's answer for DeepSeek-R1-0528 (rule 5)
    assert {r["model"] for r in rows} == {"dsr1"}


def test_lengths_by_hand(vi) -> None:
    """Uniform integers on [int(0.8 L), L]: 1,024 -> [819, 1024], 206 values."""
    assert vi.mean_len(1024) == pytest.approx(921.5)
    assert vi.mean_len(8192) == pytest.approx(7372.5)  # [6553, 8192]
    assert vi.len_cv(1024) == pytest.approx(math.sqrt((206**2 - 1) / 12) / 921.5, rel=1e-12)
    assert vi.len_cv(8192) == pytest.approx(0.0642, abs=5e-4)


def test_mapping_by_hand(vi) -> None:
    rows = vi.load()
    trt = next(m for m in rows if m.raw["framework"] == "trt")
    r = trt.row(1)
    assert (r.gpu, r.gpus, r.tp, r.model, r.precision) == ("b200", 8, 8, "deepseek-v3", "fp8")
    assert r.wl["batch"] == trt.raw["conc"] and r.wl["ep"] == 8
    assert r.wl["attention_dp"] is False
    tech = {"cb_fp4_gemm_efficiency": 1.0, "cb_fp4_gemm_efficiency_pytorch": 0.5}
    trt.stack(tech)
    assert tech["cb_fp4_gemm_efficiency"] == 0.5  # trtllm-serve --backend=pytorch
    sgl = next(m for m in rows if m.raw["framework"] == "sglang" and m.raw["ep"] == 1)
    assert "attention_dp" not in sgl.row(1).wl
    tech = {"cb_fp4_gemm_efficiency": 1.0, "cb_fp4_gemm_efficiency_pytorch": 0.5}
    sgl.stack(tech)
    assert tech["cb_fp4_gemm_efficiency"] == 1.0
    # gpt-oss MXFP4 on Hopper: BF16 GEMMs, FP4 weights
    oss = vi.Measured({**sgl.raw, "model": "gptoss", "hardware": "h200", "precision": "fp4"})
    r = oss.row(1)
    assert (r.model, r.precision, r.wl["weight_precision"]) == ("gpt-oss-120b", "bf16", "fp4")


def test_output_split_by_hand(vi) -> None:
    """A record with only input + output throughput: split by the mean lengths."""
    m = next(m for m in vi.load() if m.raw["output_tput_per_gpu"] is None)
    i, o = vi.mean_len(m.raw["isl"]), vi.mean_len(m.raw["osl"])
    assert m.out_tps_gpu == pytest.approx(m.raw["tput_per_gpu"] * o / (i + o), rel=1e-12)


def test_doc_tables_match_the_script(vi, res, res_mixed) -> None:
    text = DOC.read_text(encoding="utf-8")
    main = text.split("<!-- inferencex:begin -->")[1].split("<!-- inferencex:end -->")[0]
    b = text.split("<!-- inferencex-b:begin -->")[1].split("<!-- inferencex-b:end -->")[0]
    c = text.split("<!-- inferencex-c:begin -->")[1].split("<!-- inferencex-c:end -->")[0]
    assert c.strip() == "\n".join(vi.c_section(res, res_mixed)).strip()
    for line in vi.summary_table(vi.groups(vi.of_sample(res, "C")))[2:]:
        assert line in c.split("every step mixed")[0], line
    for line in [*vi.summary_table(vi.sample_groups(res)), *vi.diag_table(res),
                 *vi.row_table(vi.of_sample(res, "A"))]:  # fmt: skip
        assert line in main, line
    assert b.strip() == "\n".join(vi.b_section(res, res_mixed)).strip()
    # the B section's two tables are the script's, not typed: mapping as declared, then mixed
    sep, mixed = b.split("every step mixed")
    for line in vi.summary_table(vi.groups(vi.of_sample(res_mixed, "B")))[2:]:
        assert line in mixed.split("Every row")[0], line
    for line in vi.summary_table(vi.groups(vi.of_sample(res, "B")))[2:]:
        assert line in sep, line


def test_family_figures_kept(vi, res) -> None:
    """Sample A (the rows of the first rule)."""
    g = vi.groups(vi.of_sample(res, "A"))
    for fam, (med, p90, bias) in KEPT.items():
        s = g[("family", fam)]["out_tps_gpu"]
        assert s["median"] == pytest.approx(med, abs=0.005), fam
        assert s["p90"] == pytest.approx(p90, abs=0.005), fam
        assert s["bias"] == pytest.approx(bias, abs=0.005), fam
    n = {fam: g[("family", fam)]["out_tps_gpu"]["n"] for fam in KEPT}
    assert n == {"Hopper": 3, "Blackwell": 14, "AMD": 16}


def _kept(g, want: dict[str, tuple[float, float, float]]) -> None:
    for fam, (med, p90, bias) in want.items():
        s = g[("family", fam)]["out_tps_gpu"]
        assert s["median"] == pytest.approx(med, abs=0.005), fam
        assert s["p90"] == pytest.approx(p90, abs=0.005), fam
        assert s["bias"] == pytest.approx(bias, abs=0.005), fam


def test_sample_a_figures_are_the_declared_rows_alone(vi, res) -> None:
    """Adding B moved nothing of A: A's groups in the per-sample table are KEPT."""
    g = vi.sample_groups(res)
    _kept({k[1:]: v for k, v in g.items() if k[0] == "A"}, KEPT)


@pytest.mark.parametrize(
    ("sample", "rows"),
    [
        ("B", {"Hopper": 3, "Blackwell": 13, "AMD": 3}),
        ("C", {"Hopper": 3, "Blackwell": 26, "AMD": 19}),
    ],
)
def test_out_of_sample_family_figures_kept(vi, res, res_mixed, sample, rows) -> None:
    """Samples B and C (declared before their rows were read): per family as declared and with
    every step mixed, and in the per-sample table, unmoved by the other samples."""
    kept, mixed = {"B": (KEPT_B, KEPT_B_MIXED), "C": (KEPT_C, KEPT_C_MIXED)}[sample]
    g = vi.groups(vi.of_sample(res, sample))
    _kept(g, kept)
    assert {fam: g[("family", fam)]["out_tps_gpu"]["n"] for fam in kept} == rows
    _kept(vi.groups(vi.of_sample(res_mixed, sample)), mixed)
    _kept({k[1:]: v for k, v in vi.sample_groups(res).items() if k[0] == sample}, kept)


def test_sample_c_misses_the_targets(vi, res) -> None:
    """Issue 36's serving targets (median |error| <= 15 %, p90 <= 30 % per family) are not met
    on sample C in any family; kept so that a model change that meets them shows here."""
    c = vi.groups(vi.of_sample(res, "C"))
    for fam in KEPT_C:
        s = c[("family", fam)]["out_tps_gpu"]
        assert s["median"] > 0.15 and s["p90"] > 0.30, fam


def test_mixed_changes_only_sglang_rows(vi, res, res_mixed) -> None:
    """``--mixed`` drops the SGLang rule and nothing else: TRT and ATOM rows are identical,
    and out of sample (B) the SGLang rows' throughput error is smaller with ``separate``."""
    for x, y in zip(res, res_mixed, strict=True):
        if x["m"].raw["framework"] != "sglang":
            assert x["pred"] == y["pred"], x["i"]
    b = vi.groups(vi.of_sample(res, "B"))[("engine", "sglang")]["out_tps_gpu"]
    bm = vi.groups(vi.of_sample(res_mixed, "B"))[("engine", "sglang")]["out_tps_gpu"]
    assert b["n"] == bm["n"] == 5
    assert b["median"] < bm["median"]


def test_decode_only_step_matches_at_low_concurrency(vi, res) -> None:
    """The doc's first finding: with no prompt tokens in the step the model's step is the
    measured TPOT at conc 4 (median within 10 %); the SGLang rows at 8k/1k, run since round 16
    with prompts in steps of their own (SGLang's default), are within 30 % where the mixed step
    was +87 to +225 %. Stated of sample A; B's conc 4 rows (H200 TensorRT-LLM, 13.7-14.9 ms
    measured against an 11 ms decode-only step) are in the doc's diagnostic, not kept here."""
    assert vi.decode_check(vi.of_sample(res, "A"))[4]["median"] < 0.10
    for x in res:
        raw = x["m"].raw
        if x["m"].sample == "C":  # C's row 100 (B300 FP8, measured TTFT 2 s) is -36 %: doc
            continue
        if raw["conc"] == 4 and raw["isl"] == 8192 and raw["framework"] == "sglang":
            assert abs(x["err"]["tpot_s"]) < 0.3 or x["m"].family == "AMD", x["i"]


def test_doc_names_the_rule_and_sources() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert re.search(r"3a600f1d9ce155536d52e2f58f744f27a301aac9", text)
    assert "f267602ff7825dc02eaf81f512f50f380d6d39f9" in text
    assert "before any row was evaluated" in text
