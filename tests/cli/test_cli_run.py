"""End to end through the real `dse` console script in subprocesses."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pandas as pd
import yaml

from tests.conftest import SPACES, run_dse

REQUIRED = [
    "cost.dies_per_wafer",
    "cost.die_yield",
    "cost.die_cost_usd",
    "cost.gpu_cost_usd",
    "cost.cluster_capex_usd",
    "cost.tco_usd",
    "cost.usd_per_pflops",
    "cost.usd_per_mtok",
    "perf.tflops_per_gpu",
    "perf.hbm_tbps_per_gpu",
    "perf.tokens_per_s",
    "perf.ttft_s",
    "perf.tpot_s",
    "perf.gpu_power_w",
    "perf.cluster_power_w",
    "perf.tokens_per_joule",
    "perf.model_fits",
    "perf.tp",
    "perf.replicas",
    "availability.gpu_failures_per_year",
    "availability.cluster_failures_per_day",
    "availability.blast_radius_gpus",
    "availability.blast_radius_fraction",
    "availability.capacity_availability",
]


def _small_spec(tmp_path: Path, trials: int = 24, sampler: str = "nsga2") -> Path:
    text = (SPACES / "litegpu.yaml").read_text()
    data = yaml.safe_load(text)
    data["study"] = "small"
    data["search"] = {
        "sampler": sampler,
        "trials": trials,
        "seed": 3,
        "options": {"population_size": 8} if sampler == "nsga2" else {},
    }
    p = tmp_path / "small.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def test_evaluate_h100_json_has_every_required_metric_with_units() -> None:
    res = run_dse("evaluate", str(SPACES / "h100.yaml"), "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    for m in REQUIRED:
        assert m in data["metrics"], m
        assert data["units"][m], m
    # 814 mm2 on a 300 mm wafer: ~60 gross dies (the dies-per-wafer formula gives 58.6-63.5
    # by edge exclusion)
    assert 55 <= data["metrics"]["cost.dies_per_wafer"] <= 64
    # yield with 12 of 144 SMs spare (0.893 by hand in tests/objectives/test_cost.py)
    assert 0.85 <= data["metrics"]["cost.die_yield"] <= 0.93


def test_evaluate_set_overrides_fixed_and_technology() -> None:
    base = json.loads(run_dse("evaluate", str(SPACES / "h100.yaml"), "--json").stdout)
    res = run_dse(
        "evaluate",
        str(SPACES / "h100.yaml"),
        "--json",
        "--set",
        "technology.defect_density_per_cm2=0.2",
        "--set",
        "die_area_mm2=400",
    )
    assert res.returncode == 0, res.stderr
    m = json.loads(res.stdout)["metrics"]
    assert m["cost.dies_per_wafer"] > 2 * base["metrics"]["cost.dies_per_wafer"]


def test_evaluate_requires_space_params(tmp_path: Path) -> None:
    res = run_dse("evaluate", str(SPACES / "litegpu.yaml"))
    assert res.returncode == 2
    assert "--set die_area_mm2=" in res.stderr
    assert "Traceback" not in res.stderr
    ok = run_dse(
        "evaluate",
        str(SPACES / "litegpu.yaml"),
        "--set",
        "die_area_mm2=200",
        "--set",
        "hbm_stacks_per_die=2",
        "--set",
        "optics_per_link=4",
        "--set",
        "cluster_size=64",
    )
    assert ok.returncode == 0, ok.stderr
    assert "cost.usd_per_mtok" in ok.stdout


def test_run_resume_and_extend(tmp_path: Path, studies_dir: Path) -> None:
    spec = _small_spec(tmp_path)
    env = {"DSE_STUDIES_DIR": str(studies_dir)}
    first = run_dse("run", str(spec), "--no-progress", env=env)
    assert first.returncode == 0, first.stderr
    d = studies_dir / "small"
    for f in ("spec.lock.yaml", "trials.parquet", "trials.csv", "pareto.csv", "journal.log"):
        assert (d / f).is_file(), f
    trials = pd.read_parquet(d / "trials.parquet")
    assert len(trials) == 24 and trials["number"].is_unique
    # Re-running does not add trials; a larger --trials continues the same study.
    again = run_dse("run", str(spec), "--no-progress", env=env)
    assert again.returncode == 0, again.stderr
    assert len(pd.read_parquet(d / "trials.parquet")) == 24
    more = run_dse("run", str(spec), "--no-progress", "--trials", "40", env=env)
    assert more.returncode == 0, more.stderr
    trials = pd.read_parquet(d / "trials.parquet")
    assert len(trials) == 40 and sorted(trials["number"]) == list(range(40))
    # Every published metric is stored on the trial; the lock resolves every preset value.
    for m in REQUIRED:
        assert m in trials.columns, m
    lock = yaml.safe_load((d / "spec.lock.yaml").read_text())
    assert lock["fixed"]["technology"]["wafer_diameter_mm"] == 300
    assert lock["fixed"]["workload"]["model"]["layers"] == 80
    assert "dse_version" in lock
    # The recorded front is feasible and equals what `dse pareto` prints.
    front = pd.read_csv(d / "pareto.csv")
    assert front["feasible"].all() and len(front) >= 1
    out = run_dse("pareto", "small", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    assert sorted(r["number"] for r in json.loads(out.stdout)) == sorted(front["number"])
    table = run_dse("pareto", "small", env=env)
    assert "cost.usd_per_mtok" in table.stdout


def test_custom_evaluator_outside_repo_as_objective(tmp_path: Path, studies_dir: Path) -> None:
    mod = tmp_path / "ext" / "my_ext_metrics.py"
    mod.parent.mkdir()
    mod.write_text(
        textwrap.dedent("""
        from objectives.perf import evaluate_perf

        def watts_per_tflop(design):
            # scalar-only on purpose: the engine loops for it
            p = evaluate_perf(design)
            return {"w_per_tflop": float(p["gpu_power_w"]) / float(p["tflops_per_gpu"])}
    """)
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        textwrap.dedent("""
        study: ext
        fixed: {gpu: h100-sxm, cluster_size: 64}
        space:
          die_area_mm2: {type: float, low: 200, high: 800}
        evaluators:
          mine: my_ext_metrics:watts_per_tflop
        objectives:
          - {metric: mine.w_per_tflop, direction: minimize}
          - {metric: cost.usd_per_pflops, direction: minimize}
        search: {sampler: random, trials: 6, seed: 1}
    """)
    )
    env = {"DSE_STUDIES_DIR": str(studies_dir), "PYTHONPATH": str(mod.parent)}
    res = run_dse("run", str(spec), "--no-progress", env=env)
    assert res.returncode == 0, res.stderr
    trials = pd.read_csv(studies_dir / "ext" / "trials.csv")
    assert (trials["state"] == "COMPLETE").all()
    assert trials["mine.w_per_tflop"].gt(0).all()


def test_failing_evaluator_fails_trial_not_study(tmp_path: Path, studies_dir: Path) -> None:
    (tmp_path / "flaky_mod.py").write_text(
        textwrap.dedent("""
        import math
        def flaky(design):
            a = float(design["die_area_mm2"])
            if a > 500:
                raise RuntimeError("simulator crashed")
            return {"x": math.nan if a < 300 else a}
    """)
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        textwrap.dedent("""
        study: flaky
        fixed: {cluster_size: 64}
        space:
          die_area_mm2: {type: float, low: 100, high: 800}
        evaluators:
          f: flaky_mod:flaky
        objectives:
          - {metric: f.x, direction: minimize}
        search: {sampler: random, trials: 30, seed: 0}
    """)
    )
    env = {"DSE_STUDIES_DIR": str(studies_dir)}
    res = run_dse("run", str(spec), "--no-progress", env=env)
    assert res.returncode == 0, res.stderr
    t = pd.read_csv(studies_dir / "flaky" / "trials.csv")
    assert len(t) == 30
    failed = t[t["state"] == "FAIL"]
    assert failed["fail_reason"].str.contains("simulator crashed").any()
    assert failed["fail_reason"].str.contains("not finite").any()
    assert (t["state"] == "COMPLETE").any()


def test_bad_spec_exits_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        (SPACES / "litegpu.yaml").read_text().replace("cost.usd_per_mtok", "cost.usd_per_mtk")
    )
    for cmd in ("validate", "run", "evaluate"):
        res = run_dse(cmd, str(bad))
        assert res.returncode == 2, (cmd, res.stderr)
        assert "Traceback" not in res.stderr
        line = res.stderr.strip().splitlines()[0]
        assert line.startswith(f"{bad}:") and "objectives.0.metric" in line
        assert "did you mean 'cost.usd_per_mtok'" in line


def test_evaluators_and_schema_commands() -> None:
    res = run_dse("evaluators", "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert {"cost", "perf", "availability"} <= set(data)
    for name, ev in data.items():
        assert ev["vectorized"], name
        for m, info in ev["metrics"].items():
            assert info["unit"] and info["description"], (name, m)
    schema = run_dse("schema")
    assert json.loads(schema.stdout)["title"] == "litegpu-dse study spec"


def test_study_name_cannot_escape_studies(tmp_path: Path, studies_dir: Path) -> None:
    res = run_dse("pareto", "../etc", env={"DSE_STUDIES_DIR": str(studies_dir)})
    assert res.returncode == 2 and "invalid study name" in res.stderr
