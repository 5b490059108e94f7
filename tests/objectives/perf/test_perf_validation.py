"""docs/validation.md keeps the serving model's errors against published measurements.

benchmarks/validate_perf.py evaluates every usable row of the calibration set (TensorRT-LLM
perf-overview v0.10-v0.20, MLPerf v4.0/v5.0, static-batch tables, energy logs); the cb_*
efficiencies were fitted on the declared FIT split only (TensorRT-LLM v0.11.0 and v0.17).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from tests.bench_scripts import load

ROOT = Path(__file__).resolve().parents[3]


def _vp():
    return load("validate_perf")


@pytest.fixture(scope="module")
def res():
    vp = _vp()
    return vp, vp.results()


def _doc_summary() -> dict[tuple[str, str], tuple[float, float, float]]:
    text = (ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
    out = {}
    for m in re.finditer(r"^\| (fit|validation) \| (\w+) \| \d+ \| ([\d.]+)% \| ([\d.]+)% \| "
                         r"([\d.]+)% \|$", text, re.M):  # fmt: skip
        out[(m[1], m[2])] = (float(m[3]), float(m[4]), float(m[5]))
    return out


def test_doc_summary_matches_the_model(res):
    """Regenerate with `.venv/bin/python benchmarks/validate_perf.py` after a model change."""
    vp, r = res
    doc = _doc_summary()
    now = vp.summary(r)
    assert set(doc) == set(now)
    for k, v in now.items():
        got = tuple(round(100 * v[q], 1) for q in ("median", "p90", "max"))
        assert got == pytest.approx(doc[k], abs=0.15), k


def test_fit_split_is_declared_and_disjoint(res):
    vp, r = res
    fit = [x["row"] for x in r if x["row"].split == "fit"]
    assert fit and all(
        (row.src in vp.FIT_SOURCES and row.kind == "tput" and not row.section)
        or (row.row, row.src) in vp.BLACKWELL_MOE_FIT
        or (row.row, row.src) in vp.AMD_FIT
        for row in fit
    )
    sectioned = {(row.row, row.src) for row in fit if row.section}
    assert sectioned == set(vp.BLACKWELL_MOE_FIT) | set(vp.AMD_FIT)
    assert len({(row.row, row.kind) for row in vp.ROWS}) == len(vp.ROWS)


def test_validation_median_within_15_percent(res):
    vp, r = res
    s = vp.summary(r)
    assert s[("validation", "continuous")]["median"] <= 0.15
    assert s[("fit", "continuous")]["p90"] <= 0.30


def test_mlperf_maxq_cap_binds_and_energy_rows(res):
    """The 450 W MaxQ cap (``power_limit_w``, round 10) binds: the package's full-load power
    is held to 450 W by a lower clock, and the throughput drops by about what MLPerf measured
    (rows 139 / 134: 0.794 vs 0.805). Row 180 (ML.ENERGY 8B, GPU energy) is within issue 13's
    +/-25 % (-14 %). The MaxQ energy rows are not: tokens per joule +35 % / +58 %, because the
    serving power is fitted on vLLM runs (benchmarks/calibrate_power.py) whose GPUs draw less
    than MLPerf's power-limited ones, and the uncapped throughput is high (+21 %, row 134).
    Kept here as over-predictions within [+15 %, +70 %] so a change that moves them is seen."""
    vp, r = res
    rows = {x["row"].row: x for x in r if x["row"].group == "energy"}
    assert sorted(rows) == [178, 179, 180]
    assert abs(rows[180]["err"]) <= 0.25
    for n in (178, 179):
        row = rows[n]["row"]
        capped = rows[n]["m"]
        free = vp.evaluate(dataclasses.replace(row, power_cap_w=None))
        assert free["package_power_w"] == pytest.approx(700, rel=1e-3)
        assert capped["package_power_w"] == pytest.approx(row.power_cap_w, rel=1e-6)
        assert capped["gpu_power_w"] <= row.power_cap_w
        assert capped["clock_eff_ghz"] < free["clock_eff_ghz"]  # the cap lowers the clock
        assert capped["tokens_per_s"] < free["tokens_per_s"]
        assert 0.15 <= rows[n]["err"] <= 0.70, n
        # the node under the cap keeps the host and network share of the package as built: 8
        # GPUs at their power + their NVSwitch share + host/network per W of the 700 W TDP
        t = vp.context(row)["technology"]
        per_w = t["host_power_per_gpu_watt"] + t["network_power_per_gpu_watt"]
        by_hand = 8 * (capped["gpu_power_w"] + 3.6e12 * 9.8e-12 + per_w * 700.0)
        assert capped["cluster_power_w"] == pytest.approx(by_hand, rel=1e-3)
        assert capped["tokens_per_joule"] == pytest.approx(
            capped["tokens_per_s"] / by_hand, rel=1e-3
        )


def test_host_power_is_the_measured_dgx_h100_non_gpu_power():
    """host_power_per_gpu_watt by hand from its source: the DGX H100 MaxQ rnnt Offline run
    (MLPerf Inference v4.0) plateaus at ~4,520 W at the wall with every GPU capped at 300 W, so
    >= 2,120 W is beside the GPUs; less the model's NVSwitch share (3.6 Tb/s per direction at
    9.8 pJ/bit = 35.3 W per GPU) and scale-out network (0.0179 x 700 W), per 700 W of TDP.
    The model's 8-GPU node then charges that 2,120 W beside its GPUs at 700 W TDP."""
    from objectives.presets import resolve_context

    t = resolve_context({"gpu": "h100-sxm"})["technology"]
    switch_w = 3.6e12 * 9.8e-12
    by_hand = (2120 / 8 - switch_w - 0.0179 * 700) / 700
    assert t["host_power_per_gpu_watt"] == pytest.approx(by_hand, rel=0.01)
    node = 8 * ((t["host_power_per_gpu_watt"] + t["network_power_per_gpu_watt"]) * 700 + switch_w)
    assert node == pytest.approx(2120, rel=0.01)


def _row(r, num: int):
    return next(x for x in r if x["row"].row == num and x["row"].kind == "tput")


def test_rows_run_under_their_published_engine_limits(res):
    """v0.10's max_num_tokens 2048 caps a 128/128 step (1 decode + 1 prompt token per sequence:
    each step decodes B and prefills B/128 prompts of 128 tokens) at 2048 / 2 = 1024 sequences,
    where the preset's 8192 would allow the max_batch 2048; v0.11's 70B TP8 table raises the
    max_batch to 8192, which the 128/128 KV cache of 8 H100s then holds."""
    vp, r = res
    assert _row(r, 1)["m"]["batch"] == 1024
    assert _row(r, 11)["m"]["batch"] == 8192
    default = vp.evaluate(dataclasses.replace(vp.ROWS[0], tech={}, wl={}))
    assert default["batch"] == 2048


def test_v010_llama3_8b_engine_has_its_config_files_ffn(res):
    """The v0.10 engines were built from --model_config files; its Llama-3-8B file gives
    intermediate_size 28672, twice the released model's: more weights to stream per step, so
    less throughput than the released architecture under the same limits."""
    vp, r = res
    row = vp.ROWS[0]
    assert row.row == 1 and row.wl["model"]["ffn"] == 28672
    real = vp.evaluate(dataclasses.replace(row, wl={}))
    wide = _row(r, 1)["m"]
    assert wide["tokens_per_s"] < real["tokens_per_s"]


def test_trtllm_bench_heuristic_limits_by_hand(res):
    """tensorrt_llm/bench/build/tuning.py's rule, by hand, for the v0.17 70B TP8 H100 128/2048
    row (46): FP8 KV, 8 KV heads over 8 GPUs: 2 x 80 x 8 x 128 x 1 B = 163,840 B per token;
    memory 8 x 81,559 MiB - 70.6 GB of FP8 weights; 0.95 of it over 2,176 tokens per request
    = 1,621 requests -> max_batch rounded up to 256s = 1,792; 1,621 x (1 + 128/2048) = 1,723
    tokens -> the 2,048 floor."""
    vp, _ = res
    row = next(x for x in vp.ROWS if x.row == 46)
    memory_b = 8 * 81559 * 2**20 - 70.6e9 / 1e9 * 2**30  # the early revision counts GB as GiB
    requests = 0.95 * memory_b / (163840 * 2176)
    assert 1600 < requests < 1640
    assert row.tech == {"cb_max_batch": 1792, "cb_max_num_tokens": 2048,
                        "kv_cache_free_fraction": 0.9}  # fmt: skip
    # short prompts, long answers on a small model: the 4096 batch cap; 2048/128: 17 tokens per
    # sequence and step raise max_num_tokens above the preset's 8192
    assert next(x for x in vp.ROWS if x.row == 39).tech["cb_max_batch"] == 4096
    assert next(x for x in vp.ROWS if x.row == 42).tech["cb_max_num_tokens"] == 9216


def test_v012_rows_use_the_benchmark_config_table(res):
    """v0.12.0 looked its limits up in benchmark_config.yml (Llama-3-70B TP8: 8192 / 16384):
    on the H200 the KV cache then holds more than the preset's 2048 sequences."""
    vp, r = res
    row = next(x for x in vp.ROWS if x.row == 18)
    assert row.tech["cb_max_batch"] == 8192 and row.tech["cb_max_num_tokens"] == 16384
    assert _row(r, 18)["m"]["batch"] > 2048
    default = vp.evaluate(dataclasses.replace(row, tech={}))
    assert default["batch"] == 2048


def test_finite_request_count_waves_by_hand(res):
    """perf-overview v0.10.0 ran 2,000 requests per case (its prepare_dataset --num-requests).
    Row 6 (Mixtral TP2 H200 128/2048): the engine runs them in waves of its solved batch B:
    one full wave of B, then N mod B requests at their own, smaller batch; throughput = N x OSL
    / (floor(N/B) x T(B) + T(N mod B)), T(b) = b x OSL / tokens_per_s(b). The steady-state
    rates come from the model without the request count (a source with none published)."""
    vp, r = res
    row = next(x for x in vp.ROWS if x.row == 6)
    n, osl = vp.num_requests(row), row.osl
    assert (n, osl) == (2000, 2048)
    steady = vp.evaluate(dataclasses.replace(row, src="none"))
    b = int(steady["batch"])
    assert 1000 < b < n  # one full wave and a tail
    tail = n - b
    assert n % b == tail
    t_tail = vp.evaluate(dataclasses.replace(row, src="none", wl={"batch": tail}))
    assert t_tail["batch"] == tail and t_tail["tokens_per_s"] < steady["tokens_per_s"]
    wave_time = b * osl / steady["tokens_per_s"] + tail * osl / t_tail["tokens_per_s"]
    by_hand = n * osl / wave_time
    got = _row(r, 6)["m"]
    assert got["wave_batch"] == b
    assert got["tokens_per_s"] == pytest.approx(by_hand, rel=1e-9)
    assert got["steady_tokens_per_s"] == pytest.approx(steady["tokens_per_s"], rel=1e-9)
    assert 0.85 < by_hand / steady["tokens_per_s"] < 0.99  # the tail wave costs 1-15 %


def test_finite_run_properties(res):
    """Whole waves give the steady state; fewer requests than B run as one wave at batch N
    (v0.17 Mixtral TP8 H200 128/2048, row 53: 3,000 requests, the engine's 4,096 batch); rows
    whose source publishes no count (MLPerf, static, latency, energy) keep the steady state."""
    vp, r = res
    assert vp.finite_run(3000, 128, 1000, 5e4, 1.0) == pytest.approx(5e4)
    # 2 waves of 1,000 at 50k tok/s (2 x 2.56 s) + 500 at 25k (2.56 s): 320k tokens / 7.68 s
    assert vp.finite_run(2500, 128, 1000, 5e4, 2.5e4) == pytest.approx(41666.667, rel=1e-6)
    row53 = _row(r, 53)
    assert vp.num_requests(row53["row"]) == 3000 and row53["m"]["batch"] > 3000
    at_n = vp.evaluate(dataclasses.replace(row53["row"], src="none", wl={"batch": 3000}))
    assert row53["m"]["tokens_per_s"] == pytest.approx(at_n["tokens_per_s"], rel=1e-9)
    for x in r:
        if x["row"].src[0] in "MP" or x["row"].kind != "tput":
            assert vp.num_requests(x["row"]) is None and "wave_batch" not in x["m"]


def test_same_case_in_two_releases_is_listed_with_its_spread(res):
    """docs/validation.md lists the cases measured by more than one release: v0.10 and v0.11
    measured Mixtral TP2 on H200 at 12.9k and 30.1k tok/s (2.33x), v0.12 and v0.17 Llama-3-70B
    TP8 on H100 at 14.8k and 17.1k. Every group is one case from at least two sources."""
    vp, r = res
    groups = {tuple(sorted(x["row"].row for x in g)): g for g in vp.same_case(r)}
    assert (6, 14) in groups and (17, 46) in groups and (27, 51, 69) in groups
    for g in groups.values():
        rows = [x["row"] for x in g]
        assert len({x.src for x in rows}) >= 2
        assert len({(x.gpu, x.gpus, x.tp, x.model, x.precision, x.isl, x.osl) for x in rows}) == 1
    six, fourteen = (x["row"].value for x in groups[(6, 14)])
    assert fourteen / six == pytest.approx(30110 / 12940, rel=0.01)
    text = vp.markdown(r)
    assert "## Same case, different release" in text and "| 2.33x |" in text


def test_mlperf_405b_rows_run_under_nvidias_published_configs(res):
    """Rows 158/159 (MLPerf v5.0 Llama-3.1-405B on 8 H200): 9,429-token prompts (the dataset
    mean) and 649 generated tokens; Offline as one TP4 x PP2 instance within gpu_batch_size 512
    and 1,536 tokens per step, Server at TP8 within its runtime batch of 64 and the 175 ms TPOT."""
    vp, r = res
    off = next(x for x in r if x["row"].row == 158)
    srv = next(x for x in r if x["row"].row == 159)
    for x in (off, srv):
        assert (x["row"].isl, x["row"].osl) == (9429, 649)
    assert (off["m"]["tp"], off["m"]["pp"], off["m"]["replicas"]) == (4, 2, 1)
    assert 1 <= off["m"]["batch"] <= 512
    assert (srv["m"]["tp"], srv["m"]["pp"]) == (8, 1)
    assert srv["m"]["batch"] <= 64 and srv["m"]["tpot_s"] <= 0.175
    assert off["row"].tech["cb_max_num_tokens"] == 1536  # prompts prefilled in chunks


def test_blackwell_and_moe_rows_validate_out_of_sample(res):
    """Blackwell and today's MoE rows (group blackwell_moe): three factors fitted on the declared
    rows 74 (FP4, PyTorch backend), 156 (FP4, TensorRT engines, MLPerf) and 130 (expert
    parallelism) by benchmarks/calibrate_perf.py --blackwell, eleven validation rows of rounds
    8-9. Target: median |error| <= 15 % and p90 <= 30 % (met on those: 10.9 % and 26.4 %); the
    worst, MLPerf Interactive 153 (+40 %, small steps near the FP4 ridge point), is bounded so
    it cannot grow. Round 12's rows (401-415) are kept by their own test below."""
    vp, r = res
    s = vp.summary(r)
    assert s[("fit", "blackwell_moe")]["max"] <= 0.001
    early = [
        abs(x["err"])
        for x in r
        if x["row"].group == "blackwell_moe" and x["row"].split == "validation"
        and x["row"].row < 400
    ]  # fmt: skip
    assert len(early) == 11
    assert np.median(early) <= 0.15 and np.percentile(early, 90) <= 0.30 and max(early) <= 0.41
    round18 = sum(x.section == "blackwell_moe" for x in vp.ROUND18)  # 4 x GB200 405B, 4 rows
    assert s[("validation", "blackwell_moe")]["n"] == 11 + len(vp.ROUND12) + round18 == 30
    assert vp.BLACKWELL_MOE_FIT == ((74, "T020b"), (156, "M50"), (130, "DSR1"))
    rows = {x["row"].row: x for x in r if x["row"].group == "blackwell_moe"}
    for n in (131, 133):  # DeepSeek-R1 expert-parallel, out of sample (FP16 KV; H200 FP8)
        assert abs(rows[n]["err"]) <= 0.15
        assert rows[n]["m"]["ep"] == 8


def test_fp4_factor_is_the_software_stacks(res):
    """Round 9: a PyTorch-backend row's FP4 GEMMs take cb_fp4_gemm_efficiency_pytorch, an MLPerf
    (TensorRT engine) row the default cb_fp4_gemm_efficiency; both fitted on Llama-3.1-405B,
    the MLPerf llama2-70b rows run under NVIDIA's published config classes."""
    vp, r = res
    from objectives.presets import resolve_context

    t = resolve_context({"gpu": "b200"})["technology"]
    assert t["cb_fp4_gemm_efficiency"] / t["cb_fp4_gemm_efficiency_pytorch"] == pytest.approx(
        0.706 / 0.4771
    )
    rows = {x["row"].row: x for x in r}
    assert (
        rows[74]["row"].src in vp.PYTORCH_SOURCES
        and rows[156]["row"].src not in vp.PYTORCH_SOURCES
    )
    # the PyTorch row evaluated with the TensorRT factor is faster by about the factors' ratio
    as_trt = vp.predicted(rows[74]["row"], vp.evaluate(rows[74]["row"], {
        "cb_fp4_gemm_efficiency_pytorch": t["cb_fp4_gemm_efficiency"]}))  # fmt: skip
    assert 1.1 < as_trt / rows[74]["pred"] < 0.706 / 0.4771 + 0.01
    for n, (batch, tokens, frac) in {151: (2048, 3584, 0.95), 152: (2048, 3584, 0.95),
                                     153: (768, 768, 0.9)}.items():  # fmt: skip
        row = rows[n]["row"]
        assert row.tp == 1 and rows[n]["m"]["tp"] == 1
        assert (row.tech["cb_max_batch"], row.tech["cb_max_num_tokens"]) == (batch, tokens)
        assert row.tech["kv_cache_free_fraction"] == frac
    for n in (151, 152, 160):  # -7.7 / -7.4 / +7.3 % until round 13's length spread
        assert abs(rows[n]["err"]) <= 0.11


def test_by_gpu_family_is_reported_and_kept(res):
    """Each family's figures are in docs/validation.md and kept at what is reached (round 13):
    Hopper median 13.5 %, p90 45.8 % over 51 rows since round 18's Nebius H200 rows 601-606
    (13.0 % / 45.2 % over 45 before; 10.6 % / 44.9 % over 39 before round 15's weight-only FP4
    rows 501-506 on H100); AMD median 23.4 %, p90 118 % over 5 rows; Blackwell median 11.0 %,
    p90 35.6 % over 28 rows since round 18's 4 x GB200 405B rows 607-610 (11.4 % / 35.7 % over
    24 before), 11.4 % / 35.7 % over 24 since round 16's shortest-queue dispatch of
    the v5.1 Server rows (10.6 % / 34.0 % before it; 7.7 % / 29.1 % over 9 before round 12's
    MLPerf v5.1 rows, 20.2 % / 47.2 % before round 13 gave every MLPerf row its data set's
    spread of answer lengths; docs/validation.md Known deviations), so a change that loses
    ground is seen."""
    vp, r = res
    fam = vp.by_family(r)
    assert set(fam) == {"Hopper", "Blackwell", "AMD"}
    assert fam["Hopper"]["n"] == 51 and fam["Hopper"]["median"] <= 0.136
    assert fam["Hopper"]["p90"] <= 0.459
    assert fam["AMD"]["n"] == 5 and fam["AMD"]["median"] <= 0.24 and fam["AMD"]["p90"] <= 1.2
    bw = fam["Blackwell"]
    assert bw["n"] == 28 and bw["median"] <= 0.111 and bw["p90"] <= 0.357 and bw["max"] <= 0.61
    doc = vp.DOC.read_text(encoding="utf-8")
    for name, v in fam.items():
        assert f"| {name} | {v['n']} | {v['median']:.1%} | {v['p90']:.1%} |" in doc


@pytest.mark.parametrize(
    "family",
    [
        pytest.param(
            "Blackwell",
            marks=pytest.mark.xfail(
                strict=True,
                reason="median 11.0 %, p90 35.6 % over 28 rows (round 18; 11.4 / 35.7 % over "
                "24 in round 16, 10.6 / 34.0 % with random dispatch, 20.2 % / 47.2 % before "
                "the length-biased decode "
                "context): MLPerf v5.1 DeepSeek-R1 Offline rows 403, 405, 407 +24..+36 %, "
                "Interactive row 153 +36 %, 405B Server/Interactive 410-411 +61/+42 % under "
                "the harness's shortest-queue dispatch (the model's TPOT tail is narrow)",
            ),
        ),
        pytest.param(
            "Hopper",
            marks=pytest.mark.xfail(
                strict=True,
                reason="p90 45.8 % (median 13.5 %, 51 rows): TP8 H100 long-decode rows 3, 17, 22 "
                "(+45 %), v0.10 Mixtral row 6 (+87 %, a release), 405B Server/Interactive rows "
                "159, 605, 606 (-50, -51, -62 %), "
                "weight-only FP4 prefill rows 502-503, 505-506 (+34..+74 %)",
            ),
        ),
        pytest.param(
            "AMD",
            marks=pytest.mark.xfail(
                strict=True,
                reason="median 23.4 %, p90 118 % over 5 rows: Interactive row 303 (+176 %, "
                "vLLM eager mode), MI355X MXFP4 row 304 (-23 %), v4.1 rows 305-306 (+18, +31 %)",
            ),
        ),
    ],
)
def test_family_meets_issue_36_target(res, family):
    """Issue 36's target on the validation serving-throughput rows of each GPU family: median
    |error| <= 15 %, p90 <= 30 %. A family that does not reach it is an expected failure with
    its figures (strict: reaching it turns the test green only once the mark is removed)."""
    vp, r = res
    v = vp.by_family(r)[family]
    assert v["median"] <= vp.FAMILY_TARGET["median"] and v["p90"] <= vp.FAMILY_TARGET["p90"], v


#: Round 12's rows and the errors they read when first evaluated (declared before, nothing
#: fitted): kept within 0.5 point so a model change that moves them is seen.
#: Since round 13 every MLPerf row carries its data set's spread of answer lengths, which sets
#: the mean context a step reads (rounds.running_context): the DeepSeek-R1 rows (answers of cv
#: 1.25) were +21..+60 % before it. Since round 16 the v5.1 Server/Interactive rows run with
#: the harness's join-the-shortest-queue dispatch (validate_perf.dispatch_of): 410 +3.4 ->
#: +60.9 %, 411 -4.8 -> +41.9 %, 412 -19.4 -> +11.9 %, 413 -34.9 -> +17.4 % (the others have
#: one instance, or are bound by their TPOT, and do not move).
ROUND12_ERRORS = {401: 0.168, 402: 0.036, 403: 0.239, 404: 0.098, 405: 0.356, 406: -0.108,
                  407: 0.319, 408: -0.080, 409: 0.244, 410: 0.609, 411: 0.419, 412: 0.119,
                  413: 0.174, 414: -0.080, 415: -0.035}  # fmt: skip


def test_round12_mlperf_v51_blackwell_rows_are_validation_under_their_configs(res):
    """Round 12 (MLPerf v5.1 closed, NVIDIA and CoreWeave Blackwell): 15 validation rows, none
    fitted, under their config classes. DeepSeek-R1 runs TP8 EP8 + attention DP on the PyTorch
    backend (its FP4 factor) with the per-rank batch gpu_batch_size capped by max_concurrency /
    8 (GB300 Offline: min(1,536, 10,240 / 8) = 1,280, so 8 x 1,280 sequences per instance); a
    72-GPU rack runs 9 instances. Outputs are each log's tokens/s over samples/s."""
    vp, r = res
    rows = {x["row"].row: x for x in r if x["row"].row in ROUND12_ERRORS}
    assert len(vp.ROUND12) == len(rows) == 15
    assert all(x["row"].split == "validation" for x in rows.values())
    assert not {(x.row, x.src) for x in vp.ROUND12} & set(vp.BLACKWELL_MOE_FIT)
    assert "M51P" in vp.PYTORCH_SOURCES and "M51" not in vp.PYTORCH_SOURCES
    for n, err in ROUND12_ERRORS.items():
        assert rows[n]["err"] == pytest.approx(err, abs=0.005), n
    gb300 = rows[405]
    assert gb300["row"].tech["cb_max_batch"] == 1280
    assert (gb300["m"]["tp"], gb300["m"]["ep"], gb300["m"]["replicas"]) == (8, 8, 9)
    assert gb300["m"]["batch"] == pytest.approx(8 * 1280)
    assert rows[405]["row"].osl == round(420659 / 115.017)  # 3,657 tokens per sample
    # the model has the same GB300 per GPU in the NVL72 rack and in CoreWeave's 8-GPU system
    # (TP8 EP8 fits in 8 GPUs); measured they are 3 % apart (5,843 vs 6,006 tok/s per GPU)
    assert rows[405]["pred"] / 72 == pytest.approx(rows[407]["pred"] / 8, rel=0.01)
    assert 420659 / 72 / (48047 / 8) == pytest.approx(0.973, abs=0.001)
    # the Server rows meet their SLOs at the 99th percentile (DeepSeek-R1: TPOT 80 ms)
    for n in (402, 404, 406, 408, 410, 411, 412, 413, 415):
        m, wl = rows[n]["m"], rows[n]["row"].wl
        assert m["slo_met"] == 1 and m["tpot_s"] <= wl["tpot_slo_s"] * (1 + 1e-6), n
        assert m["ttft_s"] <= wl["ttft_slo_s"] * (1 + 1e-6), n


def test_weight_only_rows_keep_their_errors(res):
    """Round 15's weight-only FP4 rows on H100 (gpt-oss-120b MXFP4 experts, vLLM 0.10.2;
    declared before evaluation, nothing fitted; the answers' lengths corrected to the generated
    ones after the first evaluation, and only the experts quantized since quantized_weights
    exists, as gpt-oss ships them; Known deviations) keep these errors within 0.5 point: the
    32,000-token prompts +5.2 / +5.0 %, the shorter prompts +34 / +74 / +34 / +42 %, TPOT at a
    batch of 4 +90 / +62 %."""
    _, r = res
    got = {(x["row"].row, x["row"].kind): x["err"] for x in r if x["row"].src == "GPUS"}
    first = {(501, "tput"): 0.052, (502, "tput"): 0.342, (503, "tput"): 0.743,
             (504, "tput"): 0.050, (505, "tput"): 0.337, (506, "tput"): 0.418,
             (507, "ttft_s"): 0.444, (507, "tpot_s"): 0.899, (508, "ttft_s"): 0.029,
             (508, "tpot_s"): 0.618}  # fmt: skip
    assert set(got) == set(first)
    for k, v in first.items():
        assert got[k] == pytest.approx(v, abs=0.005), k


#: Round 18's rows (MLPerf v5.1 closed partner submissions on NVIDIA's harness, declared before
#: any result was read, nothing fitted) and the errors they read when first evaluated.
ROUND18_ERRORS = {601: -0.135, 602: -0.119, 603: 0.163, 604: -0.129, 605: -0.508, 606: -0.615,
                  607: -0.026, 608: -0.128, 609: -0.018, 610: -0.110}  # fmt: skip


def test_round18_partner_rows_are_validation_under_their_configs(res):
    """Round 18: Nebius 8 x H200 (llama2-70b TP1 x 8, Llama-3.1-405B TP4 x PP2 / TP8) and
    4 x GB200 Llama-3.1-405B (Nebius, Azure) under their config classes; outputs each log's
    tokens/s over samples/s; the Server and Interactive rows under the v5.1 harness's
    shortest-queue dispatch. Kept within 0.5 point of their first errors."""
    vp, r = res
    rows = {x["row"].row: x for x in r if x["row"].row in ROUND18_ERRORS}
    assert len(vp.ROUND18) == len(rows) == 10
    assert all(x["row"].split == "validation" and x["row"].src == "M51" for x in rows.values())
    for n, err in ROUND18_ERRORS.items():
        assert rows[n]["err"] == pytest.approx(err, abs=0.005), n
    assert rows[601]["row"].osl == round(34812.1 / 118.653)  # 293 tokens per sample
    assert vp.context(rows[603]["row"])["workload"]["dispatch"] == "shortest_queue"
    tech = rows[606]["row"].tech  # the runtime max_batch_size, not gpu_batch_size 512
    assert (tech["cb_max_batch"], tech["cb_max_num_tokens"]) == (64, 2560)
    # the two 4 x GB200 submitters measure within 1 % Offline and 2 % Server; so does the model
    assert rows[607]["pred"] == pytest.approx(rows[609]["pred"], rel=0.01)
    assert 855.82 / 847.233 == pytest.approx(1.010, abs=0.001)
