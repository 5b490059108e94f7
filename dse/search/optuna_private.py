"""Every use of Optuna's private API in the engine, in one place (issue 16, item 5).

The engine needs a few things Optuna's public API does not offer: the storage and ids behind a
study and a trial (to store many attributes in one journal append, to take over a dead
worker's trial), suggesting from fixed distributions on a trial that was claimed rather than
asked, the heartbeat thread and stale-trial query of RDB storages, and NSGA-II's generation
size. Each is one small function here, named for what it does, so an Optuna upgrade is checked
against this file (``optuna>=5,<6`` pins the minor API it was written for) and
``tests/dse/test_optuna_private.py`` fails if a private Optuna name appears anywhere else
(nowhere else: the storage module and the dashboard import what they need from here).
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.exceptions import UpdateFinishedTrialError
from optuna.samplers._ga import BaseGASampler
from optuna.storages import BaseStorage, JournalStorage, RDBStorage
from optuna.storages._cached_storage import _CachedStorage
from optuna.storages._heartbeat import BaseHeartbeat, get_heartbeat_thread, is_heartbeat_enabled
from optuna.storages.journal._file import BaseJournalFileLock
from optuna.storages.journal._storage import JournalOperation
from optuna.trial import TrialState

__all__ = [
    "BaseHeartbeat",
    "BaseJournalFileLock",
    "TrialWrites",
    "dashboard_figures",
    "dashboard_note",
    "dashboard_save_note_version",
    "forget_cached_trials",
    "genetic_sampler",
    "heartbeat",
    "heartbeat_enabled",
    "journal_set_user_attrs",
    "pop_waiting_trial_id",
    "rdb_new_trial",
    "rdb_new_trials",
    "rdb_pop_waiting",
    "rdb_record_heartbeats",
    "rdb_set_user_attrs",
    "rdb_stale_trial_ids",
    "rdb_trials",
    "rdb_write",
    "stale_trial_ids",
    "storage_of",
    "study_id",
    "suggest",
    "trial_id",
    "uncached",
]


def storage_of(study: optuna.Study) -> BaseStorage:
    """The storage object behind a study (``optuna.Study`` keeps it private)."""
    return study._storage


def study_id(study: optuna.Study) -> int:
    """The storage's id of a study (the dashboard's URLs and RDB queries use it)."""
    return study._study_id


def trial_id(trial: optuna.trial.FrozenTrial | optuna.Trial) -> int:
    """The storage's id of a trial (distinct from its number)."""
    return trial._trial_id


def suggest(trial: optuna.Trial, name: str, dist: BaseDistribution) -> Any:
    """Suggest ``name`` from ``dist`` on a claimed trial (no ``suggest_*`` call knows the
    distribution object itself)."""
    return trial._suggest(name, dist)


def heartbeat(trial_id: int, storage: BaseStorage) -> AbstractContextManager[Any]:
    """The heartbeat thread of an RDB storage while a trial runs (a no-op elsewhere)."""
    return get_heartbeat_thread(trial_id, storage)


def heartbeat_enabled(storage: BaseStorage) -> bool:
    return is_heartbeat_enabled(storage)


def stale_trial_ids(study: optuna.Study) -> list[int]:
    """Running trials whose heartbeat stopped (their worker died), per the storage; none
    where the storage keeps no heartbeats."""
    storage = storage_of(study)
    if not is_heartbeat_enabled(storage):
        return []
    return list(storage._get_stale_trial_ids(study._study_id))  # type: ignore[attr-defined]


def forget_cached_trials(study: optuna.Study) -> None:
    """Drop the study's per-thread trial cache, so the next read sees other workers' trials."""
    study._thread_local.cached_all_trials = None


def pop_waiting_trial_id(study: optuna.Study) -> int | None:
    """Claim the oldest enqueued (WAITING) trial, as ``study.ask`` does; None if there is none."""
    return study._pop_waiting_trial_id()


def genetic_sampler(sampler: optuna.samplers.BaseSampler) -> Any:
    """The sampler when it is a genetic one with a population (NSGA-II/III), else None."""
    if isinstance(sampler, BaseGASampler) and sampler.population_size:
        return sampler
    return None


def generation_key(sampler: Any) -> str:
    """The system attribute in which a genetic sampler records each trial's generation."""
    return str(type(sampler)._get_generation_key())


# --- storages: many user attributes in one write (the journal/RDB adapter of dse.search.storage)


def uncached(storage: BaseStorage) -> BaseStorage:
    """The storage behind Optuna's trial cache (which fronts RDB storages), else ``storage``."""
    return storage._backend if isinstance(storage, _CachedStorage) else storage


def journal_set_user_attrs(
    backend: JournalStorage, attrs_by_trial: dict[int, dict[str, Any]]
) -> None:
    """Every attribute of every trial given, in one journal append (one lock, one fsync)."""
    worker = backend._replay_result.worker_id
    logs = [
        {
            "op_code": JournalOperation.SET_TRIAL_USER_ATTR,
            "worker_id": worker,
            "trial_id": trial_id,
            "user_attr": {k: v},
        }
        for trial_id, attrs in attrs_by_trial.items()
        for k, v in attrs.items()
    ]
    with backend._thread_lock:
        backend._backend.append_logs(logs)
        # Replaying raises at the first attr of a finished trial; replay the rest too, so
        # no later call trips over this batch.
        error: UpdateFinishedTrialError | None = None
        for _ in range(len(logs) + 1):
            try:
                backend._sync_with_backend()
                break
            except UpdateFinishedTrialError as exc:
                error = exc
        if error is not None:
            raise error


def rdb_set_user_attrs(backend: RDBStorage, trial_id: int, attrs: dict[str, Any]) -> None:
    """One trial's user attributes in one transaction (an upsert on PostgreSQL and SQLite)."""
    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session

    model = models.TrialUserAttributeModel
    with _create_scoped_session(backend.scoped_session, True) as session:
        dialect = backend.engine.name
        if dialect not in ("postgresql", "sqlite"):
            for k, v in attrs.items():
                backend._set_trial_attr_without_commit(session, model, trial_id, k, v)
            return
        trial = models.TrialModel.find_or_raise_by_id(trial_id, session)
        backend.check_trial_is_updatable(trial_id, trial.state)
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        rows = [
            {"trial_id": trial_id, "key": k, "value_json": json.dumps(v)} for k, v in attrs.items()
        ]
        stmt = insert(model).values(rows)
        stmt = stmt.on_conflict_do_update(
            index_elements=[model.trial_id, model.key],
            set_={"value_json": stmt.excluded.value_json},
        )
        session.execute(stmt)


# --- optuna-dashboard: notes and figures of finished trials (no public call takes those)


def dashboard_figures(system_attrs: dict[str, Any]) -> dict[str, Any]:
    """The plotly figures optuna-dashboard stored in a study's system attributes, by id."""
    from optuna_dashboard._custom_plot_data import get_plotly_graph_objects

    return get_plotly_graph_objects(system_attrs)


def dashboard_note(system_attrs: dict[str, Any], trial_id: int | None) -> dict[str, Any]:
    """optuna-dashboard's note (``version``, ``body``) of a study (``trial_id`` None) or trial."""
    from optuna_dashboard._note import get_note_from_system_attrs

    return get_note_from_system_attrs(system_attrs, trial_id)


def dashboard_save_note_version(
    storage: BaseStorage, study_id: int, trial_id: int, version: int, body: str
) -> None:
    """Write a finished trial's note (the public ``save_note`` needs a live ``optuna.Trial``)."""
    from optuna_dashboard._note import save_note_with_version

    save_note_with_version(storage, study_id, trial_id, version, body)


# --- RDB storages: the bulk reads and writes of dse.search.rdb_storage


def rdb_trials(
    backend: RDBStorage, study_id: int, *, included: set[int], after_id: int
) -> list[optuna.trial.FrozenTrial]:
    """The study's trials with an id above ``after_id`` or in ``included``, in id order (one
    query per table, as Optuna's own cache reads them)."""
    return list(backend._get_trials(study_id, None, included, after_id))


def rdb_new_trial(
    backend: RDBStorage, study_id: int, template: optuna.trial.FrozenTrial | None
) -> optuna.trial.FrozenTrial:
    """Create a trial (from ``template``) and return it as stored, without reading it back."""
    return backend._create_new_trial(study_id, template)


def rdb_stale_trial_ids(backend: RDBStorage, study_id: int) -> list[int]:
    return list(backend._get_stale_trial_ids(study_id))


@dataclass
class TrialWrites:
    """One trial's changes not yet written: what a batch of Optuna calls set on it."""

    params: dict[str, tuple[float, BaseDistribution]] = field(default_factory=dict)
    user_attrs: dict[str, Any] = field(default_factory=dict)
    system_attrs: dict[str, Any] = field(default_factory=dict)
    intermediate: dict[int, float] = field(default_factory=dict)
    state: TrialState | None = None
    values: list[float] | None = None
    datetime_complete: datetime | None = None


def _insert(dialect: str) -> Any:
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert


def _upsert(session: Any, dialect: str, table: Any, rows: list[dict[str, Any]], keys: list[str]):  # noqa: ANN202
    """Insert rows, replacing the non-key columns of rows already there (chunks of 500)."""
    insert = _insert(dialect)
    for start in range(0, len(rows), 500):
        stmt = insert(table).values(rows[start : start + 500])
        update = {c: stmt.excluded[c] for c in rows[0] if c not in keys}
        if update:
            stmt = stmt.on_conflict_do_update(index_elements=keys, set_=update)
        else:
            stmt = stmt.on_conflict_do_nothing(index_elements=keys)
        session.execute(stmt)


def _write_rows(session: Any, dialect: str, mine: dict[int, TrialWrites]) -> None:
    """The params, attributes and values of ``mine`` as multi-row upserts."""
    from optuna import distributions
    from optuna.storages._rdb import models

    params = [
        {
            "trial_id": tid,
            "param_name": name,
            "param_value": value,
            "distribution_json": distributions.distribution_to_json(dist),
        }
        for tid, w in mine.items()
        for name, (value, dist) in w.params.items()
    ]
    if params:
        _upsert(
            session,
            dialect,
            models.TrialParamModel.__table__,
            params,
            ["trial_id", "param_name"],
        )
    for table, attr in (
        (models.TrialUserAttributeModel.__table__, "user_attrs"),
        (models.TrialSystemAttributeModel.__table__, "system_attrs"),
    ):
        rows_ = [
            {"trial_id": tid, "key": k, "value_json": json.dumps(v)}
            for tid, w in mine.items()
            for k, v in getattr(w, attr).items()
        ]
        if rows_:
            _upsert(session, dialect, table, rows_, ["trial_id", "key"])
    ivm = models.TrialIntermediateValueModel
    inter = []
    for tid, w in mine.items():
        for step, v in w.intermediate.items():
            stored, kind = ivm.intermediate_value_to_stored_repr(v)
            inter.append(
                {
                    "trial_id": tid,
                    "step": step,
                    "intermediate_value": stored,
                    "intermediate_value_type": kind,
                }
            )
    if inter:
        _upsert(session, dialect, ivm.__table__, inter, ["trial_id", "step"])
    tvm = models.TrialValueModel
    values = []
    for tid, w in mine.items():
        for objective, v in enumerate(w.values or ()):
            stored, kind = tvm.value_to_stored_repr(v)
            values.append(
                {"trial_id": tid, "objective": objective, "value": stored, "value_type": kind}
            )
    if values:
        _upsert(session, dialect, tvm.__table__, values, ["trial_id", "objective"])


def rdb_write(backend: RDBStorage, writes: dict[int, TrialWrites]) -> set[int]:
    """Every change of every trial given, in one transaction (a few multi-row statements);
    returns the trials written. A trial another worker finished meanwhile (it retired a
    trial whose heartbeat was late) is left as it is and not returned."""
    import sqlalchemy as sa
    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session

    dialect = backend.engine.name
    trials = models.TrialModel.__table__
    with _create_scoped_session(backend.scoped_session) as session:
        rows = session.execute(
            sa.select(trials.c.trial_id, trials.c.state)
            .where(trials.c.trial_id.in_(list(writes)))
            .with_for_update()
        ).all()
        live = {tid for tid, state in rows if state == TrialState.RUNNING}
        mine = {tid: w for tid, w in writes.items() if tid in live}
        _write_rows(session, dialect, mine)
        done = [
            {"b_id": tid, "b_state": w.state, "b_complete": w.datetime_complete}
            for tid, w in mine.items()
            if w.state is not None
        ]
        if done:
            session.execute(
                sa.update(trials)
                .where(trials.c.trial_id == sa.bindparam("b_id"))
                .values(
                    state=sa.bindparam("b_state"), datetime_complete=sa.bindparam("b_complete")
                ),
                done,
            )
    return live


def rdb_record_heartbeats(backend: RDBStorage, trial_ids: list[int]) -> None:
    """One heartbeat for each trial given, in one statement."""
    import sqlalchemy as sa
    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session

    if not trial_ids:
        return
    table = models.TrialHeartbeatModel.__table__
    insert = _insert(backend.engine.name)
    with _create_scoped_session(backend.scoped_session) as session:
        stmt = insert(table).values(
            [{"trial_id": t, "heartbeat": sa.func.now()} for t in trial_ids]
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=["trial_id"], set_={"heartbeat": sa.func.now()}
        )
        session.execute(stmt)


def rdb_new_trials(
    backend: RDBStorage, study_id: int, templates: list[optuna.trial.FrozenTrial]
) -> list[optuna.trial.FrozenTrial]:
    """Create one trial per template in one transaction (numbers assigned under the study's
    row lock, as Optuna does for one); return them as stored."""
    import copy

    import sqlalchemy as sa
    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session

    if not templates:
        return []
    dialect = backend.engine.name
    trials = models.TrialModel.__table__
    with _create_scoped_session(backend.scoped_session) as session:
        models.StudyModel.find_or_raise_by_id(study_id, session, for_update=True)
        count = session.execute(
            sa.select(sa.func.count()).select_from(trials).where(trials.c.study_id == study_id)
        ).scalar_one()
        rows = [
            {
                "study_id": study_id,
                "number": count + i,
                "state": t.state,
                "datetime_start": t.datetime_start,
                "datetime_complete": t.datetime_complete,
            }
            for i, t in enumerate(templates)
        ]
        ids = list(
            session.execute(
                sa.insert(trials).returning(trials.c.trial_id, sort_by_parameter_order=True),
                rows,
            ).scalars()
        )
        writes = {
            tid: TrialWrites(
                params={
                    name: (t.distributions[name].to_internal_repr(v), t.distributions[name])
                    for name, v in t.params.items()
                },
                user_attrs=dict(t.user_attrs),
                system_attrs=dict(t.system_attrs),
                intermediate=dict(t.intermediate_values),
                values=list(t.values) if t.values is not None else None,
            )
            for tid, t in zip(ids, templates, strict=True)
        }
        _write_rows(session, dialect, writes)
    made = []
    for i, (tid, t) in enumerate(zip(ids, templates, strict=True)):
        frozen = copy.deepcopy(t)
        frozen.number = count + i
        frozen._trial_id = tid
        made.append(frozen)
    return made


def rdb_pop_waiting(
    backend: RDBStorage, study_id: int, n: int, user_attrs: dict[str, Any]
) -> list[int]:
    """Claim up to ``n`` of the oldest WAITING trials (RUNNING, with ``user_attrs``) in one
    transaction; rows another worker holds are skipped, not waited for."""
    import sqlalchemy as sa
    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session

    trials = models.TrialModel.__table__
    with _create_scoped_session(backend.scoped_session) as session:
        ids = list(
            session.execute(
                sa.select(trials.c.trial_id)
                .where(trials.c.study_id == study_id, trials.c.state == TrialState.WAITING)
                .order_by(trials.c.trial_id)
                .limit(n)
                .with_for_update(skip_locked=True)
            ).scalars()
        )
        if not ids:
            return []
        session.execute(
            sa.update(trials)
            .where(trials.c.trial_id.in_(ids))
            .values(state=TrialState.RUNNING, datetime_start=datetime.now())
        )
        _write_rows(
            session,
            backend.engine.name,
            {tid: TrialWrites(user_attrs=dict(user_attrs)) for tid in ids},
        )
    return ids


def journal_op_codes() -> frozenset[int]:
    """Optuna's journal op codes (a private enum; the values Optuna 5 writes when it moved)."""
    try:
        from optuna.storages.journal._storage import JournalOperation
    except ImportError:  # pragma: no cover - another Optuna layout
        return frozenset(range(11))
    return frozenset(int(op) for op in JournalOperation)


def journal_replay_result(name: str) -> Any:
    """Optuna's private journal replayer, or None where Optuna has moved it."""
    try:
        from optuna.storages.journal._storage import JournalStorageReplayResult
    except ImportError:  # pragma: no cover - another Optuna layout
        return None
    return JournalStorageReplayResult(name)
