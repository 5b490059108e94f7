"""The tests of tests/dse/search/test_storage_plugins.py that run the ``dse`` command."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import yaml

from dse.search.storage import open_storage
from dse.testing import check_storage
from tests.cli.test_crash_resume import assert_total, overshoot, slow_spec
from tests.conftest import run_dse
from tests.dse.search.test_storage_plugins import PLUGINS


@pytest.mark.slow
def test_a_study_runs_end_to_end_on_an_outside_storage(tmp_path: Path, studies_dir: Path) -> None:
    """Registered by the outside package's own entry points: ``dse run`` (two workers),
    ``dse status`` and the records read it."""
    spec = slow_spec(tmp_path, study="out", trials=12, sleep_s=0.0)
    url = f"outside:{tmp_path / 'outside.log'}"
    path = os.pathsep.join(p for p in (str(PLUGINS), os.environ.get("PYTHONPATH")) if p)
    env = {"DSE_STUDIES_DIR": str(studies_dir), "PYTHONPATH": path}
    res = run_dse("run", str(spec), "--storage", url, "--jobs", "2", env=env)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "outside.log").stat().st_size > 0
    status = run_dse("status", "out", "--json", env=env)
    assert status.returncode == 0, status.stderr
    over = overshoot(2, 12 // 4)  # random: a batch is at most a quarter of the trials left
    assert 12 <= json.loads(status.stdout)["finished"] <= 12 + over
    assert (studies_dir / "out" / "trials.parquet").exists()
    sys.path.insert(0, str(PLUGINS))
    try:
        assert_total(
            f"py:dse_outside_storage:BACKEND:{tmp_path / 'outside.log'}", "out", 12, over=over
        )
    finally:
        sys.path.remove(str(PLUGINS))
        sys.modules.pop("dse_outside_storage", None)


@pytest.mark.slow
def test_racing_workers_fail_no_trial_and_pass_the_total_by_at_most_a_batch(
    tmp_path: Path, studies_dir: Path
) -> None:
    """Two workers asking NSGA-II generations of 40 on a plug-in storage: each claims at most
    what the study lacks when it counts, so racing for the last trials passes the total by at
    most one worker's batch, and no trial is given back or FAILED (before: surplus claims came
    back as FAILED trials)."""
    spec = slow_spec(tmp_path, study="race", trials=160, sleep_s=0.0)
    data = yaml.safe_load(spec.read_text())
    data["search"] = {"sampler": "nsga2", "trials": 160, "seed": 0,
                      "options": {"population_size": 40}}  # fmt: skip
    spec.write_text(yaml.safe_dump(data))
    log = tmp_path / "race.log"
    path = os.pathsep.join(p for p in (str(PLUGINS), os.environ.get("PYTHONPATH")) if p)
    env = {"DSE_STUDIES_DIR": str(studies_dir), "PYTHONPATH": path}
    res = run_dse("run", str(spec), "--storage", f"outside:{log}", "--jobs", "2", env=env)
    assert res.returncode == 0, res.stderr
    sys.path.insert(0, str(PLUGINS))
    try:
        url = f"py:dse_outside_storage:BACKEND:{log}"
        assert_total(url, "race", 160, over=overshoot(2, 40))
        trials = optuna.load_study(study_name="race", storage=open_storage(url)).get_trials()
    finally:
        sys.path.remove(str(PLUGINS))
        sys.modules.pop("dse_outside_storage", None)
    assert {t.state for t in trials} == {optuna.trial.TrialState.COMPLETE}


@pytest.mark.slow
def test_an_unknown_scheme_lists_the_installed_ones(tmp_path: Path, studies_dir: Path) -> None:
    spec = slow_spec(tmp_path, study="nope", trials=2, sleep_s=0.0)
    res = run_dse("run", str(spec), "--storage", "nowhere:/x")
    assert res.returncode == 2
    assert "nowhere:/x" in res.stderr and "postgresql" in res.stderr and "py:MODULE" in res.stderr
    assert not (studies_dir / "nope").exists()


PROXY = """
import sys
from optuna.storages import RDBStorage, get_storage, run_grpc_proxy_server
storage = get_storage(RDBStorage(sys.argv[1]))
run_grpc_proxy_server(storage, host="127.0.0.1", port=int(sys.argv[2]))
"""


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow
def test_optunas_grpc_proxy_passes_the_check_and_runs_a_study(
    tmp_path: Path, studies_dir: Path
) -> None:
    """grpc://HOST:PORT is a client of Optuna's own proxy (a real proxy process on SQLite):
    the engine's claim, ask, tell and re-read steps, then ``dse run`` on it."""
    pytest.importorskip("grpc")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    db = f"sqlite:///{tmp_path / 'behind-proxy.db'}"
    proxy = subprocess.Popen([sys.executable, "-c", PROXY, db, str(port)])
    try:
        deadline = time.monotonic() + 60
        while not _listening(port):
            assert proxy.poll() is None and time.monotonic() < deadline, "no proxy"
            time.sleep(0.1)
        url = f"grpc://127.0.0.1:{port}"
        check_storage(url)
        spec = slow_spec(tmp_path, study="via-grpc", trials=6, sleep_s=0.0)
        res = run_dse("run", str(spec), "--storage", url, "--no-progress")
        assert res.returncode == 0, res.stderr
        assert_total(url, "via-grpc", 6)
    finally:
        proxy.terminate()
        proxy.wait(timeout=30)
