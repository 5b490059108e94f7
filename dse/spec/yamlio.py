"""Reading a YAML file for the engine (specs, lock files) with the line of every key, so errors
can point at it. The guards themselves (file type, byte cap, encoding, depth, aliases,
duplicate keys) are the distribution's one reader, :mod:`dse.spec.safe_yaml`, which the
preset loader uses too; this module turns its errors into :class:`SpecError` problems."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dse.errors import Problem, SpecError, YamlReadError
from dse.spec.safe_yaml import Loc, YamlDoc, parse, read_yaml

__all__ = ["Loc", "load_yaml", "loads_yaml"]


def load_yaml(path: Path) -> tuple[Any, YamlDoc]:
    """Read a YAML file with every guard; raise SpecError (file, line) when it cannot be used."""
    return loads_yaml(None, filename=str(path))


def loads_yaml(text: str | None, *, filename: str) -> tuple[Any, YamlDoc]:
    """YAML text (already read; None: read ``filename``) with the same guards."""
    try:
        doc = read_yaml(filename) if text is None else parse(text, filename)
    except YamlReadError as exc:
        raise SpecError([Problem(exc.file, exc.line, exc.field, exc.message)]) from None
    return doc.data, doc
