"""Everything a run checks before it creates anything (a study folder, a journal file).

``dse validate`` runs the same checks, so a spec it accepts never fails at the start of
``dse run``: the sampler is built with its options (types checked against the constructor),
and the storage URL is checked for form, scheme, driver and a writable target.
"""

from __future__ import annotations

import os

from dse.errors import Problem, SpecError, StorageError, StudyDamagedError
from dse.model.study_model import StudyModel
from dse.search.samplers.factory import make_sampler
from dse.search.storage import (
    JOURNAL_FILE,
    absolute_url,
    hide_password,
    reach_problem,
    storage_problem,
    studies_root,
    study_dir,
)
from dse.search.storage import journal as journal_read
from dse.spec.messages import shorten


def preflight(model: StudyModel, *, storage: str | None = None, ready: bool = True) -> None:
    """Raise SpecError (spec problems, with lines) or StorageError (``--storage``). With
    ``ready`` (a run, not ``dse validate``) also what the moment decides: the studies folder is
    a folder, the storage's server answers, the default journal is a journal in its place."""
    problems: list[Problem] = []
    try:
        make_sampler(model)
    except SpecError as exc:
        problems += exc.problems
    spec = model.spec

    def url_problem(url: str) -> str | None:
        outside = spec.journal_outside_studies
        return storage_problem(absolute_url(url), journal_outside_studies=outside) or (
            _folder_problem(url)
        )

    if spec.storage is not None and (why := url_problem(spec.storage)):
        problems.append(model.loaded.problem(("storage",), why))
    if problems:
        raise SpecError(problems)
    if storage is not None and (why := url_problem(storage)):
        raise StorageError(f"--storage {shorten(storage, 200)!r}: {why}")
    if not ready:
        return
    root = studies_root()
    if root.exists() and not root.is_dir():
        raise StorageError(
            f"the studies folder {root} ($DSE_STUDIES_DIR or ./studies) is not a folder"
        )
    url = storage if storage is not None else spec.storage
    if url is not None:
        why = reach_problem(absolute_url(url))
        if why and storage is None:  # the spec's own storage: at its line
            shown = shorten(hide_password(url), 200)
            raise SpecError([model.loaded.problem(("storage",), f"{shown!r}: {why}")])
        if why:
            raise StorageError(f"--storage {shorten(hide_password(url), 200)!r}: {why}")
    if spec.storage is None and storage is None:  # the default journal in the study's folder
        journal = study_dir(spec.study) / JOURNAL_FILE
        damage = journal_read.path_problem(journal)
        if damage:
            raise StudyDamagedError([Problem(str(journal), None, "", damage)])


def _folder_problem(url: str) -> str | None:
    """A journal or SQLite path written as a folder (``journal:studies/``): the path would
    lose its slash and name a file that is the folder's own name."""
    for scheme in ("journal:", "sqlite:///"):
        if url.startswith(scheme) and url.removeprefix(scheme).endswith(("/", os.sep)):
            return "names a folder (ends with '/'); give a file path"
    return None
