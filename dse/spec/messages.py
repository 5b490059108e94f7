"""Words of the engine's messages: a value cut short, a repr bounded, "did you mean", the valid
choices. The exception types themselves are in :mod:`dse.errors`."""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from difflib import get_close_matches

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


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``"did you mean 'x'? "`` or ``""``: Optuna-style help for a mistyped name."""
    close = get_close_matches(name, list(choices), n=1)
    return f"did you mean {close[0]!r}? " if close else ""


def choices_text(choices: Iterable[str]) -> str:
    return ", ".join(sorted(str(c) for c in choices))
