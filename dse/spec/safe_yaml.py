"""The one guarded YAML reader: every YAML file the tool reads (specs, presets, lock files).

A YAML file is user input, so reading one is bounded work whatever it holds: regular files
only, read with a byte cap (``stat()`` says 0 bytes for ``/dev/zero``, a FIFO or ``/proc``),
strict UTF-8, no character YAML forbids (NUL), nesting depth and alias expansion measured on
the event stream before anything is built (no RecursionError, no "billion laughs"), the safe
loader only, and duplicate keys reported (YAML keeps the last silently). Every problem names
the file and, where it has one, the line.

It lives in the engine, which never imports the domain; the domain's preset loader imports it
(plain YAML, with no other import from ``dse``). ``dse.spec.yamlio`` turns its errors into spec
problems, the preset loader into preset problems.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any

import yaml

from dse.errors import Problem, YamlReadError

Loc = tuple[str | int, ...]

#: Bounded work for any input. A spec or preset file is a few hundred nodes, a lock file a few
#: thousand; these caps stop YAML bombs and pathological nesting before anything is built.
MAX_FILE_BYTES = 5_000_000
MAX_NODES = 100_000  # after expanding every alias
MAX_DEPTH = 50

#: Characters YAML 1.1 does not allow in a stream (PyYAML's reader rejects them, without a line).
_FORBIDDEN = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class YamlDoc:
    """A parsed file: its data, the line of every key and item, and its duplicate keys."""

    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)
    duplicates: list[YamlReadError] = field(default_factory=list)

    def line(self, loc: Loc) -> int | None:
        """Line of the deepest known prefix of ``loc`` (the closest thing that exists)."""
        loc = tuple(loc)
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return self.lines.get(())

    @property
    def problems(self) -> list[Problem]:
        """The duplicate keys, as problems that do not stop the checking."""
        return [Problem(d.file, d.line, d.field, d.message) for d in self.duplicates]


_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


#: libyaml's parser when PyYAML was built with it (the wheels are): ~10x faster than the pure
#: Python one, and every `dse evaluate`, worker and validate reads the package's presets
#: through here (benchmarks/bench_startup.py). Same safe constructor and resolver.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_bytes(path: str | os.PathLike[str], *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file, at most ``max_bytes`` (more is an error, never read whole).

    Opened without blocking (a FIFO with no writer must not hang the open), then checked on the
    open descriptor, so the file checked is the file read."""
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise YamlReadError(name, None, "file not found") from None
    except OSError as exc:  # a symlink loop, no permission, a name too long
        raise YamlReadError(name, None, f"cannot read: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
            raise YamlReadError(name, None, f"is {kind}, not a regular file; give a YAML file")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:  # EIO, a file that is a folder on some systems
        raise YamlReadError(name, None, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > max_bytes:
        raise YamlReadError(name, None, f"file is larger than {max_bytes:,} bytes")
    return b"".join(chunks)


def decode(raw: bytes, filename: str) -> str:
    """Strict UTF-8 (a leading byte-order mark allowed); a bad byte is reported with its line."""
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise YamlReadError(
            filename,
            line,
            f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at column {column} "
            "(save the file as UTF-8)",
        ) from None


def _line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _check_characters(text: str, filename: str) -> None:
    bad = _FORBIDDEN.search(text)
    if bad is not None:
        ch = bad.group()
        what = "a NUL byte" if ch == "\0" else f"the control character U+{ord(ch):04X}"
        raise YamlReadError(
            filename, _line_at(text, bad.start()), f"invalid YAML: {what} is not allowed in YAML"
        )


def _check_bounds(text: str, filename: str) -> None:
    """Walk the event stream (no recursion, nothing built) and measure what loading it would
    make: nesting depth, and node count with every alias expanded."""
    sizes: dict[str, int] = {}  # anchor -> expanded node count of its node
    stack: list[list[Any]] = []  # open collections: [anchor, expanded node count]
    total = 0
    for ev in yaml.parse(text, Loader=_LOADER):
        line = ev.start_mark.line + 1 if ev.start_mark else None
        if isinstance(ev, yaml.CollectionStartEvent):
            if len(stack) >= MAX_DEPTH:
                raise YamlReadError(
                    filename, line, f"invalid YAML: nested deeper than {MAX_DEPTH} levels"
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
                    raise YamlReadError(filename, line, "invalid YAML: recursive alias")
                n = sizes.get(ev.anchor or "", 1)  # unknown anchors: the composer says so
            else:
                n = 1
                if ev.anchor is not None:
                    sizes[ev.anchor] = 1
            total += n
            if stack:
                stack[-1][1] += n
        if total > MAX_NODES:
            raise YamlReadError(
                filename,
                line,
                f"invalid YAML: more than {MAX_NODES:,} values once aliases are expanded "
                "(is an alias repeated inside another?)",
            )


def _walk(
    node: yaml.Node,
    loc: Loc,
    lines: dict[Loc, int],
    duplicates: list[YamlReadError],
    filename: str,
) -> None:
    """The line of ``node`` and of everything in it (an alias's content at each place it is
    used), and its duplicate keys; recursive aliases were refused by :func:`_check_bounds`."""
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            if key in seen and key != "<<":
                duplicates.append(
                    YamlReadError(
                        filename,
                        key_node.start_mark.line + 1,
                        f"duplicate key {key!r} (YAML keeps only the last one)",
                        field=".".join(map(str, (*loc, key))),
                    )
                )
            seen.add(key)
            lines[(*loc, key)] = key_node.start_mark.line + 1
            _walk(value_node, (*loc, key), lines, duplicates, filename)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, (*loc, i), lines, duplicates, filename)


def parse(text: str, filename: str) -> YamlDoc:
    """Parse YAML text with every guard but the file's own (size cap included)."""
    if len(text) > MAX_FILE_BYTES:
        raise YamlReadError(filename, None, f"file is larger than {MAX_FILE_BYTES:,} bytes")
    _check_characters(text, filename)
    try:
        _check_bounds(text, filename)
        loader = _LOADER(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context = getattr(exc, "context", None)
        msg = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
        if "maximum nesting depth" in str(problem):  # libyaml's own limit, met while scanning
            msg = f"invalid YAML: nested deeper than {MAX_DEPTH} levels"
        raise YamlReadError(filename, line, msg) from None
    except RecursionError:  # guarded above; a last line of defence, never a traceback
        raise YamlReadError(filename, None, "invalid YAML: nested too deeply") from None
    lines: dict[Loc, int] = {}
    duplicates: list[YamlReadError] = []
    if node is not None:
        _walk(node, (), lines, duplicates, filename)
    return YamlDoc(data, lines, duplicates)


def read_yaml(path: str | os.PathLike[str]) -> YamlDoc:
    """Read and parse one YAML file with every guard; raises YamlReadError."""
    name = os.fspath(path)
    return parse(decode(read_bytes(name), name), name)
