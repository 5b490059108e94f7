"""``power_limit_w``: an operator's package power limit lowers the clock through the DVFS
model (objectives/perf/hardware.py) until full-load package power fits it.

Published capped run: MLPerf Inference v4.0, NVIDIA DGX H100 llama2-70b-99.9 Offline,
MaxP 21,805.8 tok/s vs MaxQ (every GPU capped at 450 W) 17,561.6 tok/s, ratio 0.805
(mlcommons/inference_results_v4.0 @ 3c4a1cf196b7 closed/NVIDIA/results/
DGX-H100_H100-SXM-80GBx8_TRT{,_MaxQ}/llama2-70b-99.9/Offline). No published MI355X run
capped at 1,000 W was found (MLCommons results v4.1-v6.0 and AMD's MLPerf blogs searched). The
nearest published figure is the MI350X, the same CDNA 4 package shipped air-cooled at a
1,000 W board power against the MI355X's 1,400 W: "the performance difference is about 10 %
on a raw flops basis but the real world delta is more towards 20 % at the system level"
(SemiAccurate, "AMD's MI350 is a big iterative advance", June 2025, reporting AMD's launch
figures; copy at pcnewsup.com; low authority, S): a 1,000 W / 1,400 W throughput ratio of
1 / 1.2 = 0.833.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.validate_perf import ROWS, evaluate
from objectives.perf import evaluate_perf
from objectives.presets import resolve_context

MLPERF_MAXQ_RATIO = 17561.6 / 21805.8  # 0.805


def _perf(gpu: str, limit: float, **wl: object) -> dict:
    base = {"model": "llama2-70b", "batch": "auto", "input_tokens": 222, "output_tokens": 292}
    d = resolve_context(
        {"gpu": gpu, "power_limit_w": limit, "cluster_size": 8, "workload": {**base, **wl}}
    )
    return {k: np.asarray(v) for k, v in evaluate_perf(d).items()}


def test_h100_maxq_ratio_matches_mlperf_within_5_percent():
    rows = {r.row: r for r in ROWS}
    maxp, maxq = evaluate(rows[134]), evaluate(rows[139])
    ratio = maxq["tokens_per_s"] / maxp["tokens_per_s"]
    assert ratio == pytest.approx(MLPERF_MAXQ_RATIO, rel=0.05)
    assert maxq["package_power_w"] == pytest.approx(450.0, rel=1e-6)


#: MI350X (1,000 W) / MI355X (1,400 W) system-level throughput, AMD's launch figure (docstring).
MI350X_SYSTEM_RATIO = 1 / 1.2


def test_mi355x_at_1000_w_matches_the_mi350x_system_ratio_within_5_percent():
    """Llama-2-70B under the conditions AMD runs it in MLPerf (TP1 x 8, validation rows
    301-304): the model's 1,000 W / 1,400 W ratio is 0.809 against the published 0.833 (-2.9 %).
    Not a capped run (none was found): a same-silicon SKU at that power. The ratio depends on
    the workload: at TP8, where HBM and the all-reduce weigh more, the model gives 0.918
    (+10 %); the published figure does not say which workload it averages."""
    full, capped = _perf("mi355x", 0.0, tp=1), _perf("mi355x", 1000.0, tp=1)
    ratio = float(capped["tokens_per_s"] / full["tokens_per_s"])
    assert ratio == pytest.approx(MI350X_SYSTEM_RATIO, rel=0.05)
    tp8 = float(_perf("mi355x", 1000.0, tp=8)["tokens_per_s"] / _perf("mi355x", 0.0, tp=8)[
        "tokens_per_s"])  # fmt: skip
    assert ratio < tp8 < 0.95


def test_mi355x_at_1000_w_vs_1400_w():
    full, capped = _perf("mi355x", 0.0, tp=8), _perf("mi355x", 1000.0, tp=8)
    assert float(full["package_power_w"]) == pytest.approx(1400, rel=0.01)  # its TBP
    assert float(capped["package_power_w"]) == pytest.approx(1000, rel=1e-6)
    ratio = float(capped["tokens_per_s"] / full["tokens_per_s"])
    # the clock falls from 2.4 GHz; throughput less than in proportion (HBM-bound parts)
    clock_ratio = float(capped["clock_eff_ghz"] / full["clock_eff_ghz"])
    assert clock_ratio < ratio < 1.0
    assert 0.7 < ratio < 0.95


def test_a_limit_above_the_tdp_changes_nothing_and_zero_is_none():
    a, b, c = _perf("h100-sxm", 0.0), _perf("h100-sxm", 700.5), _perf("h100-sxm", 5000.0)
    for k in ("tokens_per_s", "clock_eff_ghz", "package_power_w", "cluster_power_w"):
        assert float(a[k]) == pytest.approx(float(b[k]), rel=1e-9) == float(c[k])


def test_throughput_rises_with_the_limit_and_the_host_stays():
    limits = [300.0, 400.0, 500.0, 600.0, 700.0]
    runs = [_perf("h100-sxm", w) for w in limits]
    tps = [float(r["tokens_per_s"]) for r in runs]
    assert tps == sorted(tps)
    for w, r in zip(limits, runs, strict=True):
        assert float(r["package_power_w"]) <= w * (1 + 1e-9)
    # the host and network share is the node's as built: the same under every limit
    over = [float(r["cluster_power_w"] - 8 * r["gpu_power_w"]) for r in runs]
    assert max(over) == pytest.approx(min(over), rel=1e-6)


def test_vectorized_limits_equal_scalar():
    d = resolve_context({"gpu": "b200", "cluster_size": 8, "workload": {"batch": "auto"}})
    limits = np.array([0.0, 600.0, 800.0, 1000.0, 1200.0])
    many = evaluate_perf({**d, "power_limit_w": limits})
    for i, w in enumerate(limits):
        one = evaluate_perf({**d, "power_limit_w": w})
        for k in ("tokens_per_s", "clock_eff_ghz", "package_power_w"):
            assert float(many[k][i]) == float(one[k])


def test_a_negative_limit_is_refused():
    from objectives.param_check import check_param_value

    assert check_param_value("power_limit_w", -5.0)
    assert check_param_value("power_limit_w", 450.0) is None
