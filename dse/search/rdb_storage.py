"""An RDB storage (PostgreSQL, SQLite) built for dse's workers: a trial costs a few statements.

Optuna's RDB cache keeps only finished trials, so every read of a running trial goes back to
the server with all its attributes, and every ``suggest``, attribute and constraint is its own
transaction: on PostgreSQL a trial cost ~13x the CPU it costs on the journal (issue 28). This
storage keeps Optuna's public storage API and changes only where the data lives meanwhile:

- a mirror of the study's trials in memory, refreshed incrementally (new trials, and the
  unfinished trials of other workers) on each read outside a batch;
- inside :meth:`BatchedRDBStorage.batch` (one generation asked, evaluated and told) reads are
  served from the mirror and this worker's changes to its own trials are buffered, then written
  in one transaction at :meth:`~BatchedRDBStorage.flush` (after asking, so others see the
  designs; at the end, with the results and states);
- heartbeats for a whole batch in one statement; a claim lock (a PostgreSQL advisory lock, a
  file lock for SQLite) so concurrent workers count and create trials one at a time;
- a lost connection is retried with backoff for a bounded time
  (:data:`dse.search.rdb_connection.RETRY_S`), said once on stderr, then refused in one line.

A trial another worker retired meanwhile (its heartbeat was late) is left retired: the flush
writes only trials still RUNNING in the database, and the mirror takes the stored state.

The module is a little over 400 lines because it is one class implementing all of Optuna's
``BaseStorage`` and ``BaseHeartbeat`` methods; the database side (retry, claim lock, heartbeat
thread) is :mod:`dse.search.rdb_connection`, the mirror :mod:`dse.search.rdb_mirror`.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Container, Iterator, Sequence
from datetime import datetime
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, check_distribution_compatibility
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import BaseStorage, RDBStorage
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from dse.search import optuna_private as op
from dse.search import optuna_private_rdb as rdb
from dse.search.rdb_connection import T, beating, claim_lock, retry_window_s, retrying
from dse.search.rdb_mirror import StudyMirror


class BatchedRDBStorage(BaseStorage, op.BaseHeartbeat):
    """Optuna's :class:`~optuna.storages.RDBStorage` behind a mirror with batched writes (see
    the module docstring). One thread uses it (each worker process has its own); heartbeats
    run on their own thread through the database only."""

    def __init__(self, backend: RDBStorage, *, retry_s: float | None = None) -> None:
        self.backend = backend
        self.retry_s = retry_window_s() if retry_s is None else retry_s
        self._studies: dict[int, StudyMirror] = {}
        self._study_of: dict[int, int] = {}
        self._own: set[int] = set()
        self._writes: dict[int, rdb.TrialWrites] = {}
        self._depth = 0

    # --- the database, with a bounded retry of lost connections

    def _db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return retrying(self.retry_s, fn, *args, **kwargs)

    # --- batches

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Serve reads from the mirror and buffer this worker's writes until the end."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.flush()

    def flush(self) -> None:
        """Write every buffered change in one transaction; a trial finished elsewhere
        meanwhile takes its stored state instead."""
        if not self._writes:
            return
        writes, self._writes = self._writes, {}
        written = self._db(rdb.rdb_write, self.backend, writes)
        for tid, w in writes.items():
            if tid not in written:
                self._own.discard(tid)
                self._reload(tid)
            elif w.state is not None and w.state.is_finished():
                self._own.discard(tid)

    def owns(self, trial_id: int) -> bool:
        return trial_id in self._own

    def claim_lock(self, study_id: int) -> contextlib.AbstractContextManager[None]:
        """Count and create trials one worker at a time (see ``runner``'s claim)."""
        return claim_lock(self.backend, study_id, self.retry_s)

    # --- the mirror

    def _study(self, study_id: int) -> StudyMirror:
        s = self._studies.get(study_id)
        if s is None:
            s = self._studies[study_id] = StudyMirror()
        return s

    def sync(self, study_id: int) -> None:
        """Read what changed in the database since the last read (new trials, and the
        unfinished trials of others); this worker's own trials stay as it holds them."""
        s = self._study(study_id)
        fresh = self._db(
            rdb.rdb_trials,
            self.backend,
            study_id,
            included=set(s.elsewhere),
            after_id=s.read_up_to,
        )
        for t in fresh:
            tid = op.trial_id(t)
            s.read_up_to = max(s.read_up_to, tid)
            self._study_of[tid] = study_id
            if tid in self._own:
                continue
            s.put(t)
            if t.state.is_finished():
                s.elsewhere.discard(tid)
            else:
                s.elsewhere.add(tid)
        s.system_attrs = None

    def _reload(self, trial_id: int) -> FrozenTrial:
        t = self._db(self.backend.get_trial, trial_id)
        study_id = self._study_of.get(trial_id)
        if study_id is not None:
            s = self._study(study_id)
            s.put(t)
            if t.state.is_finished():
                s.elsewhere.discard(trial_id)
            elif trial_id not in self._own:
                s.elsewhere.add(trial_id)
        return t

    def _mine(self, trial_id: int) -> FrozenTrial | None:
        """This worker's own running trial as it holds it, else None."""
        if trial_id not in self._own:
            return None
        return self._studies[self._study_of[trial_id]].trials[trial_id]

    def _own_write(
        self, trial_id: int, direct: Callable[..., Any], *args: Any
    ) -> FrozenTrial | None:
        """This worker's running trial, checked updatable, for a buffered write; any other
        trial is written now (``direct(trial_id, *args)``) and re-read, and None returned."""
        t = self._mine(trial_id)
        if t is None:
            self._db(direct, trial_id, *args)
            self._reload(trial_id)
            return None
        self.check_trial_is_updatable(trial_id, t.state)
        return t

    def _pending(self, trial_id: int) -> rdb.TrialWrites:
        w = self._writes.get(trial_id)
        if w is None:
            w = self._writes[trial_id] = rdb.TrialWrites()
        return w

    def _after_write(self) -> None:
        if self._depth == 0:
            self.flush()

    # --- studies: straight to the database (rare), study system attrs cached in a batch

    def create_new_study(
        self, directions: Sequence[StudyDirection], study_name: str | None = None
    ) -> int:
        return self._db(self.backend.create_new_study, directions, study_name)

    def delete_study(self, study_id: int) -> None:
        self._studies.pop(study_id, None)
        self._db(self.backend.delete_study, study_id)

    def set_study_user_attr(self, study_id: int, key: str, value: Any) -> None:
        self._db(self.backend.set_study_user_attr, study_id, key, value)

    def set_study_system_attr(self, study_id: int, key: str, value: Any) -> None:
        self._db(self.backend.set_study_system_attr, study_id, key, value)
        s = self._study(study_id)
        if s.system_attrs is not None:
            s.system_attrs[key] = copy.deepcopy(value)

    def get_study_id_from_name(self, study_name: str) -> int:
        return self._db(self.backend.get_study_id_from_name, study_name)

    def get_study_name_from_id(self, study_id: int) -> str:
        return self._db(self.backend.get_study_name_from_id, study_id)

    def get_study_directions(self, study_id: int) -> list[StudyDirection]:
        return self._db(self.backend.get_study_directions, study_id)

    def get_study_user_attrs(self, study_id: int) -> dict[str, Any]:
        return self._db(self.backend.get_study_user_attrs, study_id)

    def get_study_system_attrs(self, study_id: int) -> dict[str, Any]:
        s = self._study(study_id)
        if self._depth == 0 or s.system_attrs is None:
            s.system_attrs = self._db(self.backend.get_study_system_attrs, study_id)
        return copy.deepcopy(s.system_attrs)

    def get_all_studies(self) -> list[op.FrozenStudy]:
        return self._db(self.backend.get_all_studies)

    # --- trials

    def create_new_trial(self, study_id: int, template_trial: FrozenTrial | None = None) -> int:
        t = self._db(rdb.rdb_new_trial, self.backend, study_id, template_trial)
        self._adopt(study_id, copy.deepcopy(t))
        return op.trial_id(t)

    def create_new_trials(self, study_id: int, templates: list[FrozenTrial]) -> list[int]:
        """One trial per template, in one transaction (``create_new_trial`` for many)."""
        made = self._db(rdb.rdb_new_trials, self.backend, study_id, templates)
        for t in made:
            self._adopt(study_id, t)
        return [op.trial_id(t) for t in made]

    def _adopt(self, study_id: int, t: FrozenTrial) -> None:
        """A trial this worker just created into the mirror: its own when RUNNING."""
        tid = op.trial_id(t)
        self._study_of[tid] = study_id
        self._study(study_id).put(t)
        if t.state == TrialState.RUNNING:
            self._own.add(tid)
        elif not t.state.is_finished():
            self._study(study_id).elsewhere.add(tid)

    def claim_trials(self, study_id: int, n: int, user_attrs: dict[str, Any]) -> list[int]:
        """``n`` RUNNING trials for this worker tagged with ``user_attrs``: the oldest queued
        ones first, then new ones (two transactions, whatever ``n`` is)."""
        popped = self._db(rdb.rdb_pop_waiting, self.backend, study_id, n, user_attrs)
        s = self._study(study_id)
        now = datetime.now()
        for tid in popped:
            t = s.trials.get(tid)
            if t is None or tid not in self._study_of:
                self._study_of[tid] = study_id
                t = self._reload(tid)
            t.state, t.datetime_start = TrialState.RUNNING, now
            t.user_attrs.update(copy.deepcopy(user_attrs))
            s.elsewhere.discard(tid)
            self._own.add(tid)
        template = FrozenTrial(
            number=0,
            state=TrialState.RUNNING,
            value=None,
            datetime_start=now,
            datetime_complete=None,
            params={},
            distributions={},
            user_attrs=dict(user_attrs),
            system_attrs={},
            intermediate_values={},
            trial_id=0,
        )
        return popped + self.create_new_trials(study_id, [template] * (n - len(popped)))

    def set_trial_param(
        self,
        trial_id: int,
        param_name: str,
        param_value_internal: float,
        distribution: BaseDistribution,
    ) -> None:
        t = self._own_write(
            trial_id,
            self.backend.set_trial_param,
            param_name,
            param_value_internal,
            distribution,
        )
        if t is None:
            return
        s = self._studies[self._study_of[trial_id]]
        previous = s.dists.get(param_name)
        if previous is not None:
            check_distribution_compatibility(previous, distribution)
        s.dists.setdefault(param_name, distribution)
        params, dists = dict(t.params), dict(t.distributions)
        params[param_name] = distribution.to_external_repr(param_value_internal)
        dists[param_name] = distribution
        t.params, t.distributions = params, dists
        self._pending(trial_id).params[param_name] = (param_value_internal, distribution)
        self._after_write()

    def get_trial_id_from_study_id_trial_number(self, study_id: int, trial_number: int) -> int:
        tid = self._study(study_id).by_number.get(trial_number)
        if tid is not None:
            return tid
        return self._db(
            self.backend.get_trial_id_from_study_id_trial_number, study_id, trial_number
        )

    def set_trial_state_values(
        self, trial_id: int, state: TrialState, values: Sequence[float] | None = None
    ) -> bool:
        t = self._mine(trial_id)
        if t is None or not state.is_finished():
            ok = self._db(self.backend.set_trial_state_values, trial_id, state, values)
            if trial_id in self._study_of:
                if ok and state == TrialState.RUNNING:
                    self._own.add(trial_id)  # claimed from the queue: this worker's now
                    self._studies[self._study_of[trial_id]].elsewhere.discard(trial_id)
                self._reload(trial_id)
            return ok
        self.check_trial_is_updatable(trial_id, t.state)
        w = self._pending(trial_id)
        w.state, w.values = state, list(values) if values is not None else None
        w.datetime_complete = datetime.now()
        t.state = state
        t.values = list(values) if values is not None else None
        t.datetime_complete = w.datetime_complete
        if self._depth == 0:
            self.flush()
            return self._studies[self._study_of[trial_id]].trials[trial_id].state == state
        return True

    def set_trial_intermediate_value(
        self, trial_id: int, step: int, intermediate_value: float
    ) -> None:
        t = self._own_write(
            trial_id, self.backend.set_trial_intermediate_value, step, intermediate_value
        )
        if t is None:
            return
        t.intermediate_values = {**t.intermediate_values, step: intermediate_value}
        self._pending(trial_id).intermediate[step] = intermediate_value
        self._after_write()

    def set_trial_user_attr(self, trial_id: int, key: str, value: Any) -> None:
        self._set_attr(trial_id, key, value, system=False)

    def set_trial_system_attr(self, trial_id: int, key: str, value: Any) -> None:
        self._set_attr(trial_id, key, value, system=True)

    def _set_attr(self, trial_id: int, key: str, value: Any, *, system: bool) -> None:
        b = self.backend
        t = self._own_write(
            trial_id, b.set_trial_system_attr if system else b.set_trial_user_attr, key, value
        )
        if t is None:
            return
        (t.system_attrs if system else t.user_attrs)[key] = copy.deepcopy(value)
        w = self._pending(trial_id)
        (w.system_attrs if system else w.user_attrs)[key] = value
        self._after_write()

    def get_trial(self, trial_id: int) -> FrozenTrial:
        study_id = self._study_of.get(trial_id)
        if study_id is not None:
            s = self._studies[study_id]
            t = s.trials.get(trial_id)
            if t is not None and (
                self._depth or trial_id in self._own or trial_id not in s.elsewhere
            ):
                return copy.deepcopy(t)
        return copy.deepcopy(self._reload(trial_id))

    def get_all_trials(
        self,
        study_id: int,
        deepcopy: bool = True,
        states: Container[TrialState] | None = None,
    ) -> list[FrozenTrial]:
        s = self._study(study_id)
        if self._depth == 0 or s.read_up_to < 0:
            self.sync(study_id)
        trials = [s.trials[tid] for tid in s.ids]
        if states is not None:
            trials = [t for t in trials if t.state in states]
        return copy.deepcopy(trials) if deepcopy else trials

    # --- heartbeats

    def record_heartbeat(self, trial_id: int) -> None:
        self.record_heartbeats([trial_id])

    def record_heartbeats(self, trial_ids: list[int]) -> None:
        rdb.rdb_record_heartbeats(self.backend, trial_ids)

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        return self._db(rdb.rdb_stale_trial_ids, self.backend, study_id)

    def get_heartbeat_interval(self) -> int | None:
        return self.backend.get_heartbeat_interval()

    def get_heartbeat_stale_trial_callback(
        self,
    ) -> Callable[[optuna.study.Study, FrozenTrial], None] | None:
        return self.backend.get_heartbeat_stale_trial_callback()

    @contextlib.contextmanager
    def heartbeats(self, trial_ids: list[int]) -> Iterator[None]:
        """One heartbeat statement for all of ``trial_ids`` now and every interval while the
        block runs (on its own thread; a missed beat during an outage is skipped)."""
        interval = self.get_heartbeat_interval()
        if not interval or not trial_ids:
            yield
            return
        with beating(self.record_heartbeats, interval, list(trial_ids)):
            yield

    def remove_session(self) -> None:
        self.backend.remove_session()

    def check_trial_is_updatable(self, trial_id: int, trial_state: TrialState) -> None:
        if trial_state.is_finished():
            t = self._studies[self._study_of[trial_id]].trials.get(trial_id)
            number = t.number if t is not None else trial_id
            raise UpdateFinishedTrialError(
                f"Trial#{number} has already finished and can not be updated."
            )
