"""A trial's failure stays the trial's: exceptions, non-finite or oversized values, a missing
metric, a failing constraint and a time-out each fail one trial with its reason, and the study
(and every re-run) goes on. Real ``dse`` processes on real journal files."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import run_dse

FAULTY = '''
import math


def faulty(design):
    """One kind of fault per value of ``a``; ``b`` makes designs distinct."""
    a, b = int(design["a"]), float(design["b"])
    if a == 1:
        raise RuntimeError("simulator crashed")
    if a == 2:
        return {"x": math.inf, "y": 1.0, "z": 1.0}
    if a == 3:
        return {"x": 10**400, "y": 1.0, "z": 1.0}
    if a == 4:
        return {"y": 1.0, "z": 1.0}  # the objective metric is missing
    if a == 5:  # the constraint cannot be evaluated: 0 / 0, or a metric it names is missing
        return {"x": b, "y": 0.0, "z": 0.0} if b < 0.5 else {"x": b, "y": 1.0}
    if a == 6:
        return {"x": float(sum(range(10**13))), "y": 1.0, "z": 1.0}  # hangs, GIL held
    return {"x": b, "y": 2.0 - b, "z": 1.0}
'''

REASONS = {
    1: "RuntimeError: simulator crashed",
    2: "not finite",
    3: "too large for a float",
    4: "returned no 'f.x'",
    5: "constraint 'f.y / f.z <= 10'",
    6: "timed out after 0.5 s",
}


def faulty_spec(tmp_path: Path, *, trials: int, timeout_s: float | None, hang: bool) -> Path:
    (tmp_path / "faultymod.py").write_text(FAULTY)
    search: dict = {"sampler": "random", "trials": trials, "seed": 1}
    if timeout_s is not None:
        search["trial_timeout_s"] = timeout_s
    data = {
        "study": "faults",
        "space": {
            "a": {"type": "categorical", "choices": list(range(7 if hang else 6))},
            "b": {"type": "float", "low": 0.0, "high": 1.0},
        },
        "evaluators": {"f": "faultymod:faulty"},
        "objectives": [
            {"metric": "f.x", "direction": "minimize"},
            {"metric": "f.y", "direction": "minimize"},
        ],
        "constraints": ["f.y / f.z <= 10"],
        "search": search,
    }
    path = tmp_path / "faults.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _check_records(studies_dir: Path, trials: int, kinds: range) -> pd.DataFrame:
    t = pd.read_csv(studies_dir / "faults" / "trials.csv")
    assert len(t) == trials
    assert set(t["state"]) <= {"COMPLETE", "FAIL"}
    for a in kinds:
        rows = t[t["params.a"] == a]
        assert len(rows), f"no trial drew a={a}; pick another seed"
        if a == 0:
            assert (rows["state"] == "COMPLETE").all()
            continue
        assert (rows["state"] == "FAIL").all(), rows
        assert rows["fail_reason"].str.contains(REASONS[a], regex=False).all(), rows[
            "fail_reason"
        ].tolist()
    return t


@pytest.mark.parametrize("timeout_s", [None, 30.0], ids=["in-process", "deadline-child"])
def test_every_fault_fails_its_trial_and_the_study_goes_on(
    tmp_path: Path, studies_dir: Path, timeout_s: float | None
) -> None:
    env = {"DSE_STUDIES_DIR": str(studies_dir)}
    spec = faulty_spec(tmp_path, trials=36, timeout_s=timeout_s, hang=False)
    res = run_dse("run", str(spec), "--no-progress", env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    _check_records(studies_dir, 36, range(6))
    # Re-runs work too (the issue: every re-run died on the same trial).
    res = run_dse("run", str(spec), "--no-progress", "--trials", "48", env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    _check_records(studies_dir, 48, range(6))


def test_hanging_evaluator_times_out_and_is_not_requeued(
    tmp_path: Path, studies_dir: Path
) -> None:
    env = {"DSE_STUDIES_DIR": str(studies_dir)}
    spec = faulty_spec(tmp_path, trials=28, timeout_s=0.5, hang=True)
    res = run_dse("run", str(spec), "--no-progress", env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    t = _check_records(studies_dir, 28, range(7))
    hung = t[t["params.a"] == 6]
    # Each hang costs its 0.5 s time-out, not the hours the sum would take: measured per trial
    # from the records, so a busy machine's slow start-up does not count (120 s: a kill and a
    # fork on a machine with a load of 15 still fit, and the hang would take hours).
    assert (hung["duration_s"] >= 0.5).all() and (hung["duration_s"] < 120).all(), hung
    res = run_dse("run", str(spec), "--no-progress", "--trials", "40", env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    t2 = pd.read_csv(studies_dir / "faults" / "trials.csv")
    assert len(t2) == 40
    # A timed-out design is final: the resume did not queue it again.
    again = t2[t2["params.b"].isin(hung["params.b"])]
    assert len(again) == len(hung)
    assert (t2["state"] != "WAITING").all()


def test_validate_probe_is_bounded_by_trial_timeout(tmp_path: Path) -> None:
    (tmp_path / "hangmod.py").write_text(
        textwrap.dedent("""
        def hang(design):
            return {"x": float(sum(range(10**13)))}
        """)
    )
    spec = tmp_path / "hang.yaml"
    spec.write_text(
        textwrap.dedent("""
        study: hang
        space:
          a: {type: float, low: 0, high: 1}
        evaluators:
          h: hangmod:hang
        objectives:
          - {metric: h.x, direction: minimize}
        search: {sampler: random, trials: 5, trial_timeout_s: 1}
        """)
    )
    # The sum takes hours: an answer at all (within the process's 300 s) is the bound, and the
    # message says which one held (no wall-clock figure, which a busy machine stretches).
    res = run_dse("validate", str(spec), timeout=300)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "timed out after 1 s (search.trial_timeout_s)" in res.stderr
    assert "hang.yaml:" in res.stderr and "Traceback" not in res.stderr


def test_trial_timeout_must_be_a_positive_finite_number(tmp_path: Path) -> None:
    for bad in ("0", "-1", ".inf", "'soon'"):
        spec = tmp_path / "t.yaml"
        spec.write_text(
            "study: t\nspace:\n  die_area_mm2: {type: float, low: 100, high: 800}\n"
            "objectives:\n  - {metric: cost.tco_usd, direction: minimize}\n"
            f"search: {{sampler: random, trials: 5, trial_timeout_s: {bad}}}\n"
        )
        res = run_dse("validate", str(spec), timeout=60)
        assert res.returncode == 2, (bad, res.stdout, res.stderr)
        assert "trial_timeout_s" in res.stderr and "Traceback" not in res.stderr


EXITING = """
import os
import sys


def f(design):
    x = float(design["x"])
    if x > 0.8:  # the probe's midpoint (0.5) passes; some designs of the run do not
        {how}
    return {{"a": x, "b": (1 - x) ** 2}}
"""
EXITING_SPEC = """\
study: exiting
space:
  x: {{type: float, low: 0, high: 1}}
evaluators:
  e: exiting_mod:f
objectives:
  - {{metric: e.a, direction: minimize}}
  - {{metric: e.b, direction: minimize}}
search: {{sampler: random, trials: 20, seed: 0{timeout}}}
"""


@pytest.mark.parametrize(
    ("how", "timeout", "reason"),
    [
        ("raise SystemExit(3)", "", "raised SystemExit: 3"),
        ("sys.exit('bye')", "", "raised SystemExit: bye"),
        ("raise type('Stop', (BaseException,), {})('x')", "", "raised Stop: x"),
        ("os._exit(3)", "", "evaluator 'e' called os._exit(3)"),
        ("os._exit(3)", ", trial_timeout_s: 30", "evaluator 'e' called os._exit(3)"),
        ("import ctypes; ctypes.CDLL(None)._exit(3)", ", trial_timeout_s: 30", "exit code 3"),
    ],
    ids=[
        "system_exit",
        "sys_exit_text",
        "own_base_exception",
        "os_exit",
        "os_exit_in_a_child",
        "c_exit_in_a_child",
    ],
)
def test_an_evaluator_that_exits_fails_its_trials_not_the_study(
    tmp_path: Path, studies_dir: Path, how: str, timeout: str, reason: str
) -> None:
    """SystemExit, other BaseExceptions and os._exit from a model fail the design that raised
    them (a real Ctrl-C still stops the run); an exit below Python (C ``_exit``) ends only the
    evaluation child when the spec sets a trial time-out."""
    (tmp_path / "exiting_mod.py").write_text(EXITING.format(how=how))
    spec = tmp_path / "spec.yaml"
    spec.write_text(EXITING_SPEC.format(timeout=timeout))
    res = run_dse("run", str(spec), "--no-progress", env={"DSE_STUDIES_DIR": str(studies_dir)})
    assert res.returncode == 0, res.stderr[-2000:]
    t = pd.read_csv(studies_dir / "exiting" / "trials.csv")
    failed = t[t["state"] == "FAIL"]
    assert len(t) == 20 and len(failed) == (t["params.x"] > 0.8).sum() > 0, t
    assert failed["fail_reason"].str.contains(reason, regex=False).all(), failed["fail_reason"]
