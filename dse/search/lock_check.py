"""A study's ``spec.lock.yaml`` checked whole: the spec it records, and what only a lock has.

A lock is the resolved spec ``dse run`` wrote (``dse.model.load.lock_dict``) plus its own keys:
the dse version that wrote it, the storage, ``--set`` overrides, the uncertain assumptions and a
robust run's settings. Reading commands trust it (its objectives name the trials' metrics, its
thresholds are numbers), so every field is checked with the spec's own schema and every key
must be one a lock has: an edited or damaged lock is a list of ``FILE:LINE: field: problem``
lines, never a KeyError deep in a report. The study it describes is checked against the
storage in :func:`study_problems`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from dse import __version__
from dse.errors import Problem
from dse.spec.messages import short_repr
from dse.spec.schema import StudySpec
from dse.spec.yamlio import LineMap

#: Keys a lock has besides the spec's fields.
LOCK_ONLY = ("dse_version", "fixed_overrides", "uncertain")
#: A robust run's settings, as ``RobustModel.lock_extras`` writes them (not the spec's form).
ROBUST_EXTRAS = {"k": int, "statistic": str, "seed": int, "vectorized": bool, "nominal_study": str}
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?(?:[.+-][0-9A-Za-z.+-]*)?$")
HINT = "(the lock was edited or damaged; 'dse run' on the spec rewrites it)"


class _Where:
    """Locates a problem at a key of the lock, with the lock's hint."""

    def __init__(self, file: str, lines: LineMap) -> None:
        self.file, self.lines = file, lines

    def problem(self, loc: Sequence[str | int], message: str) -> Problem:
        loc = tuple(loc)
        return Problem(self.file, self.lines.line(loc) or 1, ".".join(map(str, loc)), message)

    def at(self, loc: Sequence[str | int], message: str) -> Problem:
        return self.problem(loc, f"{message} {HINT}")


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


def _loc(err: Any) -> tuple[str | int, ...]:
    """Pydantic's location without the tags it adds for unions (space.x.float.low)."""
    loc = tuple(err["loc"])
    if len(loc) >= 3 and loc[0] == "space" and loc[2] in ("float", "int", "categorical"):
        loc = (*loc[:2], *loc[3:])
    if loc[:2] == ("search", "sampler") and len(loc) >= 3 and loc[2] in ("name", "path"):
        loc = (*loc[:2], *loc[3:])
    return loc


def _message(err: Any) -> str:
    if err["type"] == "extra_forbidden":
        return "unknown field"
    if err["type"] == "missing":
        return "required field is missing"
    return f"{err['msg'].removeprefix('Value error, ')} (got {short_repr(err.get('input'))})"


def spec_problems(lock: dict[str, Any], lines: LineMap, file: str) -> list[Problem]:
    """Every field of a lock (a mapping) checked: its version, its own keys, and the spec it
    records validated by the spec's schema (unknown keys, wrong types, bad values)."""
    where = _Where(file, lines)
    out = _version_problems(lock, where)
    for key in ("fixed_overrides", "uncertain"):
        if key in lock and not isinstance(lock[key], dict):
            out.append(where.at((key,), f"expected a mapping, got {short_repr(lock[key])}"))
    spec = {k: v for k, v in lock.items() if k not in LOCK_ONLY}
    robust = spec.get("robust")
    if isinstance(robust, dict) and "k" in robust:  # a robust run's own record
        out += _robust_problems(spec.pop("robust"), where)
    try:
        StudySpec.model_validate(spec)
    except ValidationError as exc:
        out += [where.at(_loc(err), _message(err)) for err in exc.errors()]
    return out


def study_problems(
    lock: Mapping[str, Any], lines: LineMap, file: str, *, directions: int, metrics: set[str]
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
