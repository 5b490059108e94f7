"""Everything a run checks before it creates anything (a study folder, a journal file).

``dse validate`` runs the same checks, so a spec it accepts never fails at the start of
``dse run``: the sampler is built with its options (types checked against the constructor),
and the storage URL is checked for form, scheme, driver and a writable target.
"""

from __future__ import annotations

from dse.model.study_model import StudyModel
from dse.search import journal_read
from dse.search.samplers import make_sampler
from dse.search.storage import JOURNAL_FILE, absolute_url, storage_problem, study_dir
from dse.spec.errors import Problem, SpecError, StorageError, StudyDamagedError, shorten


def preflight(model: StudyModel, *, storage: str | None = None) -> None:
    """Raise SpecError (spec problems, with lines) or StorageError (``--storage``)."""
    problems: list[Problem] = []
    try:
        make_sampler(model)
    except SpecError as exc:
        problems += exc.problems
    spec = model.spec
    if spec.storage is not None:
        why = storage_problem(
            absolute_url(spec.storage), journal_outside_studies=spec.journal_outside_studies
        )
        if why:
            problems.append(model.loaded.problem(("storage",), why))
    if problems:
        raise SpecError(problems)
    if storage is not None:
        why = storage_problem(
            absolute_url(storage), journal_outside_studies=spec.journal_outside_studies
        )
        if why:
            raise StorageError(f"--storage {shorten(storage, 200)!r}: {why}")
    if spec.storage is None and storage is None:  # the default journal in the study's folder
        journal = study_dir(spec.study) / JOURNAL_FILE
        why = journal_read.path_problem(journal)
        if why:
            raise StudyDamagedError([Problem(str(journal), None, "", why)])
