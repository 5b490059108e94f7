"""The CLI's two consoles and its verbosity (``-q``/``-v``), shared by every command.

Only rich's console is imported here: tables, progress bars and everything below ``dse.cli``
are imported by the command that needs them, so ``dse --help`` stays cheap.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from rich.console import Console

# Pipes and CI logs get a wide console so tables keep whole metric names. rich honours
# NO_COLOR (no colour, styles kept) and FORCE_COLOR itself.
out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, soft_wrap=True)


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
