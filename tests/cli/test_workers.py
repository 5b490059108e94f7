"""Workers on one study: a real PostgreSQL server, real worker processes, real heartbeats."""

from __future__ import annotations

import contextlib
import re
import shutil
import socket
import subprocess
import time
import warnings
from collections import Counter
from pathlib import Path

import optuna
import yaml

from dse import api
from dse.search.storage import open_storage
from dse.search.stored import STALE_ATTR, WORKER_ATTR
from dse.search.study.recovery import recover_stale_trials
from dse.search.study.runner import create_or_load
from tests.cli.test_crash_resume import assert_total, dse_popen, overshoot, slow_spec
from tests.components import require_component
from tests.conftest import run_dse
from tests.postgres import PostgresServer


def _objective_vectors(front: object) -> set[tuple[float, float]]:
    return {(float(r["slow.f1"]), float(r["slow.f2"])) for _, r in front.iterrows()}  # type: ignore[attr-defined]


#: The evaluator of the sharing test: each worker's first evaluation waits until every worker
#: has started one, so on a busy machine no worker can take all the trials before the others
#: are up (one trial per batch: TPE asks one at a time).
GATED_MODULE = """
import os
import time
from pathlib import Path

_GATE = Path({gate!r})
_waited = []


def slow(design):
    if not _waited:
        _waited.append(True)
        (_GATE / str(os.getpid())).touch()
        deadline = time.monotonic() + 300
        while len(list(_GATE.iterdir())) < {workers} and time.monotonic() < deadline:
            time.sleep(0.05)
    a = float(design["a"])
    return {{"f1": a, "f2": 3.0 - a}}
"""


def gated_spec(tmp_path: Path, *, study: str, trials: int, workers: int) -> Path:
    """``slow_spec`` with TPE and an evaluator that holds each worker until all have one."""
    gate = tmp_path / "gate"
    gate.mkdir()
    folder = tmp_path / "gated"
    folder.mkdir()
    (folder / "gatedmod.py").write_text(GATED_MODULE.format(gate=str(gate), workers=workers))
    data = yaml.safe_load(slow_spec(folder, study=study, trials=trials, sleep_s=0.0).read_text())
    data["evaluators"] = {"slow": "gatedmod:slow"}
    data["search"]["sampler"] = "tpe"
    path = folder / f"{study}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_three_postgres_workers_reach_the_total_with_the_single_worker_front(
    tmp_path: Path, studies_dir: Path, postgres_server: object
) -> None:
    total = 36
    spec = slow_spec(tmp_path, study="pg3", trials=total, sleep_s=0.02)
    one_url = postgres_server.create_database()  # type: ignore[attr-defined]
    three_url = postgres_server.create_database()  # type: ignore[attr-defined]
    single = api.run(spec, storage=one_url)
    shutil.rmtree(studies_dir / "pg3")  # the folder is bound to one_url; its records are read
    # Three workers start at once on an empty database: one creates the study, all join it.
    gated = gated_spec(tmp_path, study="pg3", trials=total, workers=3)
    args = ("worker", str(gated), "--storage", three_url)
    workers = [dse_popen(*args, stderr=subprocess.PIPE) for _ in range(3)]
    mine = []
    for w in workers:
        _, err = w.communicate(timeout=180)
        assert w.returncode == 0, err
        # Progress on stderr: this worker's trials, the study's, the rate; they add up.
        last = err.decode().strip().splitlines()[-1]
        found = re.search(r": (\d+) trials by this worker; study \d+/36 \(.*trials/s", last)
        assert found, last
        mine.append(int(found.group(1)))
    over = overshoot(3, 1)  # TPE asks one trial at a time
    assert total <= sum(mine) <= total + over and min(mine) >= 1, mine
    assert_total(three_url, "pg3", total, over=over)
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
    finished = int(re.search(r'"finished": (\d+)', status.stdout).group(1))  # type: ignore[union-attr]
    assert finished == sum(mine) and '"front_size": ' in status.stdout


def test_quiet_worker_prints_no_progress(tmp_path: Path, studies_dir: Path) -> None:
    spec = slow_spec(tmp_path, study="quiet", trials=3, sleep_s=0.0)
    loud = run_dse("worker", str(spec))
    assert loud.returncode == 0, loud.stderr
    assert "joined, the study holds 0/3 trials" in loud.stderr
    assert "3 trials by this worker; study 3/3" in loud.stderr
    quiet = run_dse("--quiet", "worker", str(spec), "--trials", "5")
    assert quiet.returncode == 0, quiet.stderr
    assert "trials by this worker" not in quiet.stderr and "joined" not in quiet.stderr


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
    assert_total(postgres_url, "hb", 3)
    assert trial.params in [t.params for t in res.study.get_trials() if t.number > trial.number]


def test_two_postgres_workers_leave_no_failed_trial_in_three_rounds(
    tmp_path: Path, studies_dir: Path, postgres_server: object
) -> None:
    """Concurrent workers claim trial slots before asking, at most what the study lacks when
    they count, and never give one back: no FAILED trial (before the claim: a third of the
    trials FAILED), the total passed by at most one generation's batch."""
    total = 40
    for round_ in range(3):
        spec = slow_spec(tmp_path, study=f"two{round_}", trials=total, sleep_s=0.01)
        data = yaml.safe_load(spec.read_text())
        data["search"] = {"sampler": "nsga2", "trials": total, "seed": round_}
        data["search"]["options"] = {"population_size": 8}
        spec.write_text(yaml.safe_dump(data))
        url = postgres_server.create_database()  # type: ignore[attr-defined]
        args = ("worker", str(spec), "--storage", url)
        workers = [dse_popen(*args, stderr=subprocess.PIPE) for _ in range(2)]
        for w in workers:
            _, err = w.communicate(timeout=180)
            assert w.returncode == 0, err
        assert_total(url, f"two{round_}", total, over=overshoot(2, 8))  # generations of 8
        trials = optuna.load_study(study_name=f"two{round_}", storage=url).get_trials()
        states = Counter(t.state.name for t in trials)
        assert set(states) == {"COMPLETE"}, (round_, states)


def _complete(url: str, study: str) -> int:
    try:
        s = optuna.load_study(study_name=study, storage=open_storage(url))
    except KeyError:
        return 0
    return len(s.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))


def _wait_for_complete(url: str, study: str, n: int, procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + 180
    while _complete(url, study) < n:
        assert time.monotonic() < deadline, "the workers did not start"
        assert all(p.poll() is None for p in procs), "a worker ended before the outage"
        time.sleep(0.1)


def _own_server() -> PostgresServer:
    try:
        return PostgresServer()
    except RuntimeError:
        require_component("PostgreSQL server", "apt-get install postgresql")
        raise


def test_two_workers_ride_out_a_postgres_restart(tmp_path: Path, studies_dir: Path) -> None:
    """The server stopped for 5 s under two workers: both say so, wait, and finish the study
    (before: 271- and 3,632-line tracebacks, exit 1)."""
    with _own_server() as server:
        url = server.create_database()
        spec = slow_spec(tmp_path, study="outage", trials=80, sleep_s=0.15)
        env = {"DSE_STORAGE_RETRY_S": "120"}
        args = ("worker", str(spec), "--storage", url)
        workers = [dse_popen(*args, stderr=subprocess.PIPE, env=env) for _ in range(2)]
        _wait_for_complete(url, "outage", 4, workers)
        server.pause()
        time.sleep(5)
        server.resume()
        errs = []
        for w in workers:
            _, err = w.communicate(timeout=300)
            errs.append(err.decode())
            assert w.returncode == 0, err
        assert any("lost the connection to the storage" in e for e in errs), errs
        assert all("Traceback" not in e for e in errs), errs
        assert_total(url, "outage", 80, over=overshoot(2, 80 // 4))  # random: a quarter left


def test_a_worker_gives_up_on_a_dead_server_in_one_line(tmp_path: Path, studies_dir: Path) -> None:
    with _own_server() as server:
        url = server.create_database()
        spec = slow_spec(tmp_path, study="down", trials=200, sleep_s=0.1)
        worker = dse_popen(
            "worker", str(spec), "--storage", url, stderr=subprocess.PIPE,
            env={"DSE_STORAGE_RETRY_S": "2"},
        )  # fmt: skip
        _wait_for_complete(url, "down", 2, [worker])
        server.pause()
        _, err = worker.communicate(timeout=120)
        lines = err.decode().strip().splitlines()
        assert worker.returncode == 2, err
        assert "Traceback" not in err.decode()
        assert any("lost the connection to the storage" in line for line in lines), lines
        assert lines[-1].startswith("error: the storage stayed unreachable for 2 s"), lines
        server.resume()


def test_jobs_workers_get_the_storage_url_by_environment(
    tmp_path: Path, studies_dir: Path, postgres_url: str
) -> None:
    """``--jobs`` never puts the URL (a password in it) on the workers' command lines."""
    secret = postgres_url.replace("dse@", "dse:s3cret-pw@")
    spec = slow_spec(tmp_path, study="envurl", trials=30, sleep_s=0.05)
    run = dse_popen("run", str(spec), "--jobs", "2", "--storage", secret, stderr=subprocess.PIPE)
    seen: list[str] = []
    while run.poll() is None:
        for proc in Path("/proc").iterdir():
            with contextlib.suppress(OSError):
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                if " worker " in cmdline and "--parent" in cmdline:
                    seen.append(cmdline)
        time.sleep(0.05)
    _, err = run.communicate()
    assert run.returncode == 0, err
    assert seen, "no worker process was seen"
    assert not [c for c in seen if "s3cret-pw" in c or "postgresql" in c]
    assert_total(postgres_url, "envurl", 30, over=overshoot(2, -(-30 // 4)))
