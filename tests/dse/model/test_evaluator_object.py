"""One typed evaluator object: every optional hook is a named member of ``Evaluator``; a plain
function is wrapped with its attributes as hooks, and an attribute that is no hook is an error
(one line naming the closest hook), never silently ignored."""

from __future__ import annotations

import dataclasses
import inspect
import textwrap
from pathlib import Path

import numpy as np
import pytest

from dse import api
from dse.errors import ConformanceError, EvaluatorError
from dse.model.registry import builtin_evaluators
from dse.plugin import DOMAIN_HOOKS, HOOKS, Domain, Evaluator, MetricInfo, evaluator
from dse.testing import check_evaluator

#: The hooks the engine uses anywhere (dse/ reads them from Evaluator's members only).
ALL_HOOKS = {
    "metrics",
    "vectorized",
    "needs",
    "domain",
    "params",
    "version",
    "resolve",
    "check_value",
    "context_path",
    "as_mapping",
    "assumptions",
    "waterfall",
    "simulate",
    "fixed_schema",
    "default_constraints",
}


def test_every_hook_is_a_documented_member() -> None:
    assert set(HOOKS) == ALL_HOOKS
    assert set(DOMAIN_HOOKS) < ALL_HOOKS  # a function may still carry its own domain's hooks
    for cls in (Evaluator, Domain):
        lines = inspect.getsource(cls).splitlines()
        for f in dataclasses.fields(cls):
            at = next(i for i, line in enumerate(lines) if line.startswith(f"    {f.name}: "))
            assert lines[at - 1].startswith("    #: "), f"{f.name} has no doc comment"


def test_dse_reads_no_hook_by_getattr() -> None:
    root = Path(__import__("dse").__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text()
        for hook in ALL_HOOKS:
            assert f'getattr(ev.fn, "{hook}"' not in text, (path, hook)
            assert f'getattr(fn, "{hook}"' not in text or path.name == "registry.py", path


def test_a_function_is_wrapped_with_its_hooks() -> None:
    def f(design):
        return {"y": design["x"]}

    f.metrics = {"y": ("m", "the x")}
    f.vectorized = True
    f.params = ("x",)
    f.waterfall = lambda own: [("s", "= total", own["y"])]
    f.waterfall.unit = "m"
    ev = Evaluator.wrap("mine", f, "test")
    assert ev.metrics == {"y": MetricInfo("m", "the x")}
    assert ev.vectorized and ev.domain.params == frozenset({"x"})
    assert ev.waterfall is f.waterfall and ev.waterfall_unit == "m"
    assert ev.simulate is None and ev.domain.resolve is None and ev.needs == ()
    assert ev({"x": 2.0}) == {"y": 2.0}


def test_a_misspelt_hook_is_an_error_naming_the_closest() -> None:
    def f(design):
        return {"y": 1.0}

    f.metrcs = {"y": ("1", "one")}
    with pytest.raises(EvaluatorError, match=r"unknown attribute 'metrcs' \(did you mean "):
        Evaluator.wrap("mine", f, "mod:f")
    with pytest.raises(ConformanceError, match="unknown attribute 'metrcs'"):
        check_evaluator(f, {})
    with pytest.raises(TypeError, match="unknown hook 'vectorised'"):
        evaluator(vectorised=True)


def test_the_decorator_sets_every_hook() -> None:
    @evaluator(metrics={"y": ("1", "one")}, vectorized=True, params=("x",), simulate=dict)
    def f(design):
        return {"y": np.asarray(design["x"], dtype=float)}

    ev = Evaluator.wrap("d", f, "test")
    assert ev.domain.params == frozenset({"x"}) and ev.simulate is dict and ev.vectorized


def test_builtins_carry_waterfall_and_simulate_as_members() -> None:
    evs = builtin_evaluators()
    assert evs["cost"].waterfall is not None and evs["cost"].waterfall_unit == "USD"
    assert evs["availability"].simulate is not None
    assert evs["perf"].waterfall is None and evs["perf"].simulate is None


MODULE = """
import numpy as np
from dse.model.registry import Evaluator

def _f(design):
    return {"y": 2.0 * np.asarray(design["x"], dtype=float)}

def typo(design):
    return {"y": 1.0}

typo.vectorised = True

MINE = Evaluator(fn=_f, metrics={"y": ("1", "twice x")}, vectorized=True, params=("x",))
"""


def _spec(tmp_path: Path, path: str) -> Path:
    (tmp_path / "obj_mod.py").write_text(MODULE)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        study: obj
        space:
          x: {{type: float, low: 0.0, high: 1.0}}
        evaluators:
          mine: {path}
        objectives:
          - {{metric: mine.y, direction: minimize}}
        search: {{sampler: random, trials: 4}}
        """)
    )
    return spec


def test_a_module_may_export_an_evaluator_object(tmp_path: Path) -> None:
    model = api.load(_spec(tmp_path, "obj_mod:MINE"))
    ev = model.evaluators["mine"]
    assert ev.name == "mine" and ev.origin == "obj_mod:MINE" and ev.vectorized
    assert ev.metrics == {"y": MetricInfo("1", "twice x")}
    assert float(model.evaluate({"x": 0.25})["mine.y"]) == 0.5
