"""Where preset files are found, and reading them with the line of every key.

Presets are searched in order: a ``presets/`` folder beside the spec, the folders in
``$DSE_PRESETS`` (separated by ``os.pathsep``), then the built-ins shipped in this package. A
user folder holds any of ``gpus.yaml``, ``models.yaml`` and ``technology.yaml`` (or
``technology/*.yaml``), in the same format as the built-ins; a preset of the same name as a
built-in shadows it. See docs/presets.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

ENV_VAR = "DSE_PRESETS"
SPEC_FOLDER = "presets"

Loc = tuple[str, ...]


@dataclass(frozen=True)
class PresetFile:
    """One preset YAML file: its data and the line of every mapping key (1-based)."""

    path: str
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)

    def line(self, loc: Loc) -> int | None:
        """The line of ``loc``, or of its nearest ancestor that has one."""
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return None


def _lines(node: yaml.Node, prefix: Loc, out: dict[Loc, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            loc = (*prefix, str(key.value))
            out[loc] = key.start_mark.line + 1
            _lines(value, loc, out)


def parse(text: str, path: str) -> PresetFile:
    """Parse one preset file; a YAML error becomes a PresetError naming its line."""
    from objectives.presets.schema import PresetError, PresetProblem

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise PresetError([PresetProblem(path, line, "", f"not valid YAML: {problem}")]) from None
    lines: dict[Loc, int] = {}
    if node is not None:
        _lines(node, (), lines)
    return PresetFile(path=path, data=data if data is not None else {}, lines=lines)


def search_dirs(spec_dir: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """User preset folders, most specific first: beside the spec, then ``$DSE_PRESETS``."""
    dirs: list[str] = []
    if spec_dir is not None:
        beside = Path(spec_dir) / SPEC_FOLDER
        if beside.is_dir():
            dirs.append(str(beside.resolve()))
    for entry in os.environ.get(ENV_VAR, "").split(os.pathsep):
        if entry.strip():
            p = str(Path(entry).expanduser().resolve())
            if p not in dirs:
                dirs.append(p)
    return tuple(dirs)


def builtin_files(kind: str) -> list[PresetFile]:
    """The package's own files of one kind (``gpus``, ``models``, ``workload``, ``technology``)."""
    root = resources.files("objectives.presets")
    if kind == "technology":
        folder = root.joinpath("technology")
        names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".yaml"))
        return [
            parse(folder.joinpath(n).read_text(encoding="utf-8"), str(folder.joinpath(n)))
            for n in names
        ]
    name = f"{kind}.yaml"
    return [parse(root.joinpath(name).read_text(encoding="utf-8"), str(root.joinpath(name)))]


def user_files(folder: str, kind: str) -> Iterator[PresetFile]:
    """A user folder's files of one kind (any that exist)."""
    base = Path(folder)
    candidates = [base / f"{kind}.yaml"]
    if kind == "technology":
        candidates += sorted((base / "technology").glob("*.yaml"))
    for path in candidates:
        if path.is_file():
            yield parse(path.read_text(encoding="utf-8"), str(path))
