"""The Optuna glue: the ask/tell loop that runs a study (samplers in dse.search.samplers, trial
ownership and crash recovery in dse.search.study.recovery).

One trial = ask the sampler, evaluate the design with the same code path as ``dse evaluate``,
store every metric as a user attribute, set constraints with ``trial.set_constraint``, tell.
An evaluator that raises or returns NaN/inf fails its trial (reason recorded); the study goes on.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution,
)
from optuna.exceptions import DuplicatedStudyError
from optuna.trial import TrialState

from dse.model.guarded import trial_evaluator
from dse.model.outcome import Outcome
from dse.model.pareto import ParetoArchive
from dse.model.study_model import StudyModel
from dse.search.optuna_private import storage_of
from dse.search.samplers.factory import distribution, make_sampler
from dse.search.samplers.plugin import sampler_of
from dse.search.spec_lock import check_spec
from dse.search.storage import HEARTBEAT_S, open_storage
from dse.search.stored import STALE_ATTR, stored_outcome
from dse.search.study.batch import BatchPlanner, run_batch
from dse.search.study.recovery import (
    FINISHED,
    claim_trial,
    finished_count,
    give_back_trial,
    recover_stale_trials,
    study_load,
)
from dse.search.study.warm_start import enqueue_warm_start, warm_start_samples
from dse.spec.schema import SearchSpec

#: How often a worker re-checks a study whose last trials run elsewhere.
POLL_S = 0.2
#: How often a running worker looks for trials of dead workers (a dead worker's heartbeat
#: goes stale only after the grace period anyway; each look reads the running trials).
RECOVER_S = 2.0


@dataclass
class Progress:
    """What the progress bar shows after each trial."""

    finished: int
    target: int
    feasible: int
    front_size: int
    failed: int
    #: Trials this run (this worker) finished.
    mine: int = 0


class FrontTracker:
    """Feasible and failed counts of the finished trials, and their feasible front (an
    incremental :class:`~dse.model.pareto.ParetoArchive`), for the live progress line."""

    def __init__(self, maximize: list[bool]) -> None:
        self.archive = ParetoArchive(maximize)
        self.feasible = 0
        self.failed = 0

    def add_trial(self, t: optuna.trial.FrozenTrial) -> None:
        if t.state == TrialState.FAIL and not t.user_attrs.get(STALE_ATTR):
            self.failed += 1
        outcome = stored_outcome(t)
        if outcome is not None and outcome.feasible:
            self.feasible += 1
            self.archive.add([outcome.objectives])

    def front_size(self) -> int:
        return len(self.archive)


def create_or_load(
    model: StudyModel,
    storage_url: str,
    *,
    spec_lock: dict[str, Any] | None = None,
    seed_offset: int | None = 0,
    heartbeat_s: int | None = HEARTBEAT_S,
    grace_s: int | None = None,
) -> optuna.Study:
    """Create the study or join it. Creation is race-free (the storage lets exactly one of
    many starting workers create it); the creator stores ``spec_lock`` in the study and
    everyone else must match it (``dse.search.spec_lock.check_spec``)."""
    storage = open_storage(storage_url, heartbeat_s=heartbeat_s, grace_s=grace_s)
    directions = [
        optuna.study.StudyDirection.MAXIMIZE
        if o.direction == "maximize"
        else optuna.study.StudyDirection.MINIMIZE
        for o in model.spec.objectives
    ]
    search = _offset_seed(model, seed_offset or 0)
    storage = optuna.storages.get_storage(storage)
    try:  # an existing study is looked up, not created again (a journal logs the attempt)
        storage.get_study_id_from_name(model.spec.study)
        created = False
    except KeyError:
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


def _offset_seed(model: StudyModel, offset: int) -> SearchSpec:
    """The spec's search settings with ``seed + offset`` (concurrent runs with one seed would
    propose the same designs)."""
    search = model.spec.search
    if offset and search.seed is not None:
        search = search.model_copy(update={"seed": (search.seed + offset) % 2**32})
    return search


def run_trial(
    model: StudyModel,
    study: optuna.Study,
    dists: dict[str, BaseDistribution],
    *,
    trial_id: int | None = None,
    evaluate: Callable[[Mapping[str, Any]], Outcome] | None = None,
) -> optuna.trial.FrozenTrial | None:
    """Evaluate, record and tell one claimed trial (claiming one if not given); return it as
    stored, or None when another worker retired it meanwhile (its heartbeat was late).

    Whatever the evaluation does wrong (dse.model.guarded) fails this trial with its reason;
    ``evaluate`` (from ``trial_evaluator``) applies the spec's time limit.
    """
    if trial_id is None:
        trial_id = claim_trial(study)
    return run_batch(model, study, dists, [trial_id], evaluate=evaluate)[0]


def run_study(
    model: StudyModel,
    *,
    storage_url: str,
    trials: int,
    on_progress: Callable[[Progress], None] | None = None,
    timeout_s: float | None = None,
    spec_lock: dict[str, Any] | None = None,
    seed_offset: int | None = None,
    heartbeat_s: int | None = HEARTBEAT_S,
    grace_s: int | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_start: Callable[[optuna.Study], None] | None = None,
    batch: bool = True,
) -> optuna.Study:
    """Run until the study holds ``trials`` finished trials in total (resuming, not adding).

    Trials are asked, evaluated and told in batches (:mod:`dse.search.study.batch`: a generation
    for NSGA-II/III, one vectorized evaluation); ``batch=False`` runs them one at a time.

    Safe with any number of workers on one study: each counts the finished and running trials
    and claims at most the rest (its next batch), as ``optuna.study.MaxTrialsCallback`` stops
    at the total, with no lock between workers: workers counting at the same moment may
    together pass the total by at most (workers - 1) x batch size (docs/scale-out.md), and no
    trial is ever given back or FAILED for it. When the last trials run elsewhere it
    waits for them, taking them over if their worker dies. ``on_start`` runs once the study
    is opened and its spec accepted (the callers write ``spec.lock.yaml`` there, so a refused
    spec or an unreachable storage never replaces the lock of the study that is there).

    The sampler's seed is the spec's plus ``seed_offset``; by default the offset is the number
    of the first trial this run claims: 0 for the run that starts a study (reproducible), and
    different for every run that joins or resumes it, since the storage numbers trials uniquely
    (two concurrent runs with one seed would draw the same designs).
    """
    study = create_or_load(
        model,
        storage_url,
        spec_lock=spec_lock,
        seed_offset=seed_offset,
        heartbeat_s=heartbeat_s,
        grace_s=grace_s,
    )
    if on_start is not None:
        on_start(study)
    recover_stale_trials(study)
    dists = {n: distribution(p) for n, p in model.spec.space.items()}
    tracker = FrontTracker(model.maximize)
    for t in study.get_trials(deepcopy=False, states=FINISHED):
        tracker.add_trial(t)
    sampler = sampler_of(model)
    if sampler.enqueue is not None:
        search = model.spec.search
        trials = min(trials, sampler.enqueue(model.spec.space, search.seed, study, trials))
    elif warm_start_samples(model):
        enqueue_warm_start(model, study)
    evaluate, close_evaluator = trial_evaluator(model)
    reseed = seed_offset is None and model.spec.search.seed is not None
    start = recovered = time.monotonic()  # stale trials were just recovered
    planner = BatchPlanner(sampler_of(model))
    # With a time limit every design runs alone in the deadline child (dse.model.guarded).
    vectorized = model.spec.search.trial_timeout_s is None
    mine = 0
    try:  # claim, evaluate and tell trials until the study-wide total (see above)
        while True:
            if timeout_s is not None and time.monotonic() - start > timeout_s:
                break
            if should_stop is not None and should_stop():
                break
            if time.monotonic() - recovered >= RECOVER_S:
                recover_stale_trials(study)
                recovered = time.monotonic()
            trial_ids, finished = _claim(study, planner, trials, batch=batch)
            if finished >= trials:
                break
            if not trial_ids:
                time.sleep(POLL_S)  # the last trials run elsewhere
                continue
            if reseed:
                reseed = False
                number = storage_of(study).get_trial_number_from_id(trial_ids[0])
                if number:
                    study.sampler = make_sampler(model, _offset_seed(model, number))
            try:
                told = run_batch(
                    model, study, dists, trial_ids, evaluate=evaluate, vectorized=vectorized
                )
            except BaseException:
                for trial_id in trial_ids:
                    if not storage_of(study).get_trial(trial_id).state.is_finished():
                        give_back_trial(study, trial_id, "interrupted; parameters re-queued")
                raise
            for trial in told:
                if trial is not None:
                    tracker.add_trial(trial)
                    mine += 1
            if on_progress and any(trial is not None for trial in told):
                done = finished_count(study)
                on_progress(
                    Progress(
                        done, trials, tracker.feasible, tracker.front_size(), tracker.failed, mine
                    )
                )
    finally:
        close_evaluator()
    return study


def _claim(
    study: optuna.Study, planner: BatchPlanner, trials: int, *, batch: bool
) -> tuple[list[int], int]:
    """Claim the next batch's trials, at most those the study still lacks, and return them
    with the finished count they were claimed against (no lock: see ``run_study``)."""
    finished, running = study_load(study)
    free = trials - finished - running
    if finished >= trials or free <= 0:
        return [], finished
    n = planner.size(study, free) if batch else 1
    return [claim_trial(study) for _ in range(n)], finished
