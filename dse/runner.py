"""The Optuna glue: samplers, distributions, and the ask/tell loop that runs a study.

One trial = ask the sampler, evaluate the design with the same code path as ``dse evaluate``,
store every metric as a user attribute, set constraints with ``trial.set_constraint``, tell.
An evaluator that raises or returns NaN/inf fails its trial (reason recorded); the study goes on.
"""

from __future__ import annotations

import inspect
import itertools
import os
import random
import socket
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.exceptions import DuplicatedStudyError, UpdateFinishedTrialError
from optuna.storages._heartbeat import get_heartbeat_thread, is_heartbeat_enabled
from optuna.trial import FrozenTrial, TrialState

from dse.errors import SpecError
from dse.pareto import nondominated_mask
from dse.records import FAIL_ATTR, FEASIBLE_ATTR, STALE_ATTR, WORKER_ATTR, is_feasible
from dse.spec import CategoricalParam, FloatParam, IntParam, ParamSpec, SearchSpec
from dse.storage import HEARTBEAT_S, open_storage, set_trial_user_attrs
from dse.study_model import EvaluationError, StudyModel

FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
#: The kernel's start time of the worker process, to tell a reused pid from the dead owner.
WORKER_START_ATTR = "dse.worker_start"
#: A RUNNING trial no worker tagged this long after it started lost its worker in between.
ORPHAN_GRACE_S = 10.0
#: How often a worker re-checks a study whose last trials run elsewhere.
POLL_S = 0.2


def distribution(p: ParamSpec) -> BaseDistribution:
    if isinstance(p, FloatParam):
        return FloatDistribution(p.low, p.high, step=p.step, log=p.log)
    if isinstance(p, IntParam):
        return IntDistribution(p.low, p.high, step=p.step, log=p.log)
    return CategoricalDistribution(p.choices)


def grid_values(p: ParamSpec) -> list[Any] | None:
    """The grid of a discrete parameter; None for a continuous float."""
    if isinstance(p, CategoricalParam):
        return list(p.choices)
    if isinstance(p, IntParam):
        return list(range(p.low, p.high + 1, p.step))
    if p.step is None:
        return None
    n = int(np.floor((p.high - p.low) / p.step + 1e-9))
    return [float(p.low + i * p.step) for i in range(n + 1)]


def _sampler_classes() -> dict[str, Callable[..., optuna.samplers.BaseSampler]]:
    return {
        "nsga2": optuna.samplers.NSGAIISampler,
        "nsga3": optuna.samplers.NSGAIIISampler,
        "tpe": optuna.samplers.TPESampler,
        "random": optuna.samplers.RandomSampler,
        "grid": optuna.samplers.GridSampler,
        "gp": optuna.samplers.GPSampler,
    }


def make_sampler(
    model: StudyModel, search: SearchSpec | None = None
) -> optuna.samplers.BaseSampler:
    """Build the named sampler; the seed is always explicit (Optuna 5 changed the defaults)."""
    search = search or model.spec.search
    loaded = model.loaded
    cls = _sampler_classes()[search.sampler]
    valid = [
        n
        for n in inspect.signature(cls).parameters
        if n not in ("seed", "search_space", "constraints_func")
    ]
    bad = [k for k in search.options if k not in valid]
    if bad:
        raise SpecError(
            [
                loaded.problem(
                    ("search", "options", k),
                    f"unknown option {k!r} for sampler {search.sampler!r} "
                    f"(valid options: {', '.join(valid)})",
                )
                for k in bad
            ]
        )
    kwargs: dict[str, Any] = dict(search.options)
    if search.sampler == "grid":
        cont = [n for n, p in model.spec.space.items() if grid_values(p) is None]
        if cont:
            raise SpecError(
                [
                    loaded.problem(
                        ("space", n), "the grid sampler needs a 'step' for float parameters"
                    )
                    for n in cont
                ]
            )
        # Grid points are enqueued by the runner (see enqueue_grid); Optuna's GridSampler
        # calls study.stop(), which only works inside study.optimize, not with ask/tell.
        cls = optuna.samplers.RandomSampler
    if search.sampler == "gp":
        try:
            import scipy  # noqa: F401
            import torch  # noqa: F401
        except ImportError:
            raise SpecError(
                [
                    loaded.problem(
                        ("search", "sampler"),
                        "sampler 'gp' needs torch and scipy: "
                        "pip install 'litegpu-dse[gp]' (or choose nsga2, nsga3, tpe, "
                        "random, grid)",
                    )
                ]
            ) from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return cls(seed=search.seed, **kwargs)
    except (TypeError, ValueError) as exc:
        raise SpecError([loaded.problem(("search", "options"), str(exc))]) from None


def grid_points(model: StudyModel) -> list[dict[str, Any]]:
    """Every point of a discrete space, in a seeded shuffled order (as Optuna's GridSampler)."""
    names = list(model.spec.space)
    axes = [grid_values(model.spec.space[n]) or [] for n in names]
    points = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*axes)]
    order = np.random.default_rng(model.spec.search.seed).permutation(len(points))
    return [points[i] for i in order]


def enqueue_grid(model: StudyModel, study: optuna.Study, target: int) -> int:
    """Queue the grid points not yet tried, up to ``target`` trials; return the grid size."""
    points = grid_points(model)
    seen = {
        tuple(sorted(t.params.items()))
        for t in study.get_trials(deepcopy=False)
        if not t.user_attrs.get(STALE_ATTR)
    }
    for p in points[:target]:
        if tuple(sorted(p.items())) not in seen:
            study.enqueue_trial(p)
    return len(points)


def enqueue_warm_start(model: StudyModel, study: optuna.Study) -> None:
    """Seed a new study's first population from a coarse vectorized sweep (dse.sweep)."""
    from dse.sweep import warm_start_designs

    search = model.spec.search
    k = int(search.options.get("population_size", 50))
    for p in warm_start_designs(model, samples=search.warm_start, k=k, seed=search.seed):
        study.enqueue_trial(p, skip_if_exists=True)


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _proc_start(pid: int) -> str | None:
    """Start time of a process in clock ticks since boot (Linux ``/proc``), else None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def _owner_tags() -> dict[str, Any]:
    tags: dict[str, Any] = {WORKER_ATTR: worker_id()}
    start = _proc_start(os.getpid())
    if start is not None:
        tags[WORKER_START_ATTR] = start
    return tags


def _owner_dead(owner: str, started: Any, host: str) -> bool:
    owner_host, _, pid_text = owner.rpartition(":")
    if owner_host != host or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return True  # one worker per process: this process has no trial in flight right now
    if not _pid_alive(pid):
        return True
    now_start = _proc_start(pid)
    return started is not None and now_start is not None and str(started) != now_start


def _stale_reason(
    t: FrozenTrial, *, host: str, heartbeat_stale: set[int], now: datetime
) -> str | None:
    """Why a RUNNING trial has no live worker any more, or None while it may still have one."""
    owner = str(t.user_attrs.get(WORKER_ATTR, ""))
    if t._trial_id in heartbeat_stale:
        return f"worker {owner or '?'} stopped sending heartbeats"
    if not owner:
        age = (now - t.datetime_start).total_seconds() if t.datetime_start else 0.0
        return "its worker died before claiming it" if age > ORPHAN_GRACE_S else None
    if _owner_dead(owner, t.user_attrs.get(WORKER_START_ATTR), host):
        return f"worker {owner} died"
    return None


def retire_trial(study: optuna.Study, trial_id: int, reason: str) -> bool:
    """Fail a trial so it never counts toward the total; False if another worker finished or
    retired it first (the state change is the arbiter, so exactly one retirer wins)."""
    storage = study._storage
    try:
        storage.set_trial_user_attr(trial_id, STALE_ATTR, True)
        storage.set_trial_user_attr(trial_id, FAIL_ATTR, reason)
        return bool(storage.set_trial_state_values(trial_id, TrialState.FAIL))
    except UpdateFinishedTrialError:
        return False


def recover_stale_trials(study: optuna.Study) -> int:
    """Fail and re-queue trials whose worker is gone.

    The journal storage has no heartbeat, so a ``kill -9`` leaves RUNNING trials behind: a
    trial whose owner pid is dead on this host is stale. RDB storages also have Optuna's
    heartbeat, which covers workers on other hosts. Parameters are enqueued again, so the
    study loses no sample, and stale trials never count, so none counts twice.
    """
    storage = study._storage
    heartbeat_stale: set[int] = set()
    if is_heartbeat_enabled(storage):
        heartbeat_stale = set(storage._get_stale_trial_ids(study._study_id))  # type: ignore[attr-defined]
    host = socket.gethostname()
    now = datetime.now()
    n = 0
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        reason = _stale_reason(t, host=host, heartbeat_stale=heartbeat_stale, now=now)
        if reason is None:
            continue
        if retire_trial(study, t._trial_id, f"{reason}; parameters re-queued"):
            if t.params:
                study.enqueue_trial(t.params, skip_if_exists=False)
            n += 1
    return n


def counts_toward_total(t: FrozenTrial) -> bool:
    """Finished or running, and not a stale (retired) trial."""
    if t.state == TrialState.WAITING:
        return False
    return not (t.state == TrialState.FAIL and t.user_attrs.get(STALE_ATTR))


def study_load(study: optuna.Study) -> tuple[int, int]:
    """(finished, running) trials that count toward the study's total."""
    finished = running = 0
    for t in study.get_trials(deepcopy=False):
        if not counts_toward_total(t):
            continue
        if t.state == TrialState.RUNNING:
            running += 1
        else:
            finished += 1
    return finished, running


def finished_count(study: optuna.Study) -> int:
    return study_load(study)[0]


def claim_trial(study: optuna.Study) -> int:
    """A RUNNING trial owned by this worker: the next queued one, or a new one created with the
    owner already in it (one write, so a crash cannot leave an ownerless new trial)."""
    study._thread_local.cached_all_trials = None
    tags = _owner_tags()
    trial_id = study._pop_waiting_trial_id()
    if trial_id is not None:
        set_trial_user_attrs(study._storage, trial_id, tags)
        return trial_id
    template = FrozenTrial(
        number=0,
        state=TrialState.RUNNING,
        value=None,
        datetime_start=datetime.now(),
        datetime_complete=None,
        params={},
        distributions={},
        user_attrs=tags,
        system_attrs={},
        intermediate_values={},
        trial_id=0,
    )
    return study._storage.create_new_trial(study._study_id, template_trial=template)


def give_back_trial(study: optuna.Study, trial_id: int, reason: str) -> None:
    """Retire a claimed trial before evaluating it, re-queueing its parameters if it had some."""
    fixed = study._storage.get_trial(trial_id).system_attrs.get("fixed_params")
    if retire_trial(study, trial_id, reason) and fixed:
        study.enqueue_trial(fixed, skip_if_exists=False)


@dataclass
class Progress:
    """What the progress bar shows after each trial."""

    finished: int
    target: int
    feasible: int
    front_size: int
    failed: int


class FrontTracker:
    """Feasible objective vectors seen so far, for the live front size."""

    def __init__(self, maximize: list[bool]) -> None:
        self.maximize = maximize
        self.points: list[list[float]] = []
        self.failed = 0

    def add_trial(self, t: optuna.trial.FrozenTrial) -> None:
        if t.state == TrialState.FAIL and not t.user_attrs.get(STALE_ATTR):
            self.failed += 1
        if t.state == TrialState.COMPLETE and is_feasible(t) and t.values is not None:
            self.points.append(list(t.values))

    def front_size(self) -> int:
        if not self.points:
            return 0
        return int(nondominated_mask(np.array(self.points), self.maximize).sum())


def create_or_load(
    model: StudyModel,
    storage_url: str,
    *,
    spec_lock: dict[str, Any] | None = None,
    seed_offset: int = 0,
    heartbeat_s: int | None = HEARTBEAT_S,
    grace_s: int | None = None,
) -> optuna.Study:
    """Create the study or join it. Creation is race-free (the storage lets exactly one of
    many starting workers create it); the creator stores ``spec_lock`` in the study and
    everyone else must match it (``dse.workers.check_spec``)."""
    from dse.workers import check_spec

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = open_storage(storage_url, heartbeat_s=heartbeat_s, grace_s=grace_s)
    directions = [
        optuna.study.StudyDirection.MAXIMIZE
        if o.direction == "maximize"
        else optuna.study.StudyDirection.MINIMIZE
        for o in model.spec.objectives
    ]
    search = model.spec.search
    if seed_offset and search.seed is not None:
        # Concurrent workers with one seed would propose the same designs.
        search = search.model_copy(update={"seed": search.seed + seed_offset})
    storage = optuna.storages.get_storage(storage)
    try:
        storage.create_new_study(directions, model.spec.study)
        created = True
    except DuplicatedStudyError:
        created = False
    study = optuna.load_study(
        study_name=model.spec.study, storage=storage, sampler=make_sampler(model, search)
    )
    if spec_lock is not None:
        check_spec(study, spec_lock, created=created)
    if study.metric_names is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(model.objective_names)
    return study


def run_trial(
    model: StudyModel,
    study: optuna.Study,
    dists: dict[str, BaseDistribution],
    *,
    trial_id: int | None = None,
) -> optuna.trial.FrozenTrial | None:
    """Evaluate, record and tell one claimed trial (claiming one if not given); return it as
    stored, or None when another worker retired it meanwhile (its heartbeat was late)."""
    if trial_id is None:
        trial_id = claim_trial(study)
    storage = study._storage
    try:
        with get_heartbeat_thread(trial_id, storage):
            trial = optuna.Trial(study, trial_id)
            for name, dist in dists.items():
                trial._suggest(name, dist)
            try:
                metrics = {k: float(v) for k, v in model.evaluate(trial.params).items()}
                violations = [float(v) for v in model.violations(trial.params, metrics)]
                values = [metrics[m] for m in model.objective_names]
            except EvaluationError as exc:
                storage.set_trial_user_attr(trial_id, FAIL_ATTR, str(exc))
                return study.tell(trial, state=TrialState.FAIL)
            # Feasibility as a user attr too, so optuna-dashboard shows it on every trial page.
            feasible = all(v <= 0.0 for v in violations)
            set_trial_user_attrs(storage, trial_id, {**metrics, FEASIBLE_ATTR: feasible})
            for expr, v in zip(model.constraints, violations, strict=True):
                trial.set_constraint(expr.source, v)
            return study.tell(trial, values)
    except (UpdateFinishedTrialError, ValueError):
        if storage.get_trial(trial_id).state.is_finished():
            return None
        raise


def run_study(
    model: StudyModel,
    *,
    storage_url: str,
    trials: int,
    on_progress: Callable[[Progress], None] | None = None,
    timeout_s: float | None = None,
    spec_lock: dict[str, Any] | None = None,
    seed_offset: int = 0,
    heartbeat_s: int | None = HEARTBEAT_S,
    grace_s: int | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> optuna.Study:
    """Run until the study holds ``trials`` finished trials in total (resuming, not adding).

    Safe with any number of workers on one study: each claims a trial, then counts the
    finished and running trials (its own included) and gives the claim back if that exceeds
    the total, so concurrent workers never overshoot. When the last trials run elsewhere it
    waits for them, taking them over if their worker dies.
    """
    study = create_or_load(
        model,
        storage_url,
        spec_lock=spec_lock,
        seed_offset=seed_offset,
        heartbeat_s=heartbeat_s,
        grace_s=grace_s,
    )
    recover_stale_trials(study)
    dists = {n: distribution(p) for n, p in model.spec.space.items()}
    tracker = FrontTracker(model.maximize)
    for t in study.get_trials(deepcopy=False, states=FINISHED):
        tracker.add_trial(t)
    if model.spec.search.sampler == "grid":
        trials = min(trials, enqueue_grid(model, study, trials))
    elif model.spec.search.warm_start and not study.get_trials(deepcopy=False):
        enqueue_warm_start(model, study)
    start = time.monotonic()
    jitter = random.Random()
    while True:
        if timeout_s is not None and time.monotonic() - start > timeout_s:
            break
        if should_stop is not None and should_stop():
            break
        recover_stale_trials(study)
        finished, running = study_load(study)
        if finished >= trials:
            break
        if finished + running >= trials:
            time.sleep(POLL_S)  # the last trials run elsewhere
            continue
        trial_id = claim_trial(study)
        finished, running = study_load(study)
        if finished + running > trials:
            give_back_trial(
                study, trial_id, f"surplus: {trials} trials were already finished or running"
            )
            time.sleep(jitter.uniform(0.0, POLL_S))
            continue
        try:
            t = run_trial(model, study, dists, trial_id=trial_id)
        except BaseException:
            give_back_trial(study, trial_id, "interrupted; parameters re-queued")
            raise
        if t is None:
            continue
        tracker.add_trial(t)
        if on_progress:
            done = finished_count(study)
            on_progress(
                Progress(done, trials, len(tracker.points), tracker.front_size(), tracker.failed)
            )
    return study
