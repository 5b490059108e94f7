"""Reading a YAML file for the engine (specs, lock files) with the line of every key, so errors
can point at it. The guards themselves (file type, byte cap, encoding, depth, aliases,
duplicate keys) are the distribution's one reader, :mod:`dse.spec.safe_yaml`, which the
preset loader uses too; this module turns its errors into :class:`SpecError` problems."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dse.errors import Problem, SpecError, YamlReadError
from dse.spec.safe_yaml import YamlDoc, parse, read_yaml

Loc = tuple[str | int, ...]


class LineMap:
    """Maps a field path (``("space", "x1", "low")``) to its 1-based YAML line."""

    def __init__(self, doc: YamlDoc) -> None:
        self._doc = doc
        #: Problems found while reading that do not stop the checking (duplicate keys).
        self.problems: list[Problem] = [problem(d) for d in doc.duplicates]

    def line(self, loc: Loc) -> int | None:
        """Line of the deepest known prefix of ``loc`` (the closest thing that exists)."""
        return self._doc.line(loc)


def problem(exc: YamlReadError) -> Problem:
    return Problem(exc.file, exc.line, exc.field, exc.message)


def load_yaml(path: Path) -> tuple[Any, LineMap]:
    """Read a YAML file with every guard; raise SpecError (file, line) when it cannot be used."""
    try:
        doc = read_yaml(path)
    except YamlReadError as exc:
        raise SpecError([problem(exc)]) from None
    return doc.data, LineMap(doc)


def loads_yaml(text: str, *, filename: str) -> tuple[Any, LineMap]:
    """YAML text (already read) with the same guards."""
    try:
        doc = parse(text, filename)
    except YamlReadError as exc:
        raise SpecError([problem(exc)]) from None
    return doc.data, LineMap(doc)
