"""Many workers on one study: ``dse run --jobs N`` on this machine, ``dse worker`` on any host.

Every worker runs the same loop (``runner.run_study``), which keeps the study-wide total exact
and takes over trials of dead workers. The first worker to create a study stores its resolved
spec in the study; later workers must bring the same spec, so nobody mixes two studies' samples.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import optuna
import typer

from dse.errors import DseError, SpecMismatchError
from dse.records import LOCK_FILE, META_KEY, _plain, write_lock

#: Keys that may differ between workers of one study: how each reaches the storage, and the
#: total each is asked to reach (raising it extends the study).
VOLATILE_KEYS = ("storage", "search.trials", "dse_version", "description")
#: Keys that describe reporting, not the problem: a hypervolume threshold may be set later.
VOLATILE_SUFFIXES = (".threshold",)
#: How long a joining worker waits for the creator to store its spec.
SPEC_WAIT_S = 10.0


def _flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, dict) and obj:
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    if isinstance(obj, list) and obj:
        out = {}
        for i, v in enumerate(obj):
            out.update(_flatten(v, f"{prefix}{i}."))
        return out
    return {prefix[:-1]: obj}


def _comparable(lock: dict[str, Any]) -> dict[str, Any]:
    flat = _flatten(json.loads(json.dumps(_plain(lock))))
    return {
        k: v
        for k, v in flat.items()
        if k not in VOLATILE_KEYS and not k.endswith(VOLATILE_SUFFIXES)
    }


def spec_differences(stored: dict[str, Any], mine: dict[str, Any]) -> list[str]:
    """Dotted keys whose values differ between two resolved specs. A key only one side has
    comes from a newer schema field (filled with its default), not from the user."""
    a, b = _comparable(stored), _comparable(mine)
    return sorted(k for k in a.keys() & b.keys() if a[k] != b[k])


def check_spec(study: optuna.Study, lock: dict[str, Any], *, created: bool) -> None:
    """Store the resolved spec in a study this worker created; otherwise refuse a different one.

    A joiner may arrive between the creator's two writes (study, then spec), so it waits a
    little for the spec; a study that already has trials predates this check and adopts it.
    """
    plain = json.loads(json.dumps(_plain(lock)))
    if created:
        study.set_user_attr(META_KEY, plain)
        return
    deadline = time.monotonic() + SPEC_WAIT_S
    stored = study.user_attrs.get(META_KEY)
    while stored is None:
        if study.get_trials(deepcopy=False) or time.monotonic() > deadline:
            study.set_user_attr(META_KEY, plain)
        else:
            time.sleep(0.1)
        stored = study.user_attrs.get(META_KEY)
    diff = spec_differences(stored, plain)
    if diff:
        shown = ", ".join(diff[:8]) + (f" (and {len(diff) - 8} more)" if len(diff) > 8 else "")
        raise SpecMismatchError(
            f"study {study.study_name!r} was created with a different spec; differing keys: "
            f"{shown} (use the study's own spec, or give this one another 'study:' name)"
        )


def _write_lock_atomic(directory: Path, lock: dict[str, Any]) -> None:
    """Several local workers write the same lock file; readers never see half of one."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".lock-", suffix=".yaml")
    os.close(fd)
    write_lock(Path(tmp), lock)
    os.replace(tmp, directory / LOCK_FILE)


def _parent_gone(parent: int | None) -> Callable[[], bool] | None:
    if parent is None:
        return None
    return lambda: os.getppid() != parent


def worker_command(
    spec: Annotated[Path, typer.Argument(help="Study spec (YAML)", show_default=False)],
    storage: Annotated[
        str | None,
        typer.Option(help="Optuna storage URL shared by all workers, e.g. postgresql://..."),
    ] = None,
    trials: Annotated[
        int | None, typer.Option(help="Study-wide total of finished trials", min=1)
    ] = None,
    seed_offset: Annotated[
        int | None,
        typer.Option(help="Added to the spec's seed (default: random, so workers differ)"),
    ] = None,
    heartbeat_s: Annotated[
        int, typer.Option(help="RDB heartbeat interval while a trial runs", min=1)
    ] = 10,
    grace_s: Annotated[
        int, typer.Option(help="Silence after which another worker takes a trial over", min=1)
    ] = 60,
    records: Annotated[
        bool, typer.Option(help="Write trials/pareto records under studies/ when done")
    ] = False,
    parent: Annotated[int | None, typer.Option(hidden=True)] = None,
) -> None:
    """Join the spec's study (creating it if needed) and run trials until the study-wide
    total is reached; run one per core, on as many hosts as share the storage."""
    from dse import api
    from dse.records import write_records
    from dse.runner import run_study
    from dse.storage import storage_url, study_dir

    model = api.load(spec)
    name = model.spec.study
    url = storage_url(name, storage or model.spec.storage)
    lock = api.lock_dict(model, url)
    directory = study_dir(name, create=True)
    offset = seed_offset if seed_offset is not None else int.from_bytes(os.urandom(3), "big")
    target = trials if trials is not None else model.spec.search.trials
    study = run_study(
        model,
        storage_url=url,
        trials=target,
        spec_lock=lock,
        seed_offset=offset,
        heartbeat_s=heartbeat_s,
        grace_s=grace_s,
        should_stop=_parent_gone(parent),
        on_start=lambda _: _write_lock_atomic(directory, lock),
    )
    if records:
        write_records(directory, study, objectives=model.objective_names, maximize=model.maximize)
    if parent is None:
        from dse.recovery import finished_count

        typer.echo(f"worker done: study {name!r} holds {finished_count(study)}/{target} trials")


def run_jobs(
    spec: Path,
    *,
    jobs: int,
    trials: int | None = None,
    storage: str | None = None,
    on_progress: Callable[[Any], None] | None = None,
) -> Any:
    """``dse run --jobs N``: N ``dse worker`` processes on this machine, one study, then the
    records. Workers stop by themselves if this process dies."""
    from dse import api
    from dse.records import write_records
    from dse.recovery import FINISHED, study_load
    from dse.runner import FrontTracker, Progress
    from dse.storage import open_storage, storage_url, study_dir

    model = api.load(spec)
    name = model.spec.study
    directory = study_dir(name, create=True)
    url = storage_url(name, storage or model.spec.storage)
    target = trials if trials is not None else model.spec.search.trials
    logs = [tempfile.TemporaryFile() for _ in range(jobs)]
    cmd = [sys.executable, "-m", "dse.cli", "worker", str(spec), "--storage", url]
    cmd += ["--trials", str(target), "--parent", str(os.getpid())]
    procs = [
        subprocess.Popen(
            [*cmd, "--seed-offset", str(k)], stdout=subprocess.DEVNULL, stderr=logs[k]
        )
        for k in range(jobs)
    ]
    study: optuna.Study | None = None
    try:
        while any(p.poll() is None for p in procs):
            time.sleep(0.5)
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
                Progress(
                    finished, target, len(tracker.points), tracker.front_size(), tracker.failed
                )
            )
    except BaseException:
        for p in procs:
            p.send_signal(signal.SIGINT)  # each gives its trial back, then exits
        for p in procs:
            p.wait()
        raise
    failed = [(k, p.returncode) for k, p in enumerate(procs) if p.returncode != 0]
    study = optuna.load_study(study_name=name, storage=open_storage(url))
    finished, _ = study_load(study)
    if failed and finished < target:
        k, rc = failed[0]
        logs[k].seek(0)
        tail = logs[k].read().decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise DseError(f"worker {k} exited with code {rc}: {tail[0]}")
    df, front = write_records(
        directory, study, objectives=model.objective_names, maximize=model.maximize
    )
    return api.RunResult(study=study, directory=directory, trials=df, front=front)
