"""Regression tests from a user's review: bad input is one line and exit 2, a refused run leaves
the study's records alone, Ctrl-C says how to resume, and odd but valid specs run end to end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pandas as pd
import yaml

from tests.conftest import SPACES, run_dse
from tests.held_evaluator import start_dse


def _one_line_exit_2(res: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert "Traceback" not in res.stderr, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], res.stderr


def _small_spec(tmp_path: Path, name: str, trials: int = 20) -> Path:
    data = yaml.safe_load((SPACES / "litegpu.yaml").read_text())
    data["study"] = name
    data["search"] = {"sampler": "random", "trials": trials, "seed": 0}
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def test_evaluate_and_compare_bad_design_values_exit_2(tmp_path: Path) -> None:
    h100 = str(SPACES / "h100.yaml")
    cases = [
        (("evaluate", h100, "--set", "cluster_size=abc"), "cluster_size"),
        (("evaluate", h100, "--set", "link_type=foo"), "link_type"),
        (("evaluate", h100, "--set", "workload.batch=0", "--breakdown"), "workload.batch"),
        (("compare", h100, f"{h100}::cooling=x"), "cooling"),
        (("compare", h100, "--csv", str(tmp_path / "missing" / "x.csv")), "--csv"),
    ]
    for args, fragment in cases:
        _one_line_exit_2(run_dse(*args), fragment)


def test_evaluate_checks_int_and_range_of_searched_params() -> None:
    lite = str(SPACES / "litegpu.yaml")
    base = ["die_area_mm2=204", "optics_per_link=4"]

    def ev(*sets: str) -> subprocess.CompletedProcess[str]:
        return run_dse("evaluate", lite, "--json", *(a for s in sets for a in ("--set", s)))

    _one_line_exit_2(ev(*base, "hbm_stacks_per_die=2.5", "cluster_size=64"), "expected an integer")
    _one_line_exit_2(ev(*base, "hbm_stacks_per_die=2", "cluster_size=99999"), "outside")
    assert ev(*base, "hbm_stacks_per_die=2", "cluster_size=4096").returncode == 0


def test_refused_run_keeps_the_study_lock(tmp_path: Path, studies_dir: Path) -> None:
    env = {"DSE_STUDIES_DIR": str(studies_dir)}
    spec = _small_spec(tmp_path, "locked", trials=5)
    assert run_dse("run", str(spec), "--no-progress", env=env).returncode == 0
    lock_path = studies_dir / "locked" / "spec.lock.yaml"
    before = lock_path.read_text()
    # An unreachable storage, then an edited spec: both refused, the lock stays the study's.
    _one_line_exit_2(
        run_dse("run", str(spec), "--no-progress", "--storage", "foo", env=env), "storage"
    )
    edited = yaml.safe_load(spec.read_text())
    edited["objectives"][1]["direction"] = "minimize"
    spec.write_text(yaml.safe_dump(edited))
    _one_line_exit_2(run_dse("run", str(spec), "--no-progress", env=env), "different spec")
    assert lock_path.read_text() == before
    res = run_dse("pareto", "locked", "--format", "csv", env=env)
    assert res.returncode == 0, res.stderr


def test_ctrl_c_says_how_to_resume_and_resume_completes(tmp_path: Path, studies_dir: Path) -> None:
    env = {**os.environ, "DSE_STUDIES_DIR": str(studies_dir)}
    spec = _small_spec(tmp_path, "intr", trials=100_000)
    proc = start_dse(["run", str(spec), "--no-progress"])  # with Ctrl-C at its default
    journal = studies_dir / "intr" / "journal.log"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
        not journal.exists() or journal.stat().st_size < 20_000
    ):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "interrupted; re-run the same command to resume" in stderr
    res = run_dse("run", str(spec), "--no-progress", "--trials", "10", env=env)
    assert res.returncode == 0, res.stderr
    t = pd.read_csv(studies_dir / "intr" / "trials.csv")
    assert (t["state"] == "COMPLETE").sum() >= 10


def test_validate_checks_sampler_options_and_seed(tmp_path: Path) -> None:
    data = yaml.safe_load((SPACES / "litegpu.yaml").read_text())
    data["search"]["options"] = {"population_size": 1}
    p = tmp_path / "pop.yaml"
    p.write_text(yaml.safe_dump(data))
    _one_line_exit_2(run_dse("validate", str(p)), "population_size")
    data["search"]["options"] = {}
    data["search"]["seed"] = -1
    p.write_text(yaml.safe_dump(data))
    _one_line_exit_2(run_dse("validate", str(p)), "search.seed")


def test_run_where_every_trial_fails_says_why(tmp_path: Path, studies_dir: Path) -> None:
    # A bad fixed value is now a spec error; a simulator that crashes on every design is not.
    (tmp_path / "always_fails.py").write_text(
        "def f(design):\n    raise RuntimeError('license server unreachable')\n"
        "f.metrics = {'x': ('1', 'never computed')}\n"
    )
    data = yaml.safe_load((SPACES / "h100.yaml").read_text())
    data["study"] = "allfail"
    data["evaluators"] = {"sim": "always_fails:f"}
    data["objectives"] = [{"metric": "sim.x", "direction": "minimize"}]
    data["search"] = {"sampler": "random", "trials": 3, "seed": 0}
    p = tmp_path / "allfail.yaml"
    p.write_text(yaml.safe_dump(data))
    res = run_dse("run", str(p), "--no-progress", env={"DSE_STUDIES_DIR": str(studies_dir)})
    assert res.returncode == 0, res.stderr
    assert "every trial failed" in res.stderr and "license server unreachable" in res.stderr


def test_bad_fixed_value_is_a_spec_error_not_failed_trials(
    tmp_path: Path, studies_dir: Path
) -> None:
    data = yaml.safe_load((SPACES / "h100.yaml").read_text())
    data["study"] = "badfixed"
    data["fixed"]["link_type"] = "foo"
    p = tmp_path / "badfixed.yaml"
    p.write_text(yaml.safe_dump(data))
    res = run_dse("run", str(p), "--no-progress", env={"DSE_STUDIES_DIR": str(studies_dir)})
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "fixed.link_type: unknown link type 'foo'" in res.stderr
    assert not (studies_dir / "badfixed").exists()


MIXED_MODULE = """
def f(design):
    # raises KeyError if a choice arrives with another type (numpy turned 2 into "2")
    return {"x": float(design["size"]) * {0.5: 1.0, "big": 2.0, 2: 3.0}[design["mode"]]}
"""

MIXED_SPEC = """
study: mixed
space:
  size: {type: int, low: 1, high: 10}
  mode: {type: categorical, choices: [0.5, big, 2]}
evaluators:
  m: mixed_mod:f
objectives:
  - {metric: m.x, direction: minimize}
search: {sampler: nsga2, trials: 12, seed: 0, warm_start: 40, options: {population_size: 4}}
"""


def test_categorical_with_mixed_types_runs_and_sweeps(tmp_path: Path, studies_dir: Path) -> None:
    (tmp_path / "mixed_mod.py").write_text(textwrap.dedent(MIXED_MODULE))
    spec = tmp_path / "spec.yaml"
    spec.write_text(textwrap.dedent(MIXED_SPEC))
    env = {"DSE_STUDIES_DIR": str(studies_dir)}
    res = run_dse("run", str(spec), "--no-progress", env=env)
    assert res.returncode == 0, res.stderr
    t = pd.read_parquet(studies_dir / "mixed" / "trials.parquet")
    assert len(t) == 12 and (t["state"] == "COMPLETE").all()
    for args in (("--grid",), ("--samples", "30")):
        res = run_dse("sweep", str(spec), "--no-progress", *args, env=env)
        assert res.returncode == 0, res.stderr
        front = pd.read_csv(studies_dir / "mixed" / "sweep_front.csv")
        assert front["m.x"].tolist() == [1.0]


def test_evaluate_set_replaces_a_whole_fixed_preset() -> None:
    h100 = str(SPACES / "h100.yaml")

    def cost(*args: str) -> float:
        res = run_dse("evaluate", h100, "--json", *args)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)["metrics"]["cost.usd_per_mtok"]

    base = cost()
    assert cost("--set", "technology=n3") != base
    assert cost("--set", "gpu=h200") != base
    _one_line_exit_2(run_dse("evaluate", h100, "--set", "gpu=h300"), "did you mean 'h200'")


def test_pareto_quality_does_not_call_a_sampled_sweep_exact(
    tmp_path: Path, studies_dir: Path
) -> None:
    env = {"DSE_STUDIES_DIR": str(studies_dir)}
    spec = _small_spec(tmp_path, "sampled", trials=10)
    assert run_dse("run", str(spec), "--no-progress", env=env).returncode == 0
    res = run_dse("sweep", str(spec), "--samples", "200", "--no-progress", env=env)
    assert res.returncode == 0, res.stderr
    res = run_dse("pareto", "sampled", "--quality", env=env)
    assert res.returncode == 0, res.stderr
    assert "exact sweep front" not in res.stdout
    assert "sampled sweep front (200 designs, not exact)" in res.stdout


def test_sensitivity_of_a_design_that_does_not_evaluate_exits_2() -> None:
    # cluster_size=0 used to give NaN tokens per joule and a tornado table of zeros; the
    # models now reject it as a bad value, before any table is printed.
    res = run_dse("sensitivity", str(SPACES / "h100.yaml"), "--set", "cluster_size=0")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "cluster_size: expected a whole number of GPUs >= 1" in res.stderr
    assert res.stdout == ""
