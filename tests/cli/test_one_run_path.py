"""One run path (issue 16, item 3): ``api.run``, ``dse run``, ``dse run --jobs`` and
``dse worker`` all go through ``dse.search.study.workers.run_worker``: the same storage resolution,
the same atomic lock, the same exact total and the same records for one seed."""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd
import pytest
import yaml

from dse import api
from dse.search.spec_lock import LOCK_FILE
from tests.cli.test_crash_resume import overshoot
from tests.conftest import ROOT, run_dse
from tests.dse.model.test_spec_selected_evaluators import zdt1_copy

#: Columns that depend on the wall clock, not on the run's logic.
CLOCK = ("datetime_start", "datetime_complete", "duration", "worker", "heartbeat")


def _spec(tmp_path: Path, study: str, trials: int = 24) -> Path:
    return zdt1_copy(
        tmp_path,
        study=study,
        constraints=["zdt1.f1 <= 0.7"],  # some designs infeasible: the rule is recorded too
        search={"sampler": "nsga2", "trials": trials, "seed": 11},
    )


def _records(directory: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    trials = pd.read_csv(directory / "trials.csv")
    front = pd.read_csv(directory / "pareto.csv")
    drop = [c for c in trials.columns if any(k in c for k in CLOCK)]
    return trials.drop(columns=drop), front.drop(columns=[c for c in drop if c in front])


def _lock(directory: Path) -> dict[str, object]:
    lock = yaml.safe_load((directory / LOCK_FILE).read_text())
    lock.pop("storage", None)  # each root has its own journal file
    return lock


def test_api_run_dse_run_and_dse_worker_write_identical_records_and_locks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _spec(tmp_path, "same-path")
    roots = {k: tmp_path / k for k in ("api", "cli", "worker")}
    for root in roots.values():
        root.mkdir()
    monkeypatch.setenv("DSE_STUDIES_DIR", str(roots["api"]))
    res = api.run(spec)
    assert res.after == 24 and res.before == 0
    cli = run_dse("run", str(spec), "--no-progress", env={"DSE_STUDIES_DIR": str(roots["cli"])})
    assert cli.returncode == 0, cli.stderr
    env = {"DSE_STUDIES_DIR": str(roots["worker"])}
    worker = run_dse("worker", str(spec), "--records", env=env)
    assert worker.returncode == 0, worker.stderr
    assert "24/24" in worker.stdout
    dirs = {k: root / "same-path" for k, root in roots.items()}
    api_trials, api_front = _records(dirs["api"])
    assert len(api_trials) == 24 and 0 < api_trials["feasible"].sum() < 24
    for k in ("cli", "worker"):
        trials, front = _records(dirs[k])
        pd.testing.assert_frame_equal(trials, api_trials, check_exact=True)
        pd.testing.assert_frame_equal(front, api_front, check_exact=True)
        assert _lock(dirs[k]) == _lock(dirs["api"])
    for d in dirs.values():  # written whole: no temporary file left beside the lock
        assert (d / LOCK_FILE).is_file()
        assert not [p.name for p in d.iterdir() if p.name.endswith(".tmp")]


def test_jobs_workers_write_the_same_lock_and_reach_the_total(
    tmp_path: Path, studies_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _spec(tmp_path, "jobs-path", trials=20)
    res = run_dse(
        "run", str(spec), "--jobs", "2", "--no-progress", env={"DSE_STUDIES_DIR": str(studies_dir)}
    )
    assert res.returncode == 0, res.stderr
    trials = pd.read_csv(studies_dir / "jobs-path" / "trials.csv")
    assert (trials["state"] == "COMPLETE").all(), trials["state"].value_counts()
    # Both workers may claim a generation's first batch at once (NSGA-II, 20 trials left).
    assert 20 <= len(trials) <= 20 + overshoot(2, 20), len(trials)
    single = tmp_path / "single"
    single.mkdir()
    monkeypatch.setenv("DSE_STUDIES_DIR", str(single))
    api.run(spec, trials=2)
    assert _lock(studies_dir / "jobs-path") == _lock(single / "jobs-path")


def _calls(name: str) -> list[str]:
    """``module:function`` of every call of ``name`` (plain or attribute) in dse/, the
    innermost function holding it."""
    found: dict[tuple[str, int], str] = {}
    for path in sorted((ROOT / "dse").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Call):
                    f = node.func
                    called = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                    if called == name:  # inner functions come later in the walk
                        key = (str(path), node.lineno * 1000 + node.col_offset)
                        found[key] = f"{path.relative_to(ROOT).as_posix()}:{fn.name}"
    return sorted(found.values())


def test_the_study_loop_and_the_lock_have_one_call_site() -> None:
    # Every entry point reaches run_study and the lock write through workers.run_worker.
    assert _calls("run_study") == ["dse/search/study/workers.py:run_worker"]
    assert _calls("write_lock_atomic") == ["dse/search/study/workers.py:started"]
    # workers.run_worker from api.run and api.run_worker; api.run_worker from 'dse worker'
    # (which '--jobs' starts); 'dse run' calls api.run.
    assert _calls("run_worker") == [
        "dse/api.py:run",
        "dse/api.py:run_worker",
        "dse/cli/worker.py:worker_command",
    ]
    assert _calls("write_lock") == []  # the lock is written by write_lock_atomic alone
