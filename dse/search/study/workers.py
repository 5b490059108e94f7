"""The one run path, and many workers on one study: ``dse run --jobs N`` on this machine,
``dse worker`` on any host.

``run_worker`` is what every entry point runs (``dse run`` and ``api.run`` in-process, each
``dse worker`` process): storage resolution, the atomic lock, the same loop
(``runner.run_study``), which runs to the study-wide total (concurrent workers may pass it by
at most (workers - 1) x batch size) and takes over trials of dead workers;
``dse.search.spec_lock`` keeps one spec on one storage per study.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna

from dse.errors import DseError
from dse.model.load import lock_dict
from dse.model.study_model import StudyModel
from dse.search.spec_lock import check_binding, write_lock_atomic
from dse.search.storage import HEARTBEAT_S, open_storage, storage_url, study_dir
from dse.search.study.recovery import FINISHED, finished_count, study_load, worker_id
from dse.search.study.runner import FrontTracker, Progress, run_study

#: The storage URL ``dse run --jobs`` hands its workers (the environment, not argv).
JOBS_STORAGE_ENV = "DSE_JOBS_STORAGE"


def study_url(model: StudyModel, storage: str | None = None) -> str:
    """The storage URL of the model's study: ``storage``, else the spec's, else its journal
    file; the one resolution every run path uses (``dse run``, ``--jobs``, ``dse worker``),
    refused when the study's folder is bound to another storage."""
    url = storage_url(
        model.spec.study,
        storage or model.spec.storage,
        journal_outside_studies=model.spec.journal_outside_studies,
    )
    check_binding(model.spec.study, url)
    return url


def finished_before(model: StudyModel, storage: str | None) -> int:
    """Finished trials of the model's study now; 0 when it does not exist yet."""
    name = model.spec.study
    url = study_url(model, storage)
    try:
        return finished_count(optuna.load_study(study_name=name, storage=open_storage(url)))
    except KeyError:
        return 0


class WorkerProgress:
    """A worker's progress on stderr (``dse worker``): trials done by this worker and by the
    study, the study's rate and time to go, at most every ``every_s`` (a log shows it, and
    two workers no longer print nothing for ten minutes)."""

    def __init__(self, *, every_s: float = 5.0, emit: Callable[[str], None] | None = None) -> None:
        self.every_s = every_s
        self.emit = emit
        self.name = worker_id()
        self.before = 0
        self.t0 = time.monotonic()
        self.last = -float("inf")
        self.latest: Progress | None = None

    def begin(self, before: int, target: int) -> None:
        self.before, self.t0 = before, time.monotonic()
        self._print(f"worker {self.name}: joined, the study holds {before:,}/{target:,} trials")

    def __call__(self, p: Progress) -> None:
        self.latest = p
        now = time.monotonic()
        if now - self.last >= self.every_s:
            self.last = now
            self._print(self.line(p, now - self.t0))

    def end(self) -> None:
        if self.latest is not None:
            self._print(self.line(self.latest, time.monotonic() - self.t0))

    def line(self, p: Progress, elapsed_s: float) -> str:
        line = (
            f"worker {self.name}: {p.mine:,} trials by this worker; study {p.finished:,}/"
            f"{p.target:,} ({p.feasible:,} feasible, front {p.front_size:,}, {p.failed:,} failed)"
        )
        gained = p.finished - self.before
        if gained > 0 and elapsed_s > 0:
            rate = gained / elapsed_s
            line += f"; {rate:.1f} trials/s"
            if p.finished < p.target:
                line += f", about {(p.target - p.finished) / rate:.0f} s to go"
        return line

    def _print(self, text: str) -> None:
        if self.emit is not None:
            self.emit(text)
        else:
            print(text, file=sys.stderr, flush=True)


def _parent_gone(parent: int | None) -> Callable[[], bool] | None:
    if parent is None:
        return None
    return lambda: os.getppid() != parent


@dataclass
class WorkerRun:
    """What one run of the loop did: the study, the study-wide total it ran to, and the
    finished trials the study held when this run joined it."""

    study: optuna.Study
    target: int
    before: int


def run_worker(
    model: StudyModel,
    *,
    storage: str | None = None,
    trials: int | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_begin: Callable[[int, int], None] | None = None,
    seed_offset: int | None = None,
    heartbeat_s: int | None = HEARTBEAT_S,
    grace_s: int | None = None,
    parent: int | None = None,
    should_stop: Callable[[], bool] | None = None,
    timeout_s: float | None = None,
) -> WorkerRun:
    """The one run path (``dse run``, ``api.run``, each ``dse worker`` of ``--jobs``): resolve
    the storage, join or create the spec's study, write ``spec.lock.yaml`` atomically once the
    study accepted the spec, and run trials until the study-wide total (``trials``, else the
    spec's) is reached. ``on_begin(finished_before, total)`` runs right after the lock."""
    name = model.spec.study
    if storage is None and parent is not None:
        storage = os.environ.get(JOBS_STORAGE_ENV) or None  # from run_jobs, never in argv
    url = study_url(model, storage)
    lock = lock_dict(model, url)
    directory = study_dir(name, create=True)
    target = trials if trials is not None else model.spec.search.trials
    before = [0]
    stops = [f for f in (should_stop, _parent_gone(parent)) if f is not None]

    def started(study: optuna.Study) -> None:
        write_lock_atomic(directory, lock)
        before[0] = finished_count(study)
        if on_begin is not None:
            on_begin(before[0], target)

    study = run_study(
        model,
        storage_url=url,
        trials=target,
        on_progress=on_progress,
        timeout_s=timeout_s,
        spec_lock=lock,
        seed_offset=seed_offset,
        heartbeat_s=heartbeat_s,
        grace_s=grace_s,
        should_stop=(lambda: any(f() for f in stops)) if stops else None,
        on_start=started,
    )
    return WorkerRun(study, target, before[0])


def _interrupt(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGINT to every worker still running: each gives its trials back, then exits (a worker
    that also had the terminal's Ctrl-C ignores the second one: ``dse worker --parent``)."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)


def run_jobs(
    spec: Path,
    model: StudyModel,
    *,
    jobs: int,
    trials: int | None = None,
    storage: str | None = None,
    on_progress: Callable[[Any], None] | None = None,
    robust: tuple[int, str] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> optuna.Study:
    """``dse run --jobs N``: N ``dse worker`` processes on this machine on ``model``'s study
    (loaded from ``spec``, which the workers load again, with ``robust`` when given; a spec's
    own ``robust:`` needs nothing). Workers stop by themselves if this process dies; once
    ``should_stop()`` (Ctrl-C) each is interrupted, gives its trials back and exits, and the
    study is returned as it stands."""
    name = model.spec.study
    study_dir(name, create=True)
    url = study_url(model, storage)
    target = trials if trials is not None else model.spec.search.trials
    logs = [tempfile.TemporaryFile() for _ in range(jobs)]
    # The URL goes by environment: on a command line anyone on the host could read a
    # password in it (ps); the workers (started with --parent) read it there.
    env = {**os.environ, JOBS_STORAGE_ENV: url}
    cmd = [sys.executable, "-m", "dse.cli", "worker", str(spec)]
    cmd += ["--trials", str(target), "--parent", str(os.getpid())]
    if robust is not None:
        cmd += ["--robust", str(robust[0]), "--statistic", robust[1]]
    # No --seed-offset: each worker offsets the seed by the number of its first trial, unique
    # across every worker and run on the study (runner.run_study).
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=logs[k], env=env)
        for k in range(jobs)
    ]
    study: optuna.Study | None = None
    stopping = False
    try:
        while any(p.poll() is None for p in procs):
            time.sleep(0.5)
            if not stopping and should_stop is not None and should_stop():
                stopping = True  # Ctrl-C to this process alone (kill -INT) reaches them too
                _interrupt(procs)
            if on_progress is None:
                continue
            if study is None:
                try:
                    study = optuna.load_study(study_name=name, storage=open_storage(url))
                except KeyError:
                    continue
            tracker = FrontTracker(model.maximize)
            for t in study.get_trials(deepcopy=False, states=FINISHED):
                tracker.add_trial(t)
            finished, _ = study_load(study)
            on_progress(
                Progress(finished, target, tracker.feasible, tracker.front_size(), tracker.failed)
            )
    except BaseException:
        _interrupt(procs)
        for p in procs:
            p.wait()
        raise
    if stopping or (should_stop is not None and should_stop()):
        return optuna.load_study(study_name=name, storage=open_storage(url))
    failed = [(k, p.returncode) for k, p in enumerate(procs) if p.returncode != 0]
    study = optuna.load_study(study_name=name, storage=open_storage(url))
    finished, _ = study_load(study)
    refused = [(k, rc) for k, rc in failed if rc == 2]  # bad input (another spec): always said
    if refused or (failed and finished < target):
        k, rc = (refused or failed)[0]
        logs[k].seek(0)
        tail = logs[k].read().decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise DseError(f"worker {k} exited with code {rc}: {tail[0].removeprefix('error: ')}")
    return study
