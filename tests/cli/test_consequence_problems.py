"""One problem is reported once: what only follows from it is not listed beside it.

A parameter the schema rejects (no choices, a zero step, an unknown type) is left out of the
space; probing the evaluators without it used to add a second line, the evaluator's
``KeyError`` for that parameter, which is the first problem again in a misleading form.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.inprocess import run_in_process

EVALUATOR = "def f(design):\n    return {'a': float(design['x']) + float(design['y'])}\n"
SPEC = """\
study: once
space:
  x: {X}
  y: {{type: float, low: 0, high: 1}}
evaluators:
  m: m:f
objectives:
  - {{metric: m.a, direction: minimize}}
search: {{sampler: random, trials: 3, seed: 0}}
"""

BAD_PARAMS = {
    "no_choices": ("{type: categorical, choices: []}", "at least 1 item"),
    "int_step_zero": ("{type: int, low: 0, high: 10, step: 0}", "greater than or equal to 1"),
    "unknown_type": ("{type: complex, low: 0, high: 1}", "'type'"),
    "low_text": ("{type: float, low: zero, high: 1}", "valid number"),
}


@pytest.mark.parametrize("name", sorted(BAD_PARAMS))
def test_a_rejected_parameter_is_one_line_not_also_the_evaluators_key_error(
    tmp_path: Path, name: str
) -> None:
    rng, fragment = BAD_PARAMS[name]
    (tmp_path / "m.py").write_text(EVALUATOR)
    (tmp_path / "spec.yaml").write_text(SPEC.format(X=rng))
    res = run_in_process("validate", "spec.yaml", cwd=tmp_path, env={})
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("spec.yaml:3: space.x"), line
    assert fragment in line, line


def test_the_evaluator_is_still_probed_when_the_space_is_whole(tmp_path: Path) -> None:
    """The probe still finds an evaluator that fails on a valid space (not skipped wholesale)."""
    (tmp_path / "m.py").write_text("def f(design):\n    raise RuntimeError('boom')\n")
    (tmp_path / "spec.yaml").write_text(SPEC.format(X="{type: float, low: 0, high: 1}"))
    res = run_in_process("validate", "spec.yaml", cwd=tmp_path, env={})
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "evaluators.m" in line and "RuntimeError: boom" in line, line


def test_an_unknown_set_name_lists_each_valid_name_once(tmp_path: Path) -> None:
    """A searched parameter is also a design parameter the evaluators know: listed once."""
    spec = Path(__file__).resolve().parents[2] / "spaces" / "litegpu.yaml"
    res = run_in_process("evaluate", str(spec), "--set", "cluster_sise=8", cwd=tmp_path, env={})
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "did you mean 'cluster_size'" in line, line
    names = line.split("valid: ")[1].split(", or a dotted")[0].split(", ")
    assert len(names) == len(set(names)) and {"cluster_size", "die_area_mm2"} <= set(names)
