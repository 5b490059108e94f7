"""Batched trials: ask a batch, evaluate it in one vectorized call, record and tell it together.

How many trials a batch holds is chosen so that the records are those of one-at-a-time runs
with the same seed, wherever the sampler allows it:

- NSGA-II/III: the rest of the current generation. The sampler draws a generation's children
  from the previous generation only, and assigns each trial to a generation by counting the
  COMPLETE trials, so asking up to the generation boundary reproduces the sequential run
  (a failed trial leaves its generation one short, and the next batch fills it, as sequentially).
- an independent sampler (``Sampler.independent``: random, grid): up to
  :data:`BATCH_INDEPENDENT` trials and a quarter of those left (its proposals never depend
  on results; the seeded draws happen in the same order).
- TPE, GP and the rest learn from every result, so they ask one trial at a time.

With several workers on one study (``--jobs``), a worker's batch is the rest of the generation
less the trials of it that other workers are running, and half a generation when nothing is left
(they join it), so concurrent workers share a generation instead of each asking a whole one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import FrozenTrial, TrialState

from dse.errors import EvaluationError, EvaluationTimeout
from dse.model.batched import evaluate_trials
from dse.model.outcome import Outcome
from dse.model.study_model import StudyModel
from dse.search.optuna_private import generation_key, storage_of
from dse.search.samplers.plugin import Sampler, genetic_sampler
from dse.search.storage import set_trials_user_attrs
from dse.search.stored import (
    FAIL_ATTR,
    FEASIBLE_ATTR,
    METRICS_ATTR,
    STALE_ATTR,
    TIMED_OUT_ATTR,
)

#: Trials per batch for samplers whose proposals do not depend on results.
BATCH_INDEPENDENT = 64


class BatchPlanner:
    """How many trials the next batch asks of a study built with ``sampler`` (see the module
    docstring)."""

    def __init__(self, sampler: Sampler) -> None:
        self.independent = sampler.independent
        self._generation = 0  # generations only grow: start the scan where the last ended

    def size(self, study: optuna.Study, remaining: int) -> int:
        if remaining <= 1:
            return max(remaining, 1)
        sampler = genetic_sampler(study.sampler)
        if sampler is not None:
            pop = sampler.population_size
            while len(sampler.get_population(study, self._generation)) >= pop:
                self._generation += 1
            rest = pop - len(sampler.get_population(study, self._generation))
            rest -= self._running_in(study, sampler, self._generation)
            if rest <= 0:
                # Other workers run the rest: half a generation more (it joins this one), not
                # one trial at a time, whose fixed costs would halve this worker's throughput.
                rest = -(-pop // 2)
            return max(1, min(rest, remaining))
        if self.independent:
            # At most a quarter of what is left, so workers that start later still find
            # trials (the records do not depend on how the draws are batched).
            return min(BATCH_INDEPENDENT, max(1, -(-remaining // 4)))
        return 1

    @staticmethod
    def _running_in(study: optuna.Study, sampler: Any, generation: int) -> int:
        """Trials of ``generation`` other workers are running now: a generation is shared, so
        concurrent workers ask its rest between them (alone, a worker has none running)."""
        key = generation_key(sampler)
        # A trial claimed but not asked yet has no generation: it joins the current one.
        return sum(
            1
            for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
            if t.system_attrs.get(key, generation) == generation
        )


def run_batch(
    model: StudyModel,
    study: optuna.Study,
    dists: dict[str, BaseDistribution],
    trial_ids: list[int],
    *,
    evaluate: Callable[[Mapping[str, Any]], Outcome] | None = None,
    vectorized: bool = True,
) -> list[FrozenTrial | None]:
    """Ask, evaluate, record and tell claimed trials; each comes back as stored, or None when
    another worker retired it meanwhile (its heartbeat was late).

    The designs are asked in trial order (the sampler's seeded draws as one at a time), then
    evaluated together (:func:`dse.model.batched.evaluate_trials`; each failure fails only its
    trial), their metrics stored in one write, and told in order.
    """
    storage = storage_of(study)
    with heartbeats(storage, trial_ids):
        asked = {i: _ask(study, i, dists) for i in trial_ids}
        trials = {i: t for i, t in asked.items() if t is not None}
        outcomes = dict(
            zip(
                trials,
                evaluate_trials(
                    model,
                    [t.params for t in trials.values()],
                    evaluate=evaluate,
                    vectorized=vectorized,
                ),
                strict=True,
            )
        )
        attrs: dict[int, dict[str, Any]] = {}
        for trial_id, outcome in outcomes.items():
            if isinstance(outcome, EvaluationError):
                a: dict[str, Any] = {FAIL_ATTR: str(outcome)}
                if isinstance(outcome, EvaluationTimeout):
                    a[TIMED_OUT_ATTR] = True
            else:
                # Feasibility as a user attr too, so optuna-dashboard shows it on every trial.
                a = {METRICS_ATTR: outcome.metrics, FEASIBLE_ATTR: outcome.feasible}
            attrs[trial_id] = a
        try:
            set_trials_user_attrs(storage, attrs)
        except UpdateFinishedTrialError:
            pass  # the retired trial is found below; the others are written
        told = {i: _tell(model, study, i, t, outcomes[i]) for i, t in trials.items()}
    # A trial retired while it was told (the retirer lost the race to finish it) is not ours.
    for trial_id, t in told.items():
        if t is not None and storage.get_trial(trial_id).user_attrs.get(STALE_ATTR):
            told[trial_id] = None
    return [told.get(trial_id) for trial_id in trial_ids]


@contextmanager
def heartbeats(storage: optuna.storages.BaseStorage, trial_ids: list[int]) -> Iterator[None]:
    """While the batch runs, a heartbeat for each of its trials every interval where the
    storage keeps heartbeats (an ``RDBStorage`` opened with ``heartbeat_interval``): what
    Optuna's own heartbeat thread does for one trial, in one thread for the batch."""
    interval = getattr(storage, "get_heartbeat_interval", lambda: None)()
    if interval is None:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        while True:
            try:
                for trial_id in trial_ids:
                    storage.record_heartbeat(trial_id)  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - a lost server: the worker's own next call says so
                return
            if stop.wait(timeout=interval):
                return

    thread = threading.Thread(target=beat, name="dse-heartbeat")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _ask(
    study: optuna.Study, trial_id: int, dists: dict[str, BaseDistribution]
) -> optuna.Trial | None:
    """The claimed trial with its design drawn, or None if another worker retired it."""
    try:
        trial = optuna.Trial(study, trial_id)
        for name, dist in dists.items():
            suggest(trial, name, dist)
        return trial
    except (UpdateFinishedTrialError, ValueError):
        if storage_of(study).get_trial(trial_id).state.is_finished():
            return None
        raise


def suggest(trial: optuna.Trial, name: str, dist: BaseDistribution) -> Any:
    """``trial.suggest_*`` for a distribution object (what ``study.ask(fixed_distributions)``
    does, on a trial that was claimed rather than asked)."""
    if isinstance(dist, FloatDistribution):
        return trial.suggest_float(name, dist.low, dist.high, step=dist.step, log=dist.log)
    if isinstance(dist, IntDistribution):
        return trial.suggest_int(name, dist.low, dist.high, step=dist.step, log=dist.log)
    if isinstance(dist, CategoricalDistribution):
        return trial.suggest_categorical(name, dist.choices)
    raise TypeError(f"no suggest_* call for a {type(dist).__name__}")


def _tell(
    model: StudyModel,
    study: optuna.Study,
    trial_id: int,
    trial: optuna.Trial,
    outcome: Outcome | EvaluationError,
) -> FrozenTrial | None:
    try:
        if isinstance(outcome, EvaluationError):
            return study.tell(trial, state=TrialState.FAIL)
        for expr, v in zip(model.constraints, outcome.violations, strict=True):
            trial.set_constraint(expr.source, v)
        return study.tell(trial, outcome.objectives)
    except (UpdateFinishedTrialError, ValueError):
        if storage_of(study).get_trial(trial_id).state.is_finished():
            return None
        raise
