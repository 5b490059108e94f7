"""Every exception type of the engine, in one module.

A :class:`DseError` is the user's input (a spec, a flag, a study name, a storage URL): the
command prints it as one line and exits with code 2; anything else that escapes is an internal
error (exit code 1). :class:`EvaluationError` fails one trial, never the study.
:class:`YamlReadError`, :class:`ExprError` and :class:`ConformanceError` are raised by the
modules that read YAML, parse constraint expressions and check plug-ins, and are turned into
the errors above where they reach a command.

    Exception
    +-- DseError
    |   +-- SpecError (problems: list[Problem])
    |   |   +-- StudyDamagedError
    |   +-- EvaluatorError, StudyNotFoundError, StorageError, SpecMismatchError, DesignError
    |   +-- UncertainError, SweepError, SchedulerError, SchedulerAddressError, WorkerDiedError
    |   +-- MissingExtra
    +-- EvaluationError
    |   +-- EvaluationTimeout
    +-- ValueError: YamlReadError, ExprError
    +-- AssertionError: ConformanceError

The guards around user code keep their own private control-flow exceptions (a deadline, an
exit call, a probe's result), which never leave the engine.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dse.spec.messages import shorten


class DseError(Exception):
    """Base class of errors caused by the user's input; printed as one line, exit code 2."""


@dataclass(frozen=True)
class Problem:
    """One problem in a spec: where it is and what is wrong."""

    file: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        field = f" {self.field}:" if self.field else ""
        return f"{where}:{shorten(field, 120)} {shorten(self.message)}"


class SpecError(DseError):
    """A spec has one or more problems; nothing was started."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        # Several evaluators may reject the same field (evaluators that call each other).
        # Sorted by file and line, so a long list reads top to bottom like the spec.
        unique = list(dict.fromkeys(problems))
        self.problems = sorted(unique, key=lambda p: (p.file, p.line or 0))
        super().__init__("\n".join(str(p) for p in self.problems))


class StudyDamagedError(SpecError):
    """A recorded study's file (journal, lock) cannot be used; each problem names the file and
    the line that is wrong. Nothing was created or changed."""


class EvaluatorError(DseError):
    """An evaluator could not be found, imported or called."""


class StudyNotFoundError(DseError):
    """A study name does not match any recorded study."""


class StorageError(DseError):
    """A storage URL is invalid or unreachable."""


class SpecMismatchError(DseError):
    """A worker's spec differs from the one its study was created with."""


class DesignError(DseError):
    """A design given on the command line (``--set``) is incomplete or invalid."""


class ArgumentError(DseError, ValueError):
    """A Python API argument of the wrong type or out of its range (:mod:`dse.api`); raised
    before anything is created. Also a ValueError, as Python's own argument checks are."""


class UncertainError(DseError):
    """A distribution in ``fixed`` is malformed (carries the spec location)."""

    def __init__(self, loc: tuple[str, ...], message: str) -> None:
        self.loc = loc
        self.message = message
        super().__init__(f"{'.'.join(loc)}: {message}")


class SweepError(DseError):
    """A sweep cannot be set up (continuous parameter on a grid, bad sizes)."""


class SchedulerError(DseError):
    """The Dask scheduler cannot be reached or has no workers."""


class SchedulerAddressError(DseError):
    """A ``--scheduler`` value is malformed or nothing listens there."""


class WorkerDiedError(DseError):
    """Local sweep workers kept dying (out of memory? killed?)."""


class MissingExtra(DseError):
    """A command needs an optional dependency that is not installed (exit 2)."""


class EvaluationError(Exception):
    """An evaluator raised or returned something unusable; fails the trial, never the study."""


class EvaluationTimeout(EvaluationError):
    """The evaluation ran past ``search.trial_timeout_s``; the design is not tried again."""


class YamlReadError(ValueError):
    """A YAML file cannot be used: where (file, 1-based line or None, dotted field) and why."""

    def __init__(self, file: str, line: int | None, message: str, *, field: str = "") -> None:
        self.file, self.line, self.field, self.message = file, line, field, message
        super().__init__(f"{file}:{line}: {message}" if line else f"{file}: {message}")


class ExprError(ValueError):
    """An expression uses something other than the allowed grammar."""


class ConformanceError(AssertionError):
    """A plug-in breaks its contract; the message says which rule and which metric."""
