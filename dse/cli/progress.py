"""Progress of a long command: a rich bar on a terminal, a plain line every few seconds in a log.

A redirected rich bar prints nothing until it ends, so a job's log would stay silent for
minutes; the plain lines say how far it is and how long it has run. ``DSE_PROGRESS_EVERY_S``
sets their interval (default 5 s; 0 prints every update).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from dse.cli.console import err, progress_line, verbosity

__all__ = ["EVERY_S", "Progress"]

EVERY_S = 5.0


def _every_s() -> float:
    try:
        return max(float(os.environ.get("DSE_PROGRESS_EVERY_S", EVERY_S)), 0.0)
    except ValueError:
        return EVERY_S


class Progress:
    """``update(done, total=None, **fields)``; ``fields`` name counters such as ``front``."""

    def __init__(
        self,
        description: str,
        *,
        total: int | None,
        fields: dict[str, Any],
        enabled: bool = True,
        auto_refresh: bool = True,
    ) -> None:
        self.description = description
        self.total = total
        self.fields = dict(fields)
        self.enabled = enabled and not verbosity.quiet
        self.done = 0
        self._done0 = 0
        self._bar: Any = None
        self._last = 0.0
        self._t0 = time.monotonic()
        self._started = False
        if self.enabled and sys.stderr.isatty():
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as Bar

            text = "  ".join(f"{k} {{task.fields[{k}]}}" for k in fields)
            self._bar = Bar(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(text),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=err,
                auto_refresh=auto_refresh,
            )
            self._task = self._bar.add_task(description, total=total, **fields)

    def start(self, done: int = 0) -> None:
        self.done = done
        self._done0 = done
        self._started = True
        self._t0 = time.monotonic()
        self._last = -float("inf")  # the first update prints at once: it carries the rate
        if self._bar is not None:
            self._bar.update(self._task, completed=done)
            self._bar.start()

    def update(self, done: int, *, total: int | None = None, **fields: Any) -> None:
        if not self._started:
            self.start(0)
        self.done = done
        if total is not None:
            self.total = total
        self.fields.update(fields)
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=self.total, refresh=True, **fields)
            return
        now = time.monotonic()
        if self.enabled and now - self._last >= _every_s():
            self._last = now
            progress_line(self.line(now - self._t0))

    def line(self, elapsed_s: float) -> str:
        of = f"/{self.total:,}" if self.total else ""
        extra = "".join(f", {k} {v:,}" if isinstance(v, int) else f", {k} {v}"
                        for k, v in self.fields.items())  # fmt: skip
        line = f"{self.description}: {self.done:,}{of} done{extra}; {elapsed_s:.0f} s elapsed"
        left = (self.total or 0) - self.done
        if left > 0 and self.done > self._done0 and elapsed_s > 0:
            rate = (self.done - self._done0) / elapsed_s
            line += f", about {left / rate:.0f} s to go"
        return line

    def stop(self) -> None:
        if self._bar is not None and self._started:
            self._bar.stop()
        self._started = False
