"""The evaluator probe in this process (``dse evaluate``) and in a child (everything else).

``dse evaluate`` evaluates its design in its own process right after the probe, so the probe's
child would guard nothing and cost a fork per evaluator; every other command keeps the child
and its time limit (a hanging or exiting evaluator is told, not waited for).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dse.model.isolation import ExitCalled
from dse.model.probe import ProbeFailed, probe
from tests.cli.inprocess import run_in_process

EVALUATOR = """\
import os


def f(design):
    with open(os.environ["PIDS_FILE"], "a") as fh:
        fh.write(f"{os.getpid()}\\n")
    return {"a": float(design["x"])}
"""
SPEC = """\
study: inline
space:
  x: {type: float, low: 0, high: 1}
evaluators:
  m: m:f
objectives:
  - {metric: m.a, direction: minimize}
search: {sampler: random, trials: 3, seed: 0}
"""


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "m.py").write_text(EVALUATOR)
    (tmp_path / "spec.yaml").write_text(SPEC)
    return tmp_path


@pytest.mark.slow
def test_evaluate_probes_and_evaluates_in_its_own_process(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    res = run_in_process(
        "evaluate",
        "spec.yaml",
        "--set",
        "x=0.5",
        cwd=_folder(tmp_path),
        env={"PIDS_FILE": str(pids)},
    )
    assert res.returncode == 0, res.stderr
    seen = pids.read_text().split()
    assert len(seen) == 2 and set(seen) == {str(os.getpid())}  # the probe, then the design


@pytest.mark.slow
def test_validate_still_probes_in_a_child(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    res = run_in_process(
        "validate", "spec.yaml", cwd=_folder(tmp_path), env={"PIDS_FILE": str(pids)}
    )
    assert res.returncode == 0, res.stderr
    (seen,) = pids.read_text().split()
    assert seen != str(os.getpid())


def _interrupt(design: dict) -> dict:
    raise KeyboardInterrupt


def _exits(design: dict) -> dict:
    os._exit(3)


def _returns_text(design: dict) -> object:
    return "not a mapping"


def test_inline_ctrl_c_stops_the_probe() -> None:
    with pytest.raises(KeyboardInterrupt):
        probe(_interrupt, {"x": 1.0}, batch=None, timeout_s=None, inline=True)


def test_inline_os_exit_fails_the_probe_not_the_process() -> None:
    with pytest.raises(ExitCalled, match=r"os\._exit\(3\)"):
        probe(_exits, {"x": 1.0}, batch=None, timeout_s=None, inline=True)


def test_inline_answers_are_checked_as_in_the_child() -> None:
    for inline in (True, False):
        with pytest.raises(ProbeFailed, match="returned str 'not a mapping'"):
            probe(_returns_text, {"x": 1.0}, batch=None, timeout_s=5, inline=inline)
