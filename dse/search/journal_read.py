"""A recorded study's journal file, checked before it is opened, and its damage located.

Reading commands (``status``, ``pareto``, ``report``, ``dashboard``) open a study's journal
without creating or changing anything: a journal that is missing, not a regular file, or a
symlink leading out of the studies folder is refused before Optuna sees it, and one that Optuna
cannot replay (a corrupt or cut line, binary garbage, an unknown op code, an edited record) is
answered with the file and the first line that is wrong. A run checks the same before it
appends to a study's default journal, so a ``journal.log`` linked to a user's file is never
written into.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dse.search.journal_lines import damaged as _damaged
from dse.search.journal_lines import first_damage, last_line_problem, record_problem
from dse.search.storage import studies_root


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
        raise _damaged(
            path,
            None,
            "the study's journal is missing (deleted or moved?); nothing to read, nothing created",
        )
    problem = path_problem(path, allow_outside=allow_outside, check_content=False)
    if problem:
        raise _damaged(path, None, problem)
    try:
        last = last_line_problem(path)
    except OSError as exc:
        raise _damaged(path, None, f"cannot be read: {exc.strerror or exc}") from None
    if last is not None:
        line, why = first_damage(path)  # an earlier line may be the first that is wrong
        raise _damaged(
            path,
            line or last[0],
            f"{why or last[1]}; the journal is damaged (fix or remove that line, or restore a "
            "copy)",
        )
