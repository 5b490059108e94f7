"""The example evaluator spaces/custom-objective/my_metrics.py: its units against a hand
computation, and its metric consistent with the perf columns of the same design."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.conftest import ROOT, run_dse

FOLDER = ROOT / "spaces" / "custom-objective"


def _module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("my_metrics", FOLDER / "my_metrics.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_kg_co2_per_mtok_by_hand() -> None:
    # 1 MW at 1,000,000 tokens/s is 1 J per token: 1e6 J per Mtok = 1e6 / 3.6e6 kWh = 0.27778 kWh,
    # at 0.37 kg CO2e/kWh 0.102778 kg per Mtok.
    assert _module().kg_co2_per_mtok(1e6, 1e6) == pytest.approx(0.37 / 3.6, rel=1e-12)
    # 700 W at 2,000 tokens/s: 0.35 J/token, 350,000 J/Mtok = 0.097222 kWh -> 0.035972 kg
    assert _module().kg_co2_per_mtok(700.0, 2000.0) == pytest.approx(0.0359722222, rel=1e-9)


def test_the_spec_reports_what_its_own_columns_give() -> None:
    res = run_dse(
        "evaluate", str(FOLDER / "spec.yaml"), "--set", "die_area_mm2=400",
        "--set", "hbm_stacks_per_die=4", "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    m = json.loads(res.stdout)["metrics"]
    j_per_token = m["perf.facility_power_w"] / m["perf.tokens_per_s"]
    expect = j_per_token * 1e6 / 3.6e6 * 0.37
    assert m["carbon.kg_co2_per_mtok"] == pytest.approx(expect, rel=1e-9)
    assert 0.01 < m["carbon.kg_co2_per_mtok"] < 10  # kg per Mtok, not a thousandth of it
