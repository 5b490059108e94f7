"""Cooling as a choice: liquid costs its cold plates per kW and saves fan and facility power."""

from __future__ import annotations

import numpy as np
import pytest

from objectives.cooling import cooling_usd_per_gpu, it_power_factor, pue_factor
from objectives.cost import evaluate_cost
from objectives.perf import evaluate_perf
from objectives.presets import resolve_context

H100 = {
    "gpu": "h100-sxm",
    "cluster_size": 64,
    "workload": {"model": "llama3-70b", "phase": "decode", "precision": "fp8",
                 "input_tokens": 2048, "output_tokens": 512, "batch": "auto",
                 "tpot_slo_s": 0.05, "ttft_slo_s": 2.0},
}  # fmt: skip


def _design(**kw: object) -> dict:
    return resolve_context({**H100, **kw})


def test_liquid_costs_its_content_per_kw_and_air_nothing_extra() -> None:
    d = _design(cooling=np.array(["air", "liquid"]))
    # ($49,860 per GB300 NVL72 rack - 72 GPU cold plates x $300, priced in the module)
    # / (72 x 1.4 kW) = $280.4 per kW: a 700 W package pays $196.3
    np.testing.assert_allclose(cooling_usd_per_gpu(d, 700.0), [0.0, 0.7 * 280.4])
    np.testing.assert_allclose(it_power_factor(d), [1.0, 0.929])
    np.testing.assert_allclose(pue_factor(d), [1.0, 0.967])


def test_liquid_lowers_cluster_and_facility_power_by_the_cited_factors() -> None:
    air = evaluate_perf(_design(cooling="air"))
    liquid = evaluate_perf(_design(cooling="liquid"))
    # an H100 at 1.83 GHz is not throttled by air (0.65 < 0.75 W/mm2): same operating point
    assert float(air["clock_eff_ghz"]) == pytest.approx(float(liquid["clock_eff_ghz"]))
    assert float(liquid["cluster_power_w"]) == pytest.approx(
        0.929 * float(air["cluster_power_w"]), rel=1e-9
    )
    ratio = float(liquid["facility_power_w"]) / float(air["facility_power_w"])
    assert ratio == pytest.approx(0.929 * 0.967, rel=1e-9)  # total power -10.2 % (ASME study)


def test_cooling_cost_line_is_in_the_system_share_and_vectorized_equals_scalar() -> None:
    kinds = np.array(["air", "liquid", "air"])
    batch = evaluate_cost(_design(cooling=kinds))
    for i, k in enumerate(kinds):
        one = evaluate_cost(_design(cooling=str(k)))
        for m in ("cooling_cost_usd", "system_share_usd", "usd_per_mtok"):
            assert float(batch[m][i]) == pytest.approx(float(one[m]), rel=1e-12), (k, m)
    perf = evaluate_perf(_design(cooling="liquid"))
    one = evaluate_cost(_design(cooling="liquid"))
    assert float(one["cooling_cost_usd"]) == pytest.approx(
        float(perf["package_power_w"]) / 1000 * 280.4
    )
    parts = one["host_cost_usd"] + one["facility_cost_usd"]
    assert float(one["system_share_usd"]) == pytest.approx(float(parts + one["cooling_cost_usd"]))
