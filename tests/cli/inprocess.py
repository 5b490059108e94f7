"""Running ``dse`` through its console script's entry point inside the test process.

A refused command does all of its work in parsing and checking, which is the same code in this
process as in a fresh one; what a subprocess adds is ~1.5 s of interpreter start-up and imports
per case. Corpus files run their bulk here and keep a sample of each class as real processes
(``tests.conftest.run_dse``) to prove the process behaves the same.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: One call at a time: the working folder, environment, argv and standard streams are the
#: process's own.
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _environ(env: dict[str, str | None]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in env}
    try:
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_in_process(*args: str, cwd: Path, env: dict[str, str | None] | None = None) -> Result:
    """``dse ARGS`` in ``cwd`` with ``env`` added (None removes a variable): its exit code and
    what it wrote to stdout and stderr."""
    from dse.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    code: int = 0
    with _LOCK, _environ(env or {}):
        here, argv = os.getcwd(), sys.argv
        os.chdir(cwd)
        sys.argv = ["dse", *args]
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:  # what the interpreter would print before exiting 1
            stderr.write(traceback.format_exc())
            code = 1
        finally:
            sys.argv = argv
            os.chdir(here)
    return Result(code, stdout.getvalue(), stderr.getvalue())
