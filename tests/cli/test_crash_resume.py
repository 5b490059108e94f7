"""kill -9 at random moments, then resume: the requested total (concurrent workers within the
documented overshoot), nothing duplicated, nothing lost.

Real ``dse run`` / ``dse worker`` processes on a real journal file and a real PostgreSQL
server, with a deliberately slow evaluator so kills land mid-trial as often as between trials.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import optuna
import yaml
from optuna.storages.journal._storage import JournalOperation

from dse.search.storage import open_storage
from dse.search.stored import STALE_ATTR
from tests.conftest import ROOT, run_dse

SLOW_MODULE = '''
import time


def slow(design):
    """Objectives depend on `a` only; `b` is a nuisance, so samples differ but fronts agree."""
    time.sleep({sleep_s})
    a = float(design["a"])
    return {{"f1": a, "f2": 3.0 - a}}
'''


def slow_spec(tmp_path: Path, *, study: str, trials: int, sleep_s: float = 0.03) -> Path:
    """A spec whose only objectives come from a sleeping custom evaluator."""
    (tmp_path / "slowmod.py").write_text(SLOW_MODULE.format(sleep_s=sleep_s))
    data = {
        "study": study,
        "fixed": {
            "gpu": "h100-sxm",
            "workload": {"model": "llama3-70b", "precision": "fp8"},
            "cluster_size": 8,
        },
        "space": {
            "a": {"type": "categorical", "choices": [0, 1, 2, 3]},
            "b": {"type": "int", "low": 0, "high": 99},
        },
        "evaluators": {"slow": "slowmod:slow"},
        "objectives": [
            {"metric": "slow.f1", "direction": "minimize"},
            {"metric": "slow.f2", "direction": "minimize"},
        ],
        "search": {"sampler": "random", "trials": trials, "seed": 0},
    }
    path = tmp_path / f"{study}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def dse_popen(
    *args: str, stderr: Any = subprocess.DEVNULL, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    exe = Path(sys.executable).parent / "dse"
    return subprocess.Popen(
        [str(exe), *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        start_new_session=True,  # its own process group: kill -9 takes its workers too
    )


def kill9(p: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def overshoot(workers: int, batch: int) -> int:
    """The most concurrent workers may pass a study's total by (docs/scale-out.md): each
    claims at most the trials the study lacked when it counted, so the others' batches in
    flight at that moment, ``(workers - 1) x batch``."""
    return (workers - 1) * batch


def assert_total(url: str, study: str, total: int, *, over: int = 0) -> None:
    """``total`` to ``total + over`` counted trials, all COMPLETE (a trial FAILED only as a
    dead worker's, retired and re-queued), unique numbers, nothing left RUNNING."""
    trials = optuna.load_study(study_name=study, storage=open_storage(url)).get_trials()
    states = [t.state for t in trials]
    assert optuna.trial.TrialState.RUNNING not in states
    numbers = [t.number for t in trials]
    assert len(numbers) == len(set(numbers))
    counted = [
        t
        for t in trials
        if t.state.is_finished()
        and not (t.state == optuna.trial.TrialState.FAIL and t.user_attrs.get(STALE_ATTR))
    ]
    got = [(t.number, t.state.name, t.user_attrs) for t in trials]
    assert total <= len(counted) <= total + over, got
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in counted)


def _has_trial(journal: Path) -> bool:
    op = f'"op_code":{int(JournalOperation.CREATE_TRIAL)},'
    return journal.exists() and op in journal.read_text(errors="replace")


def test_kill9_journal_10_of_10(tmp_path: Path, studies_dir: Path) -> None:
    """Ten studies at once (three with --jobs 2), each killed at a random moment after its
    first trial started, then all resumed."""
    seed = random.randrange(10**6)
    rng = random.Random(seed)
    total, n = 12, 10
    names = [f"crash{i}" for i in range(n)]
    specs = [slow_spec(tmp_path, study=name, trials=total) for name in names]
    jobs = [["--jobs", "2"] if i % 3 == 1 else [] for i in range(n)]
    journals = [studies_dir / name / "journal.log" for name in names]
    procs = [
        dse_popen("run", str(s), "--no-progress", *j) for s, j in zip(specs, jobs, strict=True)
    ]
    kill_at: dict[int, float] = {}
    start = time.monotonic()
    while len(kill_at) < n or any(t is not None for t in kill_at.values()):
        now = time.monotonic()
        for i in range(n):
            if i not in kill_at and (_has_trial(journals[i]) or now - start > 60):
                kill_at[i] = now + rng.uniform(0.0, 1.5)
            if kill_at.get(i) is not None and now >= kill_at[i]:  # type: ignore[operator]
                kill9(procs[i])
                kill_at[i] = None  # type: ignore[assignment]
        time.sleep(0.02)
    resumed = [
        subprocess.Popen(
            [str(Path(sys.executable).parent / "dse"), "run", str(s), "--no-progress", *j],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for s, j in zip(specs, jobs, strict=True)
    ]
    for i, p in enumerate(resumed):
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, (seed, i, err)
    for name, journal in zip(names, journals, strict=True):
        # Random sampling: a batch is at most a quarter of the trials left.
        assert_total(f"journal:{journal}", name, total, over=overshoot(2, -(-total // 4)))


def test_kill9_postgres_workers(tmp_path: Path, studies_dir: Path, postgres_url: str) -> None:
    seed = random.randrange(10**6)
    rng = random.Random(seed)
    total = 15
    for i in range(2):
        name = f"pgcrash{i}"
        spec = slow_spec(tmp_path, study=name, trials=total)
        args = ("worker", str(spec), "--storage", postgres_url)
        workers = [dse_popen(*args) for _ in range(3)]
        time.sleep(rng.uniform(0.3, 2.5))
        # One worker dies mid-study (the others take its trial over); then all of them.
        for w in workers if i % 2 else workers[:1]:
            kill9(w)
        for w in workers:
            w.wait(timeout=120)
        res = run_dse(*args)
        assert res.returncode == 0, (seed, i, res.stderr)
        assert_total(postgres_url, name, total, over=overshoot(3, -(-total // 4)))
