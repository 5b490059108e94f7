"""What a run of a study leaves for its caller (:func:`dse.api.run`, ``dse run``): the records
written, the trials counted before and after, and a sentence when it ran nothing. Optuna and
pandas are imported by the function that writes, so ``import dse.api`` does not pay for them."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import optuna
    import pandas as pd

    from dse.model.study_model import StudyModel


class NothingToRun(UserWarning):
    """``trials`` is a study's total, and the study already holds that many finished trials."""


@dataclass
class RunResult:
    study: optuna.Study
    directory: Path
    trials: pd.DataFrame
    front: pd.DataFrame
    #: The study-wide total asked for, and the finished trials before and after this run.
    requested: int = 0
    before: int = 0
    after: int = 0

    @property
    def added(self) -> int:
        """Trials this run finished (0 when the study already held ``requested``)."""
        return max(self.after - self.before, 0)

    @property
    def note(self) -> str | None:
        """A sentence when the run did less than a reader of ``trials=`` might expect."""
        before, requested = self.before, self.requested
        if before < requested:
            return None
        return (
            f"study {self.study.study_name!r} already has {before} finished trials, at or above "
            f"the requested total of {requested}; no new trial was run (trials is the study's "
            f"total: ask for {before + requested} to add {requested} more)"
        )


def write_run_records(
    model: StudyModel, study: optuna.Study, *, requested: int = 0, before: int = 0
) -> RunResult:
    """Write the study's records (trials, front) under ``studies/<study>/`` and count what the
    run added; a run that added nothing warns :class:`NothingToRun` at the caller's caller."""
    from dse.results.records import write_records
    from dse.search.storage import study_dir
    from dse.search.study.recovery import finished_count

    directory = study_dir(model.spec.study, create=True)
    df, front = write_records(
        directory, study, objectives=model.objective_names, maximize=model.maximize
    )
    result = RunResult(
        study=study,
        directory=directory,
        trials=df,
        front=front,
        requested=requested,
        before=before,
        after=finished_count(study),
    )
    if result.note:
        warnings.warn(result.note, NothingToRun, stacklevel=3)
    return result
