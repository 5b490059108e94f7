"""Optuna's private RDB storage internals, for the bulk reads and writes of
:class:`dse.search.rdb_storage.BatchedRDBStorage` and the one-transaction attribute writes of
:mod:`dse.search.storage`: Optuna's public RDB storage costs a transaction per attribute.

Like :mod:`dse.search.optuna_private` (the rest of the engine's private Optuna use), this is an
adapter checked against ``optuna>=5,<6``; ``tests/dse/search/test_optuna_private.py`` allows
private names here and there only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

import optuna
from optuna.distributions import BaseDistribution
from optuna.storages import RDBStorage
from optuna.trial import TrialState

__all__ = [
    "TrialWrites",
    "rdb_new_trial",
    "rdb_new_trials",
    "rdb_pop_waiting",
    "rdb_record_heartbeats",
    "rdb_set_user_attrs",
    "rdb_stale_trial_ids",
    "rdb_trials",
    "rdb_write",
]


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
    """The dialect's INSERT, which has ``on_conflict_do_update`` (PostgreSQL or SQLite)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert


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
    ivm, tvm = models.TrialIntermediateValueModel, models.TrialValueModel
    inter = _typed_rows(
        {tid: w.intermediate.items() for tid, w in mine.items()},
        "step",
        "intermediate_value",
        ivm.intermediate_value_to_stored_repr,
    )
    if inter:
        _upsert(session, dialect, ivm.__table__, inter, ["trial_id", "step"])
    values = _typed_rows(
        {tid: enumerate(w.values or ()) for tid, w in mine.items()},
        "objective",
        "value",
        tvm.value_to_stored_repr,
    )
    if values:
        _upsert(session, dialect, tvm.__table__, values, ["trial_id", "objective"])


def _typed_rows(
    items: dict[int, Iterable[tuple[int, float]]],
    key: str,
    column: str,
    stored_repr: Callable[[float], tuple[float | None, Any]],
) -> list[dict[str, Any]]:
    """Rows of float values as Optuna's RDB stores them (the value and its kind: finite,
    inf, -inf, nan), keyed by trial and ``key`` (step or objective)."""
    rows = []
    for tid, pairs in items.items():
        for k, v in pairs:
            stored, kind = stored_repr(v)
            rows.append({"trial_id": tid, key: k, column: stored, f"{column}_type": kind})
    return rows


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
        backend.check_trial_is_updatable(trial_id, cast(TrialState, trial.state))
        rows = [
            {"trial_id": trial_id, "key": k, "value_json": json.dumps(v)} for k, v in attrs.items()
        ]
        _upsert(session, dialect, model.__table__, rows, ["trial_id", "key"])
