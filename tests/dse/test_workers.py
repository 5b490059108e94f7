"""Workers on one study: a real PostgreSQL server, real worker processes, real heartbeats."""

from __future__ import annotations

import socket
import subprocess
import time
import warnings
from pathlib import Path

import optuna
import yaml

from dse import api
from dse.search.recovery import recover_stale_trials
from dse.search.runner import create_or_load
from dse.search.stored import STALE_ATTR, WORKER_ATTR
from tests.cli.test_crash_resume import assert_exact, dse_popen, slow_spec
from tests.conftest import run_dse


def _objective_vectors(front: object) -> set[tuple[float, float]]:
    return {(float(r["slow.f1"]), float(r["slow.f2"])) for _, r in front.iterrows()}  # type: ignore[attr-defined]


def test_three_postgres_workers_reach_the_total_with_the_single_worker_front(
    tmp_path: Path, studies_dir: Path, postgres_server: object
) -> None:
    total = 36
    spec = slow_spec(tmp_path, study="pg3", trials=total, sleep_s=0.02)
    one_url = postgres_server.create_database()  # type: ignore[attr-defined]
    three_url = postgres_server.create_database()  # type: ignore[attr-defined]
    single = api.run(spec, storage=one_url)
    # Three workers start at once on an empty database: one creates the study, all join it.
    args = ("worker", str(spec), "--storage", three_url)
    workers = [dse_popen(*args, stderr=subprocess.PIPE) for _ in range(3)]
    for w in workers:
        _, err = w.communicate(timeout=180)
        assert w.returncode == 0, err
    assert_exact(three_url, "pg3", total)
    _, front = api.load_study("pg3", storage=three_url)
    study = optuna.load_study(study_name="pg3", storage=three_url)
    owners = {t.user_attrs[WORKER_ATTR] for t in study.get_trials()}
    assert len(owners) == 3
    # Same evaluator, different samples, the same front: every value of `a`, once each.
    assert set(front.columns) == set(single.front.columns)
    assert _objective_vectors(front) == _objective_vectors(single.front)
    assert _objective_vectors(front) == {(0.0, 3.0), (1.0, 2.0), (2.0, 1.0), (3.0, 0.0)}
    params = [t.params for t in study.get_trials()]
    assert params != [t.params for t in single.study.get_trials()]
    status = run_dse("status", "pg3", "--storage", three_url, "--json")
    assert status.returncode == 0, status.stderr
    assert '"finished": 36' in status.stdout and '"front_size": ' in status.stdout


def test_a_worker_with_a_different_spec_is_refused_naming_the_keys(
    tmp_path: Path, studies_dir: Path
) -> None:
    spec = slow_spec(tmp_path, study="same", trials=2, sleep_s=0.0)
    api.run(spec)
    data = yaml.safe_load(spec.read_text())
    data["space"]["b"]["high"] = 50
    data["objectives"][1]["direction"] = "maximize"
    data["search"]["trials"] = 4  # a larger total is allowed: it extends the study
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(data))
    res = run_dse("worker", str(other))
    assert res.returncode == 2
    assert "objectives.1.direction" in res.stderr and "space.b.high" in res.stderr
    assert "search.trials" not in res.stderr
    ok = run_dse("run", str(spec), "--trials", "4", "--no-progress")
    assert ok.returncode == 0, ok.stderr


def test_heartbeat_stale_trial_from_another_host_is_failed_and_requeued(
    tmp_path: Path, studies_dir: Path, postgres_url: str
) -> None:
    spec = slow_spec(tmp_path, study="hb", trials=3, sleep_s=0.0)
    model = api.load(spec)
    study = create_or_load(model, postgres_url, heartbeat_s=1, grace_s=1)
    dists = {
        "a": optuna.distributions.CategoricalDistribution([0, 1, 2, 3]),
        "b": optuna.distributions.IntDistribution(0, 99),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trial = study.ask(dists)
    # A worker on another host: its pid means nothing here, only its heartbeat does.
    trial.set_user_attr(WORKER_ATTR, f"not-{socket.gethostname()}:1")
    study._storage.record_heartbeat(trial._trial_id)  # type: ignore[attr-defined]
    assert recover_stale_trials(study) == 0  # still within the grace period
    time.sleep(2.5)
    assert recover_stale_trials(study) == 1
    trials = study.get_trials()
    stale = trials[trial.number]
    assert stale.state == optuna.trial.TrialState.FAIL and stale.user_attrs[STALE_ATTR]
    waiting = [t for t in trials if t.state == optuna.trial.TrialState.WAITING]
    assert [t.system_attrs["fixed_params"] for t in waiting] == [trial.params]
    res = api.run(spec, storage=postgres_url)
    assert_exact(postgres_url, "hb", 3)
    assert trial.params in [t.params for t in res.study.get_trials() if t.number > trial.number]
