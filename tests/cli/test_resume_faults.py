"""Interrupted and concurrent runs: a warm start killed while enqueueing resumes with the rest
of its designs, and concurrent ``dse run`` on one study draw different designs."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pandas as pd
import yaml
from optuna.storages.journal._storage import JournalOperation

from tests.cli.test_crash_resume import dse_popen, kill9
from tests.conftest import SPACES, run_dse

CREATE = f'"op_code":{int(JournalOperation.CREATE_TRIAL)},'.encode()


def warm_spec(tmp_path: Path, study: str, population: int) -> Path:
    data = yaml.safe_load((SPACES / "litegpu.yaml").read_text())
    data["study"] = study
    # The whole study is the warm start's population: its front is fixed by the designs alone.
    data["search"] = {
        "sampler": "nsga2",
        "trials": population,
        "seed": 0,
        "warm_start": 4000,
        "options": {"population_size": population},
    }
    path = tmp_path / f"{study}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _front(studies_dir: Path, study: str) -> set[tuple]:
    front = pd.read_csv(studies_dir / study / "pareto.csv")
    params = sorted(c for c in front.columns if c.startswith("params."))
    return {tuple(row) for row in front[params].itertuples(index=False)}


def test_killed_warm_start_resumes_with_the_rest_of_its_designs(
    tmp_path: Path, studies_dir: Path
) -> None:
    population = 120
    env = {"DSE_STUDIES_DIR": str(studies_dir)}
    whole = warm_spec(tmp_path, "whole", population)
    res = run_dse("run", str(whole), "--no-progress", env=env)
    assert res.returncode == 0, res.stderr
    expected = _front(studies_dir, "whole")

    spec = warm_spec(tmp_path, "killed", population)
    journal = studies_dir / "killed" / "journal.log"
    proc = dse_popen("run", str(spec), "--no-progress")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and journal.read_bytes().count(CREATE) >= 3:
            break
        time.sleep(0.002)
    kill9(proc)
    queued = journal.read_bytes().count(CREATE)
    assert 0 < queued < population, f"the kill missed the enqueueing ({queued} trials)"
    # The killed run had no lock yet: resume with the spec (as a user would).
    res = run_dse("run", str(spec), "--no-progress", env=env)
    assert res.returncode == 0, res.stderr
    trials = pd.read_csv(studies_dir / "killed" / "trials.csv")
    assert (trials["state"] == "COMPLETE").sum() == population
    got = _front(studies_dir, "killed")
    assert got == expected, (len(got), len(expected))


def test_concurrent_runs_on_one_study_draw_different_designs(
    tmp_path: Path, studies_dir: Path
) -> None:
    (tmp_path / "sleepy.py").write_text(
        "import time\n\n\ndef f(design):\n    time.sleep(0.02)\n"
        "    return {'x': float(design['a']), 'y': float(design['b'])}\n"
    )
    spec = tmp_path / "twin.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "study": "twin",
                "space": {
                    "a": {"type": "float", "low": 0.0, "high": 1.0},
                    "b": {"type": "float", "low": 0.0, "high": 1.0},
                },
                "evaluators": {"s": "sleepy:f"},
                "objectives": [
                    {"metric": "s.x", "direction": "minimize"},
                    {"metric": "s.y", "direction": "maximize"},
                ],
                "search": {"sampler": "random", "trials": 80, "seed": 7},
            }
        )
    )
    env = {"DSE_STUDIES_DIR": str(studies_dir)}
    procs = [dse_popen("run", str(spec), "--no-progress", stderr=subprocess.PIPE) for _ in (0, 1)]
    for p in procs:
        _, errs = p.communicate(timeout=300)
        assert p.returncode == 0, errs
    res = run_dse("run", str(spec), "--no-progress", env=env)  # records of the joint study
    assert res.returncode == 0, res.stderr
    t = pd.read_csv(studies_dir / "twin" / "trials.csv")
    done = t[t["state"] == "COMPLETE"]
    assert len(done) == 80
    repeated = done.duplicated(subset=["params.a", "params.b"]).sum()
    assert repeated <= 1, f"{repeated} of 80 trials repeat a design"
