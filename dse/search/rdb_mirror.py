"""The in-memory mirror of one study's trials that
:class:`dse.search.rdb_storage.BatchedRDBStorage` serves reads from."""

from __future__ import annotations

import bisect
from typing import Any

from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial

from dse.search import optuna_private as op


class StudyMirror:
    """The mirror of one study: its trials by id (id order is number order), which of them
    may still change elsewhere, and how far the last read got."""

    def __init__(self) -> None:
        self.trials: dict[int, FrozenTrial] = {}
        self.ids: list[int] = []
        self.by_number: dict[int, int] = {}
        self.elsewhere: set[int] = set()  # unfinished trials this worker does not own
        self.read_up_to = -1
        self.system_attrs: dict[str, Any] | None = None
        self.dists: dict[str, BaseDistribution] = {}

    def put(self, t: FrozenTrial) -> None:
        tid = op.trial_id(t)
        if tid not in self.trials:
            bisect.insort(self.ids, tid)
        self.trials[tid] = t
        self.by_number[t.number] = tid
        for name, dist in t.distributions.items():
            self.dists.setdefault(name, dist)
