"""The small frictions of a first session, each fixed: preset names matched without regard to
case with the right suggestion, an error blamed on the flag that carried the value, a recorded
trial evaluated by number, and implausible units warned about (never refused)."""

from __future__ import annotations

import json
import os
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


def test_a_narrow_terminal_keeps_every_value_of_the_front() -> None:
    import pandas as pd
    from rich.console import Console

    from dse.cli import front_table

    front = pd.DataFrame(
        {
            "number": [1234, 7],
            "cost.usd_per_mtok": [0.2617, 0.3],
            "perf.tokens_per_joule": [0.4718, 0.5],
            "availability.capacity_availability": [0.9984, 0.999],
            "params.die_area_mm2": [774.0, 100.0],
            "params.hbm_stacks_per_die": [3, 8],
            "params.optics_per_link": [1, 2],
            "params.cluster_size": [12, 4096],
        }
    )
    objectives = [c for c in front.columns if "." in c and not c.startswith("params.")]
    console = Console(width=100, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    saved = front_table.out
    front_table.out = console
    try:
        front_table.print_front(front, objectives, title="t")
    finally:
        front_table.out = saved
    text = console.export_text()
    assert "number" in text
    for value in ("1234", "0.2617", "0.9984", "774", "4096"):
        assert value in text, value
    assert max(len(line) for line in text.splitlines()) <= 100
    space = {
        "cluster_size": {"type": "int", "low": 8, "high": 4096},
        "die_area_mm2": {"type": "float", "low": 100, "high": 858},
        "optics_per_link": {"type": "categorical", "choices": [1, 2, 4, 8]},
    }
    notes = front_table.bound_notes(front, space)
    assert notes == [
        "1 of 2 front designs have cluster_size at the top of its range (4096): the front may "
        "go on past it; widen the range to see",
        "1 of 2 front designs have die_area_mm2 at the bottom of its range (100): the front "
        "may go on past it; widen the range to see",
    ]


def test_one_hypervolume_wording_in_the_html_and_the_png(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pandas as pd

    from dse.inspect import report, report_png
    from dse.inspect.study_view import HYPERVOLUME_MEANING

    hist = pd.DataFrame({"number": [0, 1], "hypervolume": [0.2, 0.5]})

    class View:
        name = "s"

    titles: list[str] = []
    monkeypatch.setattr(
        report_png, "_save", lambda fig, path, **_: titles.append(fig.axes[0].get_title())
    )
    report_png.hypervolume_png(hist, View(), tmp_path / "hv.png")  # type: ignore[arg-type]
    html_title = report.hypervolume_figure(hist, View()).layout.title.text  # type: ignore[arg-type]
    assert " ".join(titles[0].split()).endswith(f"({HYPERVOLUME_MEANING})")
    assert html_title.endswith(f"({HYPERVOLUME_MEANING})")
    assert "0 = the reference point, 1 = the ideal point" in HYPERVOLUME_MEANING
