"""All error types of the engine, in one place.

Every user-facing error prints as one line and maps to exit code 2 (bad input); anything else
that escapes is an internal error (exit code 1).
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from dataclasses import dataclass
from difflib import get_close_matches


class DseError(Exception):
    """Base class of errors caused by the user's input; printed as one line, exit code 2."""


#: Longest message printed for one problem: a value echoed back (an expanded YAML alias, a
#: pasted file) must never flood the terminal.
MAX_MESSAGE_CHARS = 400


def shorten(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


_REPR = reprlib.Repr()  # keyword arguments need Python 3.12
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlist = _REPR.maxdict = 6
_REPR.maxlevel = 2


def short_repr(value: object) -> str:
    """A value's repr without walking all of it (a huge list costs no more than a small one)."""
    return _REPR.repr(value)


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


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``"did you mean 'x'? "`` or ``""``: Optuna-style help for a mistyped name."""
    close = get_close_matches(name, list(choices), n=1)
    return f"did you mean {close[0]!r}? " if close else ""


def choices_text(choices: Iterable[str]) -> str:
    return ", ".join(sorted(str(c) for c in choices))
