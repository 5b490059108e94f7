"""A study's resolved spec, the one module that reads, checks and compares it.

A run keeps the resolved spec (``dse.model.load.lock_dict``) in two places: in the study
(user attribute ``dse.spec``, for workers on every host) and beside it (``spec.lock.yaml``,
for the reading commands). This module writes and reads both, checks a lock field by field
(an edited or damaged one is ``FILE:LINE: field: problem`` lines, never a KeyError deep in a
report), and compares two resolved specs: a study is one spec on one storage, so a run whose
spec would mix incompatible trials into the study, or whose storage is not the one the study's
folder is bound to, is refused before anything is written.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import optuna
import yaml
from pydantic import ValidationError

from dse import __version__
from dse.errors import (
    Problem,
    SpecError,
    SpecMismatchError,
    StorageError,
    StudyDamagedError,
    StudyNotFoundError,
)
from dse.search.storage import JOURNAL_FILE, existing_study_dir, hide_password, studies_root
from dse.spec.atomic import write_text_atomic
from dse.spec.messages import short_repr
from dse.spec.pydantic_errors import pydantic_problems
from dse.spec.safe_yaml import YamlDoc
from dse.spec.schema import StudySpec
from dse.spec.yamlio import load_yaml

LOCK_FILE = "spec.lock.yaml"
#: The study's user attribute holding its resolved spec.
META_KEY = "dse.spec"
#: Keys a lock has besides the spec's fields.
LOCK_ONLY = (
    "dse_version",
    "fixed_overrides",
    "uncertain",
    "evaluator_versions",
    "default_constraints_held",
)
#: A robust run's settings, as ``RobustModel.lock_extras`` writes them (not the spec's form).
ROBUST_EXTRAS = {"k": int, "statistic": str, "seed": int, "vectorized": bool, "nominal_study": str}
#: Keys that may change when a study is resumed or joined: they change how the study is
#: searched, reached or described, not what a trial means. ``search`` covers the sampler, its
#: options and seed, the total (raising it extends a study), the trial time limit and the warm
#: start (which seeds a new study only); ``fixed_overrides`` is already in ``fixed``; the
#: storage is checked against the study's folder by :func:`check_binding` (workers on other
#: hosts may reach one database by other names). Docs: docs/scale-out.md, "Resuming".
COMPATIBLE = (
    "search",
    "storage",
    "journal_outside_studies",
    "dse_version",
    "description",
    "fixed_overrides",
)
#: A hypervolume threshold describes reporting, not the problem: it may be set later.
COMPATIBLE_LEAVES = ("threshold",)
#: How long a joining worker waits for the creator to store its spec.
SPEC_WAIT_S = 10.0
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?(?:[.+-][0-9A-Za-z.+-]*)?$")
HINT = "(the lock was edited or damaged; 'dse run' on the spec rewrites it)"


# --- writing and reading ---------------------------------------------------------------------


def plain(obj: Any) -> Any:
    """numpy scalars and tuples -> plain YAML-safe values."""
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def write_lock_atomic(directory: Path, lock: dict[str, Any]) -> None:
    """``directory/spec.lock.yaml``, creating the folder, written whole or not at all (several
    workers write it; a kill mid-write must not leave half of one)."""
    directory.mkdir(parents=True, exist_ok=True)
    lock = {"dse_version": __version__, **lock}
    write_text_atomic(directory / LOCK_FILE, yaml.safe_dump(plain(lock), sort_keys=False))


def read_lock(name: str) -> dict[str, Any]:
    """A study's ``spec.lock.yaml``, read with the guarded reader and checked field by field;
    a damaged or edited lock is one line naming its file and line."""
    path = existing_study_dir(name) / LOCK_FILE
    if not os.path.lexists(path):
        raise StudyNotFoundError(f"study {name!r} has no {LOCK_FILE}; run it with 'dse run' first")
    try:
        lock, lines = load_yaml(path)
    except SpecError as exc:
        raise StudyDamagedError(exc.problems) from None
    problems = list(lines.problems) + lock_problems(lock, lines, str(path))
    if problems:
        raise StudyDamagedError(problems)
    return lock


# --- checking a lock -------------------------------------------------------------------------


class _Where:
    """Locates a problem at a key of the lock, with the lock's hint."""

    def __init__(self, file: str, lines: YamlDoc) -> None:
        self.file, self.lines = file, lines

    def problem(self, loc: Sequence[str | int], message: str) -> Problem:
        loc = tuple(loc)
        return Problem(self.file, self.lines.line(loc) or 1, ".".join(map(str, loc)), message)

    def at(self, loc: Sequence[str | int], message: str) -> Problem:
        return self.problem(loc, f"{message} {HINT}")


def lock_problems(lock: Any, lines: YamlDoc, file: str) -> list[Problem]:
    """Every field of a lock checked: first what the reading commands use (study, storage,
    objectives, search and the journal flag), in their words; then, once those hold, its
    version, its own keys and the spec it records, by the spec's own schema."""
    if not isinstance(lock, dict):
        got = "an empty file" if lock is None else type(lock).__name__
        return [Problem(file, 1, "", f"expected a mapping (a study's lock), got {got}")]
    where = _Where(file, lines)
    return _reader_problems(lock, where) or _schema_problems(lock, where)


def _reader_problems(lock: dict[str, Any], where: _Where) -> list[Problem]:
    out: list[Problem] = []
    for key in ("study", "storage"):
        if not isinstance(lock.get(key), str) or not lock[key]:
            out.append(where.at((key,), f"expected a string, got {short_repr(lock.get(key))}"))
    objectives = lock.get("objectives")
    if not isinstance(objectives, list) or not objectives:
        out.append(where.at(("objectives",), "expected a list of {metric, direction}"))
        objectives = []
    for i, obj in enumerate(objectives):
        if not isinstance(obj, dict):
            out.append(where.at(("objectives", i), f"expected a mapping, got {short_repr(obj)}"))
            continue
        if not isinstance(obj.get("metric"), str):
            out.append(where.at(("objectives", i, "metric"), "expected a metric name"))
        if obj.get("direction") not in ("minimize", "maximize"):
            out.append(where.at(("objectives", i, "direction"), "expected minimize or maximize"))
    if "search" in lock and not isinstance(lock["search"], dict):
        out.append(where.at(("search",), f"expected a mapping, got {short_repr(lock['search'])}"))
    if not isinstance(lock.get("journal_outside_studies", False), bool):
        out.append(where.at(("journal_outside_studies",), "expected true or false"))
    return out


def _schema_problems(lock: dict[str, Any], where: _Where) -> list[Problem]:
    out = _version_problems(lock, where)
    for key in ("fixed_overrides", "uncertain", "evaluator_versions"):
        if key in lock and not isinstance(lock[key], dict):
            out.append(where.at((key,), f"expected a mapping, got {short_repr(lock[key])}"))
    held = lock.get("default_constraints_held", [])
    if not isinstance(held, list) or not all(isinstance(c, str) for c in held):
        out.append(
            where.at(("default_constraints_held",), f"expected a list of constraints, got "
                     f"{short_repr(held)}")
        )  # fmt: skip
    spec = {k: v for k, v in lock.items() if k not in LOCK_ONLY}
    robust = spec.get("robust")
    if isinstance(robust, dict) and "k" in robust:  # a robust run's own record
        out += _robust_problems(spec.pop("robust"), where)
    try:
        StudySpec.model_validate(spec)
    except ValidationError as exc:  # in the spec's words, with the lock's hint
        out += pydantic_problems(exc, spec, SimpleNamespace(problem=where.at))
    return out


def _version_problems(lock: Mapping[str, Any], where: _Where) -> list[Problem]:
    version = lock.get("dse_version")
    if not isinstance(version, str) or not _VERSION.match(version):
        return [where.at(("dse_version",), f"expected a dse version, got {short_repr(version)}")]
    theirs = tuple(int(x) for x in _VERSION.match(version).groups())  # type: ignore[union-attr]
    ours = tuple(int(x) for x in _VERSION.match(__version__).groups())  # type: ignore[union-attr]
    if theirs > ours:
        return [
            where.problem(
                ("dse_version",),
                f"written by dse {version}, newer than this dse ({__version__}); upgrade dse "
                "to read this study",
            )
        ]
    return []


def _robust_problems(robust: Any, where: _Where) -> list[Problem]:
    if not isinstance(robust, dict):
        return [where.at(("robust",), f"expected a mapping, got {short_repr(robust)}")]
    out = []
    for key, kind in ROBUST_EXTRAS.items():
        value = robust.get(key)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            out.append(
                where.at(("robust", key), f"expected {kind.__name__}, got {short_repr(value)}")
            )
    out += [where.at(("robust", k), "unknown field") for k in robust if k not in ROBUST_EXTRAS]
    return out


def study_problems(
    lock: Mapping[str, Any], lines: YamlDoc, file: str, *, directions: int, metrics: set[str]
) -> list[Problem]:
    """The lock against the study it names: as many objectives as the study has directions,
    and (once a trial completed) each objective a metric the trials recorded."""
    where = _Where(file, lines)
    objectives = lock["objectives"]
    if len(objectives) != directions:
        return [
            where.at(
                ("objectives",),
                f"{len(objectives)} objectives, but the study in the storage has {directions}",
            )
        ]
    return [
        where.at(
            ("objectives", i, "metric"),
            f"{o['metric']!r} is no metric the study's trials recorded",
        )
        for i, o in enumerate(objectives)
        if metrics and o["metric"] not in metrics
    ]


# --- comparing two resolved specs ------------------------------------------------------------


def differences(stored: Mapping[str, Any], mine: Mapping[str, Any]) -> list[str]:
    """Dotted keys whose values differ between two resolved specs, outside :data:`COMPATIBLE`;
    a key one side alone has is named with ``(added)`` or ``(removed)``. An empty value
    (null, ``{}``, ``[]``) one side alone has is no difference outside ``fixed``: it is a
    schema field a newer dse fills with its default."""
    a = json.loads(json.dumps(plain(stored)))
    b = json.loads(json.dumps(plain(mine)))
    return _diff(a, b, "")


def _diff(a: Any, b: Any, path: str) -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(a.keys() | b.keys(), key=str)
        pairs = [(f"{path}{k}", a.get(k, _MISSING), b.get(k, _MISSING)) for k in keys]
    elif isinstance(a, list) and isinstance(b, list):
        n = max(len(a), len(b))
        pairs = [
            (f"{path}{i}", a[i] if i < len(a) else _MISSING, b[i] if i < len(b) else _MISSING)
            for i in range(n)
        ]
    else:
        return [] if a == b else [path.rstrip(".")]
    out: list[str] = []
    for key, x, y in pairs:
        if key in COMPATIBLE or key.rsplit(".", 1)[-1] in COMPATIBLE_LEAVES:
            continue
        if x is _MISSING or y is _MISSING:
            present = y if x is _MISSING else x
            if present in (None, {}, []) and not key.startswith("fixed."):
                continue
            out.append(f"{key} ({'added' if x is _MISSING else 'removed'})")
        else:
            out += _diff(x, y, f"{key}.")
    return out


_MISSING: Any = object()


def mismatch_message(study: str, diff: list[str]) -> str:
    shown = ", ".join(diff[:8]) + (f" (and {len(diff) - 8} more)" if len(diff) > 8 else "")
    return (
        f"study {study!r} was created with a different spec; differing keys: {shown} "
        "(trials of two specs would mix in one front: use the study's own spec, or give this "
        "one another 'study:' name; docs/scale-out.md lists what may change)"
    )


def check_spec(study: optuna.Study, lock: dict[str, Any], *, created: bool) -> None:
    """Store the resolved spec in a study this run created; otherwise refuse a different one
    (:func:`differences`) before anything is written.

    A joiner may arrive between the creator's two writes (study, then spec), so it waits a
    little for the spec; a study that already has trials predates this check and adopts it.
    """
    resolved = json.loads(json.dumps(plain(lock)))
    if created:
        study.set_user_attr(META_KEY, resolved)
        return
    deadline = time.monotonic() + SPEC_WAIT_S
    stored = study.user_attrs.get(META_KEY)
    while stored is None and not study.get_trials(deepcopy=False):
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
        stored = study.user_attrs.get(META_KEY)
    diff = differences(stored, resolved) if stored is not None else []
    if not diff and len(study.directions) != len(lock.get("objectives", [])):
        diff = ["objectives"]  # a study from before this check, with other objectives
    if diff:
        raise SpecMismatchError(mismatch_message(study.study_name, diff))
    if stored is None:
        study.set_user_attr(META_KEY, resolved)


def check_binding(name: str, url: str) -> None:
    """Refuse a storage other than the one the study's folder is bound to (its lock's): a
    second study would take over the folder and the first one's trials drop out of view.
    A default journal in a study folder that moved with its folder is the same storage."""
    path = studies_root() / name / LOCK_FILE
    if not path.is_file():
        return
    try:
        lock, _ = load_yaml(path)
    except (SpecError, OSError):
        return  # a damaged lock: the run rewrites it, as before
    bound = lock.get("storage") if isinstance(lock, dict) else None
    here = f"journal:{path.parent / JOURNAL_FILE}"
    if not isinstance(bound, str) or bound == url or (_default(bound, name) and url == here):
        return
    raise StorageError(
        f"study {name!r} in {path.parent} is bound to storage {hide_password(bound)!r}, not "
        f"{hide_password(url)!r} (its lock, {path}); run it with that storage, or give this "
        "run another 'study:' name"
    )


def _default(url: str, name: str) -> bool:
    """A study's default journal: ``<folder named after the study>/journal.log``."""
    if not url.startswith("journal:"):
        return False
    path = Path(url.removeprefix("journal:"))
    return path.name == JOURNAL_FILE and path.parent.name == name
