"""A study's journal file checked without opening it as a storage: which line is the first
that is no journal record or that Optuna cannot replay, whether the last one is, and whether a
path may be used at all.

Reading commands (``status``, ``pareto``, ``report``, ``dashboard``) open a study's journal
without creating or changing anything: a journal that is missing, not a regular file, or a
symlink leading out of the studies folder is refused before Optuna sees it, and one that Optuna
cannot replay (a corrupt or cut line, binary garbage, an unknown op code, an edited record) is
answered with the file and the first line that is wrong. A run checks the same before it
appends to a study's default journal, so a ``journal.log`` linked to a user's file is never
written into; the storage that opens a journal names the damage with :func:`damaged_error`.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from optuna.storages import JournalStorage
from optuna.storages.journal import BaseJournalBackend

from dse.errors import Problem, StudyDamagedError
from dse.search.storage._layout import studies_root
from dse.spec.messages import short_repr

#: Optuna's journal op codes: the file format's ``JournalOperation`` values, 0 (CREATE_STUDY)
#: to 10 (DISCARD_TRIALS) (optuna/storages/journal/_storage.py, Optuna 5.1).
OP_CODES = frozenset(range(11))


def record_problem(line: bytes) -> str | None:
    """Why one journal line is no journal record, or None."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return "binary data (not UTF-8), not a JSON journal record"
    if "\x00" in text:
        return "binary data (NUL bytes), not a JSON journal record"
    try:
        record: Any = json.loads(text)
    except ValueError as exc:
        return "empty line" if not line.strip() else f"not a JSON journal record ({exc})"
    except RecursionError:  # [[[[... thousands deep: no record nests like that
        return "not a JSON journal record (nested too deeply)"
    if not isinstance(record, dict):
        return f"not a journal record (a JSON {type(record).__name__})"
    op = record.get("op_code")
    if isinstance(op, bool) or not isinstance(op, int):
        return f"record without an integer op_code (got {short_repr(op)})"
    if op not in OP_CODES:
        return f"unknown op code {op} (Optuna's journal uses {min(OP_CODES)}..{max(OP_CODES)})"
    return None


def first_damage(path: Path) -> tuple[int | None, str]:
    """The first line of the journal that is wrong and why; (None, "") when every line reads
    and replays (a torn last line, which Optuna skips, is not damage)."""
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            if not line.endswith(b"\n"):
                break  # the torn tail of an interrupted write: never acknowledged, skipped
            problem = record_problem(line)
            if problem is not None:
                return n, problem
    # every line is a record: replay them to find the first one Optuna rejects
    with open(path, "rb") as f:
        records = [json.loads(line) for line in f if line.endswith(b"\n")]
    start = 0
    lines = _Lines()
    replayed = JournalStorage(lines)
    for end in [*range(_REPLAY_CHUNK, len(records), _REPLAY_CHUNK), len(records)]:
        lines.logs.extend(records[start:end])
        try:
            replayed.get_all_studies()  # replays the records not replayed yet
        except Exception:  # noqa: BLE001 - one of this chunk's records: find which, one by one
            lines = _Lines(records[:start])
            replayed = JournalStorage(lines)
            for n in range(start, end):
                lines.logs.append(records[n])
                try:
                    replayed.get_all_studies()
                except Exception as exc:  # noqa: BLE001 - any failure is this record's
                    why = f"{type(exc).__name__}: {short_repr(exc)}"
                    return n + 1, f"record cannot be replayed ({why})"
        start = end
    return None, ""


#: Records replayed between two checks (each check copies the studies).
_REPLAY_CHUNK = 1000


class _Lines(BaseJournalBackend):
    """A journal in memory, fed one record at a time, for Optuna's own replay to judge."""

    def __init__(self, logs: list[dict[str, Any]] | None = None) -> None:
        self.logs = list(logs or [])

    def read_logs(self, log_number_from: int) -> Iterable[dict[str, Any]]:
        return self.logs[log_number_from:]

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        self.logs.extend(logs)


#: How far from the end the last complete line is looked for (a record is a few KiB).
_TAIL_BYTES = 1 << 20


def last_line_problem(path: Path) -> tuple[int, str] | None:
    """The last complete line (ending in a newline) if it is no journal record: its 1-based
    number and why. Optuna silently drops a last line it cannot parse, so a corrupt one would
    read as a missing record (a trial left RUNNING), and the next append would bury it."""
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        start = max(0, size - _TAIL_BYTES)
        f.seek(start)
        tail = f.read()
    end = tail.rfind(b"\n")
    if end < 0:
        return None  # no complete line in the tail (an empty journal, or one torn line)
    begin = tail.rfind(b"\n", 0, end) + 1
    if begin == 0 and start > 0:
        return None  # a line longer than the tail: Optuna's own replay judges it
    problem = record_problem(tail[begin : end + 1])
    if problem is None:
        return None
    with open(path, "rb") as f:  # the line's number: the newlines before it
        before = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    return before - tail[begin:].count(b"\n") + 1, problem


def damaged(path: Path | str, line: int | None, message: str) -> StudyDamagedError:
    return StudyDamagedError([Problem(str(path), line, "", message)])


def damaged_error(path: Path, exc: BaseException) -> StudyDamagedError:
    """The one-line answer for a journal Optuna failed to replay with ``exc``."""
    try:
        line, why = first_damage(path)
    except OSError as err:
        line, why = None, f"cannot be read: {err.strerror or err}"
    if not why:
        why = f"cannot be replayed ({type(exc).__name__}: {short_repr(exc)})"
    return damaged(
        path, line, f"{why}; the journal is damaged (fix or remove that line, or restore a copy)"
    )


def path_problem(
    path: Path, *, allow_outside: bool = False, check_content: bool = True
) -> str | None:
    """Why an existing journal path cannot be used (a FIFO, a folder, a symlink out of the
    studies folder, with ``check_content`` a file whose first line is no journal record), or
    None; a missing path is fine here."""
    if not os.path.lexists(path):
        return None
    try:
        real = path.resolve(strict=True)
        mode = os.stat(real).st_mode
    except (OSError, RuntimeError) as exc:  # a dangling link or a loop
        return f"cannot be used: {getattr(exc, 'strerror', None) or exc}"
    root = studies_root()
    if not allow_outside and not real.is_relative_to(root):
        what = f"is a symlink to {real}, outside" if real != path.absolute() else "is outside"
        return (
            f"{what} the studies folder {root}; refusing to use it (move the journal into the "
            "study's folder, or set 'journal_outside_studies: true' in the spec)"
        )
    if not stat.S_ISREG(mode):
        return "is not a regular file (an Optuna journal is a file of JSON lines)"
    if not check_content:  # a reader locates the damage line by line instead
        return None
    try:
        with open(real, "rb") as f:
            first = f.readline(1 << 16)
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if first and record_problem(first) is not None:
        return "is not an Optuna journal (its first line is no journal record); refusing to use it"
    try:
        last = last_line_problem(real)
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if last is not None:  # appending would bury it in the middle, where Optuna stops reading
        return f"line {last[0]} is {last[1]}; the journal is damaged (fix or remove that line)"
    return None


def check_readable(path: Path, *, allow_outside: bool) -> None:
    """A journal a reading command may open: it exists, passes :func:`path_problem`, and its
    last complete line is a record (the first damaged line is named if not)."""
    if not os.path.lexists(path):
        raise damaged(
            path,
            None,
            "the study's journal is missing (deleted or moved?); nothing to read, nothing created",
        )
    problem = path_problem(path, allow_outside=allow_outside, check_content=False)
    if problem:
        raise damaged(path, None, problem)
    try:
        last = last_line_problem(path)
    except OSError as exc:
        raise damaged(path, None, f"cannot be read: {exc.strerror or exc}") from None
    if last is not None:
        line, why = first_damage(path)  # an earlier line may be the first that is wrong
        raise damaged(
            path,
            line or last[0],
            f"{why or last[1]}; the journal is damaged (fix or remove that line, or restore a "
            "copy)",
        )
