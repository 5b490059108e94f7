"""The Optuna glue: samplers, distributions, and the ask/tell loop that runs a study.

One trial = ask the sampler, evaluate the design with the same code path as ``dse evaluate``,
store every metric as a user attribute, set constraints with ``trial.set_constraint``, tell.
An evaluator that raises or returns NaN/inf fails its trial (reason recorded); the study goes on.
"""

from __future__ import annotations

import inspect
import itertools
import os
import socket
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.trial import TrialState

from dse.errors import SpecError
from dse.pareto import nondominated_mask
from dse.records import FAIL_ATTR, STALE_ATTR, WORKER_ATTR, is_feasible
from dse.spec import CategoricalParam, FloatParam, IntParam, ParamSpec, SearchSpec
from dse.storage import open_storage
from dse.study_model import EvaluationError, StudyModel

FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


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


def recover_stale_trials(study: optuna.Study) -> int:
    """Fail and re-queue trials left RUNNING by a dead process on this host.

    The journal storage has no heartbeat, so a ``kill -9`` leaves RUNNING trials behind. Their
    parameters are enqueued again, so the study loses no sample and counts no trial twice.
    """
    host = socket.gethostname()
    n = 0
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        owner = str(t.user_attrs.get(WORKER_ATTR, ""))
        owner_host, _, pid = owner.rpartition(":")
        if owner_host != host or not pid.isdigit() or _pid_alive(int(pid)):
            continue
        study._storage.set_trial_user_attr(t._trial_id, STALE_ATTR, True)
        study._storage.set_trial_user_attr(
            t._trial_id, FAIL_ATTR, f"worker {owner} died; parameters re-queued"
        )
        study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
        study.enqueue_trial(t.params, skip_if_exists=False)
        n += 1
    return n


def finished_count(study: optuna.Study) -> int:
    return sum(
        1
        for t in study.get_trials(deepcopy=False, states=FINISHED)
        if not t.user_attrs.get(STALE_ATTR)
    )


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


def create_or_load(model: StudyModel, storage_url: str) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = open_storage(storage_url)
    study = optuna.create_study(
        storage=storage,
        study_name=model.spec.study,
        directions=[o.direction for o in model.spec.objectives],
        sampler=make_sampler(model),
        load_if_exists=True,
    )
    if study.metric_names is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(model.objective_names)
    return study


def run_trial(
    model: StudyModel, study: optuna.Study, dists: dict[str, BaseDistribution]
) -> optuna.trial.FrozenTrial:
    """Ask, evaluate, record and tell one trial; return it as stored."""
    trial = study.ask(fixed_distributions=dists)
    trial.set_user_attr(WORKER_ATTR, worker_id())
    try:
        metrics = {k: float(v) for k, v in model.evaluate(trial.params).items()}
        violations = [float(v) for v in model.violations(trial.params, metrics)]
        values = [metrics[m] for m in model.objective_names]
    except EvaluationError as exc:
        trial.set_user_attr(FAIL_ATTR, str(exc))
        return study.tell(trial, state=TrialState.FAIL)
    for k, v in metrics.items():
        trial.set_user_attr(k, v)
    for expr, v in zip(model.constraints, violations, strict=True):
        trial.set_constraint(expr.source, v)
    return study.tell(trial, values)


def run_study(
    model: StudyModel,
    *,
    storage_url: str,
    trials: int,
    on_progress: Callable[[Progress], None] | None = None,
    timeout_s: float | None = None,
) -> optuna.Study:
    """Run until the study holds ``trials`` finished trials in total (resuming, not adding)."""
    study = create_or_load(model, storage_url)
    recover_stale_trials(study)
    dists = {n: distribution(p) for n, p in model.spec.space.items()}
    tracker = FrontTracker(model.maximize)
    for t in study.get_trials(deepcopy=False, states=FINISHED):
        tracker.add_trial(t)
    if model.spec.search.sampler == "grid":
        trials = min(trials, enqueue_grid(model, study, trials))
    start = time.monotonic()
    done = finished_count(study)
    while done < trials:
        if timeout_s is not None and time.monotonic() - start > timeout_s:
            break
        tracker.add_trial(run_trial(model, study, dists))
        done = finished_count(study)
        if on_progress:
            on_progress(
                Progress(done, trials, len(tracker.points), tracker.front_size(), tracker.failed)
            )
    return study
