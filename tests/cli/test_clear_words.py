"""The tool says so in words whenever it does less than asked (issue 17): a study already at
its total, a refused run (no progress bar first), sweep counts that agree, units kept in
headings, and ``dse evaluate`` stating each constraint and the verdict."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import yaml

from dse import api
from dse.model.load import load
from dse.search.sweep.sweep import sweep
from tests.conftest import SPACES, run_dse

LITE_DESIGN = [
    "--set",
    "die_area_mm2=800",
    "--set",
    "hbm_stacks_per_die=8",
    "--set",
    "optics_per_link=8",
    "--set",
    "cluster_size=64",
]


def _spec(tmp_path: Path, name: str, trials: int, **changes: object) -> Path:
    data = yaml.safe_load((SPACES / "litegpu.yaml").read_text())
    data["study"] = name
    data["search"] = {"sampler": "random", "trials": trials, "seed": 0}
    data.update(changes)
    p = tmp_path / f"{name}-{len(changes)}.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def test_run_below_current_count_says_so_and_shows_no_bar(tmp_path: Path) -> None:
    env = {"DSE_STUDIES_DIR": str(tmp_path / "studies")}
    spec = _spec(tmp_path, "words", 12)
    assert run_dse("run", str(spec), env=env).returncode == 0
    res = run_dse("run", str(spec), "--trials", "5", env=env)
    assert res.returncode == 0, res.stderr
    assert "already has 12 finished trials" in res.stderr
    assert "ask for 17 to add 5 more" in res.stderr
    assert "0/5" not in res.stderr and "━" not in res.stderr, res.stderr
    assert "0 new this run" in res.stdout
    payload = json.loads(run_dse("run", str(spec), "--trials", "5", "--json", env=env).stdout)
    assert payload["added"] == 0 and payload["requested"] == 5 and payload["trials"] == 12
    assert "already has 12" in payload["note"]


def test_refused_run_prints_its_line_without_a_progress_bar(tmp_path: Path) -> None:
    env = {"DSE_STUDIES_DIR": str(tmp_path / "studies")}
    spec = _spec(tmp_path, "refused", 4)
    assert run_dse("run", str(spec), env=env).returncode == 0
    other = _spec(tmp_path, "refused", 4, constraints=["perf.package_power_w <= 900"])
    res = run_dse("run", str(other), "--trials", "8", env=env)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [res.stderr.strip()], res.stderr
    assert "different spec" in res.stderr and "━" not in res.stderr


def test_api_run_below_current_count_warns(studies_dir: Path, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "apiwords", 6)
    first = api.run(spec)
    assert first.added == 6 and first.note is None
    with pytest.warns(api.NothingToRun, match="already has 6 finished trials"):
        again = api.run(spec, trials=3)
    assert again.added == 0 and again.before == 6 and again.requested == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", api.NothingToRun)
        more = api.run(spec, trials=8)  # raising the total adds trials, silently
    assert more.added == 2 and more.note is None


def test_sweep_progress_ends_at_the_written_front_size(studies_dir: Path, tmp_path: Path) -> None:
    """Quasi-random samples of a small discrete space repeat designs; the bar's last front
    count is the written front (each design once), as the final line says."""
    spec = _spec(
        tmp_path,
        "sweepwords",
        1,
        space={
            "die_area_mm2": {"type": "categorical", "choices": [200, 400, 800]},
            "hbm_stacks_per_die": {"type": "int", "low": 1, "high": 4},
        },
    )
    calls: list[tuple[int, int, int]] = []
    result = sweep(load(spec), samples=200, chunk=50, on_progress=lambda *a: calls.append(a))
    assert calls[-1] == (200, 200, result.front_size)
    assert result.front_size == len(result.front)
    assert len(result.front) == len(result.front.drop_duplicates())


def test_sensitivity_headings_keep_units_in_brackets() -> None:
    res = run_dse("sensitivity", str(SPACES / "h100.yaml"), "--top", "1")
    assert res.returncode == 0, res.stderr
    assert "perf.tokens_per_joule [tokens/J]: nominal" in res.stdout
    assert "cost.usd_per_mtok [USD/Mtok]: nominal" in res.stdout


def test_evaluate_prints_constraints_and_feasibility() -> None:
    lite = str(SPACES / "litegpu.yaml")
    res = run_dse("evaluate", lite, *LITE_DESIGN)
    assert res.returncode == 0, res.stderr
    assert "perf.package_power_w <= 1200" in res.stdout
    assert "infeasible: violates" in res.stdout
    payload = json.loads(run_dse("evaluate", lite, *LITE_DESIGN, "--json").stdout)
    rows = {c["constraint"]: c for c in payload["constraints"]}
    assert len(rows) == 8  # the spec's 5 and the domain's 3 others held by default
    assert {"cost.hbm_fits_generation", "perf.topology_ok", "perf.slo_met"} <= set(rows)
    power = rows["perf.package_power_w <= 1200"]
    # value is what the constraint measures, and the verdict follows the violation's sign
    assert power["value"] == pytest.approx(payload["metrics"]["perf.package_power_w"])
    assert power["satisfied"] == (power["value"] <= 1200)
    assert payload["feasible"] == all(c["satisfied"] for c in rows.values())
    assert payload["feasible"] is False
    ok = json.loads(run_dse("evaluate", str(SPACES / "h100.yaml"), "--json").stdout)
    # no constraints written: the domain's physical checks hold by default (docs/spec.md)
    held = [c["constraint"] for c in ok["constraints"]]
    assert held == ["cost.reticle_fits", "cost.interposer_fits", "cost.hbm_fits_generation",
                    "perf.topology_ok", "perf.model_fits", "perf.slo_met"]  # fmt: skip
    assert ok["feasible"] is True
