"""The small frictions of a first session, each fixed: preset names matched without regard to
case with the right suggestion, an error blamed on the flag that carried the value, a recorded
trial evaluated by number, and implausible units warned about (never refused)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.inprocess import run_in_process

ROOT = Path(__file__).resolve().parents[2]
H100 = str(ROOT / "spaces" / "h100.yaml")


def _metric(res_stdout: str, name: str) -> float:
    return float(json.loads(res_stdout)["objectives"][name]["value"])


@pytest.mark.parametrize(("typed", "preset"), [("H100-SXM", "h100-sxm"), ("B200", "b200")])
def test_a_preset_name_in_any_case_is_that_preset(tmp_path: Path, typed: str, preset: str) -> None:
    node = "technology=n4"
    a = run_in_process("evaluate", H100, "--set", f"gpu={typed}", "--set", node, "--json",
                       cwd=tmp_path)  # fmt: skip
    b = run_in_process("evaluate", H100, "--set", f"gpu={preset}", "--set", node, "--json",
                       cwd=tmp_path)  # fmt: skip
    assert a.returncode == 0, a.stderr
    assert json.loads(a.stdout)["groups"] == json.loads(b.stdout)["groups"]


@pytest.mark.parametrize(("typed", "suggested"), [("h100", "h100-sxm"), ("b2000", "b200")])
def test_an_unknown_preset_suggests_the_right_one_and_blames_the_flag(
    tmp_path: Path, typed: str, suggested: str
) -> None:
    res = run_in_process("evaluate", H100, "--set", f"gpu={typed}", cwd=tmp_path)
    assert res.returncode == 2
    line = res.stderr.strip()
    assert "\n" not in line
    assert line.startswith(f"--set gpu={typed}: fixed.gpu:"), line  # not the spec's line 6
    assert f"did you mean '{suggested}'?" in line


def test_a_bad_fixed_value_from_set_names_the_flag(tmp_path: Path) -> None:
    res = run_in_process("evaluate", H100, "--set", "technology.pue=-1", cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.startswith("--set technology.pue=-1: fixed.technology.pue:")


def test_implausible_units_warn_but_evaluate(tmp_path: Path) -> None:
    sets = ["workload.tpot_slo_s=50", "technology.electricity_usd_per_kwh=8",
            "technology.defect_density_per_cm2=7"]  # fmt: skip
    res = run_in_process(
        "evaluate", H100, *[a for s in sets for a in ("--set", s)], "--json", cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    warned = [ln for ln in res.stderr.splitlines() if ln.startswith("warning: ")]
    assert [w.split()[1] for w in warned] == [
        "workload.tpot_slo_s", "technology.electricity_usd_per_kwh",
        "technology.defect_density_per_cm2",
    ]  # fmt: skip
    assert json.loads(res.stdout)["feasible"] in (True, False)  # evaluated all the same
    plain = run_in_process("evaluate", H100, "--json", cwd=tmp_path)
    assert "warning" not in plain.stderr
    quiet = run_in_process("evaluate", H100, "--set", sets[0], "-q", "--json", cwd=tmp_path)
    assert "warning" not in quiet.stderr


@pytest.mark.slow
def test_evaluate_a_recorded_trial_by_number(tmp_path: Path) -> None:
    from tests.conftest import run_dse

    spec = tmp_path / "lite.yaml"
    spec.write_text((ROOT / "spaces" / "litegpu.yaml").read_text())
    env = {"DSE_STUDIES_DIR": str(tmp_path / "studies")}
    ran = run_dse("run", str(spec), "--trials", "10", "-q", env=env, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    import pandas as pd

    trials = pd.read_csv(tmp_path / "studies" / "litegpu" / "trials.csv")
    row = trials[trials["state"] == "COMPLETE"].iloc[-1]
    for study in ("litegpu", str(spec)):
        res = run_dse("evaluate", study, "--trial", str(int(row["number"])), "--json",
                      env=env, cwd=tmp_path)  # fmt: skip
        assert res.returncode == 0, res.stderr
        got = _metric(res.stdout, "cost.usd_per_mtok")
        assert got == pytest.approx(row["cost.usd_per_mtok"], rel=1e-12)
    missing = run_dse("evaluate", "litegpu", "--trial", "999", env=env, cwd=tmp_path)
    assert missing.returncode == 2 and "has trials 0 to" in missing.stderr
