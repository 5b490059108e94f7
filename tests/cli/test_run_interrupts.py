"""Ctrl-C while `dse run` is inside an evaluator: the run stops with exit 130 and the one
"interrupted" line, no trial is failed by it, and the same command resumes.

With one process the trials in flight finish first (the first Ctrl-C asks for a stop, a second
aborts); with ``--jobs`` each worker is interrupted in its evaluator and gives its trials back
to the study, whether the terminal's Ctrl-C reached the whole process group or ``kill -INT``
the parent alone (which passes it on).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pandas as pd
import psutil
import pytest

from tests.conftest import run_dse
from tests.held_evaluator import HOLD_S, Held, held_spec, start_dse

INTERRUPTED = "interrupted; re-run the same command to resume"
#: The study's total: far more than a test runs, so only Ctrl-C ends the first run.
TARGET = 100_000


def _held_run(tmp_path: Path, name: str) -> Held:
    """A run whose third batch of trials (in a process) holds in the evaluator."""
    return held_spec(tmp_path, name=name, search={"trials": TARGET, "warm_start": 0})


def _resumes(held: Held, study: Path, *extra: str) -> None:
    """The same command, released, completes a few more trials than the study holds."""
    held.let_go()
    before = len(pd.read_csv(study / "trials.csv"))
    more = before + 5
    r = run_dse("run", str(held.spec), "--no-progress", "--trials", str(more), *extra)
    assert r.returncode == 0, r.stderr
    trials = pd.read_csv(study / "trials.csv")
    assert (trials["state"] == "COMPLETE").sum() >= more


def _stopped(proc, err: str) -> None:  # noqa: ANN001 - a Popen
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.splitlines()[-1] == INTERRUPTED and err.count("interrupted") == 1, err


def test_ctrl_c_in_the_evaluator_stops_a_run_after_the_trials_in_flight(
    tmp_path: Path, studies_dir: Path
) -> None:
    held = _held_run(tmp_path, "held1")
    proc = start_dse(["run", str(held.spec), "--no-progress"])
    assert held.wait_running(proc) == proc.pid
    proc.send_signal(signal.SIGINT)  # handled before the evaluator looks for the release
    held.let_go()
    _, err = proc.communicate(timeout=HOLD_S + 120)
    _stopped(proc, err)
    assert "stopping after the trial in flight" in err
    study = studies_dir / "held1"
    trials = pd.read_csv(study / "trials.csv")
    assert 0 < len(trials) < TARGET
    assert (trials["state"] == "COMPLETE").all(), trials["state"].value_counts()
    _resumes(held, study)


@pytest.mark.parametrize("whole_group", [True, False], ids=["terminal", "kill-parent"])
def test_ctrl_c_in_the_evaluator_stops_a_jobs_run_and_gives_its_trials_back(
    tmp_path: Path, studies_dir: Path, whole_group: bool
) -> None:
    held = _held_run(tmp_path, "heldjobs")
    proc = start_dse(["run", str(held.spec), "--no-progress", "--jobs", "2"], group=True)
    worker = held.wait_running(proc)  # a worker holds; never released before the rerun
    workers = psutil.Process(proc.pid).children(recursive=True)
    assert worker in {w.pid for w in workers}
    if whole_group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=HOLD_S + 120)
    _stopped(proc, err)
    gone, alive = psutil.wait_procs(workers, timeout=60)
    assert not alive, "a worker outlived the interrupted run"
    study = studies_dir / "heldjobs"
    trials = pd.read_csv(study / "trials.csv")
    assert 0 < len(trials) < TARGET
    failed = trials[trials["state"] == "FAIL"]
    assert len(failed) and failed["stale"].astype(bool).all(), failed  # given back, not failed
    _resumes(held, study, "--jobs", "2")
