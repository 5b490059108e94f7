"""``check_storage``: a storage backend against what the engine needs of it (docs/storage.md),
by running the engine's own claim, ask, tell and re-read steps on a fresh location."""

from __future__ import annotations

import optuna
from optuna.distributions import FloatDistribution
from optuna.exceptions import UpdateFinishedTrialError
from optuna.study import StudyDirection
from optuna.trial import TrialState

from dse.errors import ConformanceError
from dse.search.optuna_private import storage_of
from dse.search.storage._open import open_storage, storage_problem
from dse.search.storage._plugin import backend_for
from dse.search.stored import METRICS_ATTR, WORKER_ATTR
from dse.search.study.batch import suggest
from dse.search.study.recovery import FINISHED, claim_trial, enqueue_trials, study_load


def check_storage(url: str, *, study: str = "dse-storage-check") -> None:
    """Raise :class:`~dse.errors.ConformanceError` naming the first rule ``url``'s backend
    breaks. ``url`` must name an empty location the check may write (a study is created).

    Checked: a backend serves the URL and finds no problem with it; ``open`` returns an Optuna
    storage; trials claimed as the runner claims them are
    RUNNING and owned; designs asked, metrics stored and values told are what a second,
    independent open of the URL reads back; queued designs are claimed first with
    their parameters; a finished trial refuses changes; the study's counts add up.
    """
    if backend_for(url) is None:
        raise ConformanceError(f"no storage backend serves {url!r}")
    problem = storage_problem(url, journal_outside_studies=True)
    if problem:
        raise ConformanceError(f"{url!r}: the backend refuses a fresh location: {problem}")
    storage = open_storage(url)
    if not isinstance(storage, optuna.storages.BaseStorage):
        raise ConformanceError(f"open returned a {type(storage).__name__}, not an Optuna storage")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    directions = [StudyDirection.MINIMIZE, StudyDirection.MAXIMIZE]
    s = optuna.create_study(storage=storage, study_name=study, directions=directions)
    enqueue_trials(s, [{"x": 0.25}])
    ids = [claim_trial(s) for _ in range(3)]
    _expect(len(set(ids)) == 3, f"3 claimed trials, got ids {ids}")
    claimed = [storage_of(s).get_trial(i) for i in ids]
    _expect(
        all(t.state == TrialState.RUNNING and t.user_attrs.get(WORKER_ATTR) for t in claimed),
        "claimed trials are RUNNING with their owner tag",
    )
    dist = FloatDistribution(0.0, 1.0)
    trials = [optuna.Trial(s, i) for i in ids]
    xs = [suggest(t, "x", dist) for t in trials]
    for i, t, x in zip(ids, trials, xs, strict=True):
        storage_of(s).set_trial_user_attr(i, METRICS_ATTR, {"m": x})
        t.set_constraint("c", x - 0.5)
        s.tell(t, [x, 1.0 - x])
    _expect(xs[0] == 0.25, f"the queued design is claimed first (x = 0.25), got x = {xs[0]}")
    again = optuna.load_study(study_name=study, storage=open_storage(url))
    got = sorted(
        (
            (t.params["x"], tuple(t.values), t.user_attrs.get(METRICS_ATTR), dict(t.constraints))
            for t in again.get_trials(deepcopy=False, states=FINISHED)
        ),
        key=lambda row: row[0],
    )
    want = sorted(((x, (x, 1.0 - x), {"m": x}, {"c": x - 0.5}) for x in xs), key=lambda r: r[0])
    _expect(got == want, f"a second open reads back what was told: {got} != {want}")
    _expect(study_load(again) == (3, 0), f"3 finished, 0 running: {study_load(again)}")
    try:
        open_storage(url).set_trial_user_attr(ids[0], "late", 1)
    except UpdateFinishedTrialError:
        pass
    else:
        raise ConformanceError("a finished trial accepted a change")


def _expect(ok: bool, rule: str) -> None:
    if not ok:
        raise ConformanceError(f"storage check failed: {rule}")
