"""The CLI's two consoles and its verbosity (``-q``/``-v``), shared by every command.

rich's console is imported at the first print through one of them; tables, progress bars and
everything below ``dse.cli`` are imported by the command that needs them, so ``dse --help``
stays cheap.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "INTERRUPTED",
    "Verbosity",
    "err",
    "note",
    "optuna_logging",
    "out",
    "progress_line",
    "verbosity",
]


class _LazyConsole:
    """A rich Console made at its first use: a command that prints only JSON or plain lines
    (``dse evaluate --json``) never imports rich (~25 ms of its start-up)."""

    def __init__(self, make: Any) -> None:
        self._make = make
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            self._console = self._make()
        return getattr(self._console, name)


def _out() -> Console:
    from rich.console import Console

    # Pipes and CI logs get a wide console so tables keep whole metric names. rich honours
    # NO_COLOR (no colour, styles kept) and FORCE_COLOR itself.
    return Console(soft_wrap=True, width=None if sys.stdout.isatty() else 200)


def _err() -> Console:
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True)


out: Console = _LazyConsole(_out)  # type: ignore[assignment]
err: Console = _LazyConsole(_err)  # type: ignore[assignment]


@dataclass
class Verbosity:
    """``-q`` hides progress bars and notes; ``-v`` adds Optuna's INFO log."""

    level: int = 0

    @property
    def quiet(self) -> bool:
        return self.level < 0


verbosity = Verbosity()

#: What an interrupted command says (exit 130): every run resumes where it stopped.
INTERRUPTED = "interrupted; re-run the same command to resume"


def note(text: str) -> None:
    """An informational line on stderr (not a result): hidden by ``-q``."""
    if not verbosity.quiet:
        err.print(text, markup=False, highlight=False)


def progress_line(text: str) -> None:
    """A progress line for logs (stderr, flushed at once), hidden by ``-q``."""
    if not verbosity.quiet:
        print(text, file=sys.stderr, flush=True)


def optuna_logging() -> None:
    """Optuna's log level for this process: WARNING, or INFO with ``-v``.

    Set here, by the commands that run Optuna, and never by ``dse.api``: a library must not
    change a host program's logging."""
    import optuna

    level = optuna.logging.INFO if verbosity.level > 0 else optuna.logging.WARNING
    optuna.logging.set_verbosity(level)
