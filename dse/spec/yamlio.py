"""Safe YAML loading that remembers the line of every key, so errors can point at it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dse.spec.errors import Problem, SpecError

Loc = tuple[str | int, ...]

#: Bounded work for any input. A spec is a few hundred nodes; these caps stop YAML bombs
#: (aliases of aliases: "billion laughs") and pathological nesting before anything is built.
MAX_FILE_BYTES = 5_000_000
MAX_NODES = 100_000  # after expanding every alias
MAX_DEPTH = 50


class LineMap:
    """Maps a field path (``("space", "x1", "low")``) to its 1-based YAML line."""

    def __init__(self, lines: dict[Loc, int], problems: list[Problem] | None = None) -> None:
        self._lines = lines
        #: Problems found while reading that do not stop the checking (duplicate keys).
        self.problems: list[Problem] = problems or []

    def line(self, loc: Loc) -> int | None:
        """Line of the deepest known prefix of ``loc`` (the closest thing that exists)."""
        loc = tuple(loc)
        while loc:
            if loc in self._lines:
                return self._lines[loc]
            loc = loc[:-1]
        return self._lines.get((), None)


def _walk(
    node: yaml.Node,
    loc: Loc,
    out: dict[Loc, int],
    *,
    filename: str,
    path: frozenset[int],
    problems: list[Problem],
) -> None:
    if id(node) in path:  # an alias inside its own anchor: the data would nest forever
        raise SpecError(
            [Problem(filename, node.start_mark.line + 1, "", "invalid YAML: recursive alias")]
        )
    path = path | {id(node)}
    out.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            if key in seen and key != "<<":
                field = ".".join(map(str, (*loc, key)))
                problems.append(
                    Problem(
                        filename,
                        key_node.start_mark.line + 1,
                        field,
                        f"duplicate key {key!r} (YAML keeps only the last one)",
                    )
                )
            seen.add(key)
            out[(*loc, key)] = key_node.start_mark.line + 1
            _walk(value_node, (*loc, key), out, filename=filename, path=path, problems=problems)
            out[(*loc, key)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, (*loc, i), out, filename=filename, path=path, problems=problems)


def load_yaml(path: Path) -> tuple[Any, LineMap]:
    """Load a YAML file with the safe loader; raise SpecError with a line on syntax errors."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise SpecError(
                [Problem(str(path), None, "", f"file is larger than {MAX_FILE_BYTES:,} bytes")]
            )
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError([Problem(str(path), None, "", "file not found")]) from None
    except (IsADirectoryError, UnicodeDecodeError, PermissionError) as exc:
        raise SpecError([Problem(str(path), None, "", f"cannot read: {exc}")]) from None
    return loads_yaml(text, filename=str(path))


def _bounds_problem(text: str, filename: str) -> Problem | None:
    """Walk the YAML event stream (no recursion, nothing built) and measure what loading it
    would make: nesting depth, and node count with every alias expanded."""
    sizes: dict[str, int] = {}  # anchor -> expanded node count of its node
    stack: list[list[Any]] = []  # open collections: [anchor, expanded node count]
    total = 0
    for ev in yaml.parse(text, Loader=yaml.SafeLoader):
        line = ev.start_mark.line + 1 if ev.start_mark else None
        if isinstance(ev, yaml.CollectionStartEvent):
            if len(stack) >= MAX_DEPTH:
                return Problem(
                    filename, line, "", f"invalid YAML: nested deeper than {MAX_DEPTH} levels"
                )
            stack.append([ev.anchor, 1])
            total += 1
        elif isinstance(ev, yaml.CollectionEndEvent):
            anchor, n = stack.pop()
            if anchor is not None:
                sizes[anchor] = n
            if stack:
                stack[-1][1] += n
        elif isinstance(ev, yaml.ScalarEvent | yaml.AliasEvent):
            if isinstance(ev, yaml.AliasEvent):
                if any(frame[0] == ev.anchor for frame in stack):
                    return Problem(filename, line, "", "invalid YAML: recursive alias")
                n = sizes.get(ev.anchor, 1)  # unknown anchors: the composer says so
            else:
                n = 1
                if ev.anchor is not None:
                    sizes[ev.anchor] = 1
            total += n
            if stack:
                stack[-1][1] += n
        if total > MAX_NODES:
            return Problem(
                filename,
                line,
                "",
                f"invalid YAML: more than {MAX_NODES:,} values once aliases are expanded "
                "(a spec needs a few hundred; is an alias repeated inside another?)",
            )
    return None


def loads_yaml(text: str, *, filename: str) -> tuple[Any, LineMap]:
    if len(text) > MAX_FILE_BYTES:
        raise SpecError(
            [Problem(filename, None, "", f"file is larger than {MAX_FILE_BYTES:,} bytes")]
        )
    try:
        bounds = _bounds_problem(text, filename)
        if bounds is not None:
            raise SpecError([bounds])
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context = getattr(exc, "context", None)
        msg = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
        raise SpecError([Problem(filename, line, "", msg)]) from None
    lines: dict[Loc, int] = {}
    problems: list[Problem] = []
    if node is not None:
        _walk(node, (), lines, filename=filename, path=frozenset(), problems=problems)
    return data, LineMap(lines, problems)
