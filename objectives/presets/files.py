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

from dse.errors import YamlReadError
from dse.spec import safe_yaml
from dse.spec.safe_yaml import YamlDoc
from objectives.presets.schema import PresetError, PresetProblem

ENV_VAR = "DSE_PRESETS"
SPEC_FOLDER = "presets"

Loc = tuple[str | int, ...]


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
        return self.lines.get(())  # the file as a whole: where its data starts


def _refused(problems: list[YamlReadError]) -> PresetError:
    return PresetError([PresetProblem(p.file, p.line, p.field, p.message) for p in problems])


def _preset_file(doc: YamlDoc, path: str) -> PresetFile:
    if doc.duplicates:  # a preset file is data: a key written twice is never what was meant
        raise _refused(doc.duplicates)
    return PresetFile(path=path, data=doc.data if doc.data is not None else {}, lines=doc.lines)


def parse(text: str, path: str) -> PresetFile:
    """Parse one preset file's text with the guarded reader; problems become a PresetError
    naming the file and line."""
    try:
        return _preset_file(safe_yaml.parse(text, path), path)
    except YamlReadError as exc:
        raise _refused([exc]) from None


def read(path: str | os.PathLike[str]) -> PresetFile:
    """Read one preset file (a regular file, bounded, UTF-8) with the guarded reader."""
    name = os.fspath(path)
    try:
        return _preset_file(safe_yaml.read_yaml(name), name)
    except YamlReadError as exc:
        raise _refused([exc]) from None


def search_dirs(spec_dir: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """User preset folders, most specific first: beside the spec, then ``$DSE_PRESETS``."""
    dirs: list[str] = []
    if spec_dir is not None:
        beside = Path(spec_dir) / SPEC_FOLDER
        if beside.is_dir():
            dirs.append(str(beside.resolve()))
    for entry in os.environ.get(ENV_VAR, "").split(os.pathsep):
        if entry.strip():
            try:
                p = str(Path(entry).expanduser().resolve())
            except (RuntimeError, OSError) as exc:  # ~unknown-user, a symlink loop
                raise PresetError(
                    [PresetProblem(entry, None, "", f"${ENV_VAR} names it, but {exc}")]
                ) from None
            if not os.path.isdir(p):
                what = "does not exist" if not os.path.lexists(p) else "is not a folder"
                raise PresetError(
                    [PresetProblem(entry, None, "", f"${ENV_VAR} names it, but it {what}")]
                )
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
        if os.path.lexists(path):  # a folder, FIFO or broken link by that name is refused
            yield read(path)
