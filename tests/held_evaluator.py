"""An evaluator that holds a `dse` process inside itself until the test lets it go.

A test that interrupts a run or a sweep must know it is still running, on a machine however
busy: timing cannot tell (a sweep of 200,640 designs takes about a second on an idle core, and
a starved test once saw it finish before its Ctrl-C). The held evaluator says so itself: on
its ``at``-th call in a process it writes the ``running`` file (its pid) and waits until the
``release`` file exists, at most ``HOLD_S`` seconds, so that a lost Ctrl-C shows as a run that
finishes (exit 0), never as a hang. Only a process started by a shell or ``dse run --jobs``
holds (``multiprocessing.parent_process() is None``): not a sweep's worker processes, nor the
child that probes the evaluator while the spec loads.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.conftest import ROOT, SPACES

#: The longest a held process waits for the release file.
HOLD_S = 60

HELD_MODULE = """
import multiprocessing
import os
import time
from pathlib import Path

import numpy as np

RUNNING = Path({running!r})
RELEASE = Path({release!r})
_calls = [0]


def hold(design):
    _calls[0] += 1
    if _calls[0] == {at} and multiprocessing.parent_process() is None and not RELEASE.exists():
        RUNNING.write_text(str(os.getpid()))
        deadline = time.monotonic() + {hold_s}
        while not RELEASE.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    return {{"held": np.zeros(np.shape(design["die_area_mm2"]))}}


hold.vectorized = True
hold.metrics = {{"held": ("-", "always 0; holds the process until the test releases it")}}
"""


@dataclass
class Held:
    """A spec whose ``held`` evaluator holds a process, and the files that talk to it."""

    spec: Path
    running: Path
    release: Path

    def wait_running(self, proc: subprocess.Popen[str], timeout: float = 300) -> int:
        """The pid of the process held inside the evaluator, once one is."""
        deadline = time.monotonic() + timeout
        while not self.running.exists():
            if proc.poll() is not None:
                raise AssertionError(f"dse exited ({proc.returncode}) before the evaluator held")
            if time.monotonic() > deadline:
                raise AssertionError(f"no process held in the evaluator after {timeout} s")
            time.sleep(0.02)
        time.sleep(0.05)  # the pid is written whole
        return int(self.running.read_text())

    def let_go(self) -> None:
        self.release.touch()


def held_spec(
    folder: Path, *, name: str, space: dict | None = None, at: int = 3, search: dict | None = None
) -> Held:
    """The litegpu spec (with ``space`` and ``search`` overrides) plus the held evaluator,
    holding on its ``at``-th call in a process; everything in ``folder / name``."""
    where = folder / name
    where.mkdir()
    held = Held(where / f"{name}.yaml", where / "running", where / "release")
    module = f"held_{name}"
    (where / f"{module}.py").write_text(
        HELD_MODULE.format(
            running=str(held.running), release=str(held.release), at=at, hold_s=HOLD_S
        )
    )
    raw = yaml.safe_load((SPACES / "litegpu.yaml").read_text())
    raw["study"] = name
    if space is not None:
        raw["space"] = space
    raw["search"].update(search or {})
    raw["evaluators"] = ["cost", "perf", "availability", {"held": f"{module}:hold"}]
    held.spec.write_text(yaml.safe_dump(raw, sort_keys=False))
    return held


def start_dse(args: list[str], *, group: bool = False) -> subprocess.Popen[str]:
    """A `dse` process that Ctrl-C (SIGINT) stops, as a terminal's foreground job; ``group``:
    in a process group of its own, which ``os.killpg`` reaches as a terminal's Ctrl-C does.

    A signal ignored when a program starts stays ignored, and a shell without job control (CI
    scripts, ``pytest ... &``) starts background commands with SIGINT ignored: a `dse` started
    from such a pytest would ignore the test's SIGINT, as it should (``nohup``), and finish with
    exit 0. A handler, unlike ``SIG_IGN``, does not outlive ``exec``: the child starts with
    SIGINT at its default, whatever this process inherited.
    """
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(
            [str(Path(sys.executable).parent / "dse"), *args],
            cwd=ROOT,
            env=dict(os.environ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=group,
        )
    finally:
        if previous is signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
