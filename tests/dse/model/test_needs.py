"""A design that flows: an evaluator names the evaluators whose metrics it consumes (``needs``);
the engine runs them first, once per design, and passes their metrics as keyword arguments
named after them. The built-ins flow perf -> availability -> cost and share one domain."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from dse import api
from dse.errors import SpecError
from dse.model.registry import builtin_evaluators, domains_of
from objectives.cost import evaluate_cost

MODULE = """
import numpy as np

CALLS = []

def base(design):
    CALLS.append("base")
    return {"y": 2.0 * np.asarray(design["x"], dtype=float)}

base.vectorized = True

def top(design, *, base=None):
    CALLS.append("top")
    if base is None:  # called alone from Python: compute what it needs
        base = globals()["base"](design)
    return {"z": np.asarray(base["y"], dtype=float) + 1.0}

top.vectorized = True
top.needs = ("base",)

def per_design(design, *, base, top):
    CALLS.append("per_design")
    assert isinstance(base["y"], float) and isinstance(top["z"], float)
    return {"w": 10.0 * base["y"] + top["z"]}

per_design.needs = ["top", "base"]

def loop_a(design, *, loop_b):
    return {"a": 1.0}

loop_a.needs = ("loop_b",)

def loop_b(design, *, loop_a):
    return {"b": 1.0}

loop_b.needs = ("loop_a",)

def lost(design, *, nowhere):
    return {"c": 1.0}

lost.needs = ("nowhere",)
"""


def _spec(tmp_path: Path, evaluators: dict[str, str], metric: str) -> Path:
    (tmp_path / "flow_mod.py").write_text(MODULE)
    lines = "".join(f"  {n}: flow_mod:{f}\n" for n, f in evaluators.items())
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        textwrap.dedent("""\
        study: flow
        space:
          x: {type: float, low: 0.0, high: 1.0}
        evaluators:
        """)
        + lines
        + f"objectives:\n  - {{metric: {metric}, direction: minimize}}\n"
        + "search: {sampler: random, trials: 4}\n"
    )
    return spec


def test_evaluators_run_after_what_they_need_once_per_design(tmp_path: Path) -> None:
    # written in the wrong order on purpose: the engine orders them
    spec = _spec(tmp_path, {"p": "per_design", "top": "top", "base": "base"}, "top.z")
    model = api.load(spec)
    assert [e.name for e in model.run_order] == ["base", "top", "p"]
    import flow_mod

    flow_mod.CALLS.clear()
    x = np.array([0.1, 0.2, 0.4])
    out = model.evaluate({"x": x})
    # the vectorized ones once for the batch, the scalar-only one once per design
    assert flow_mod.CALLS == ["base", "top", "per_design", "per_design", "per_design"]
    np.testing.assert_allclose(out["base.y"], 2 * x, rtol=1e-15)
    np.testing.assert_allclose(out["top.z"], 2 * x + 1, rtol=1e-15)
    np.testing.assert_allclose(out["p.w"], 20 * x + 2 * x + 1, rtol=1e-15)
    assert list(out) == ["p.w", "top.z", "base.y"]  # published in the spec's order


@pytest.mark.parametrize(
    ("evaluators", "message"),
    [
        ({"loop_a": "loop_a", "loop_b": "loop_b"}, "'needs' cycle loop_a -> loop_b -> loop_a"),
        ({"lost": "lost"}, "needs 'nowhere', which is neither selected nor installed"),
    ],
)
def test_a_need_that_cannot_be_met_is_a_spec_problem(
    tmp_path: Path, evaluators: dict[str, str], message: str
) -> None:
    spec = _spec(tmp_path, evaluators, f"{next(iter(evaluators))}.a")
    with pytest.raises(SpecError, match=message):
        api.load(spec)


def test_builtins_flow_perf_availability_cost_and_share_one_domain() -> None:
    evs = builtin_evaluators()
    assert evs["perf"].needs == ()
    assert evs["availability"].needs == ("perf",)
    assert evs["cost"].needs == ("perf", "availability")
    (domain,) = domains_of(evs.values())  # the hooks are declared once for the three
    assert domain.resolve is not None and "die_area_mm2" in domain.params
    model = api.load("spaces/litegpu.yaml")
    assert [e.name for e in model.run_order] == ["perf", "availability", "cost"]
    assert api.list_evaluators()["cost"]["needs"] == ["perf", "availability"]  # dse evaluators


def test_a_needed_installed_evaluator_runs_unpublished(tmp_path: Path) -> None:
    # custom-objective selects carbon, cost and perf: availability runs for cost, unpublished
    model = api.load("spaces/custom-objective/spec.yaml")
    assert "availability" not in model.evaluators
    assert [e.name for e in model.run_order][-1] == "carbon"
    assert "availability" in [e.name for e in model.run_order]
    params = {"die_area_mm2": np.array([300.0, 600.0]), "hbm_stacks_per_die": np.array([4, 6])}
    out = model.evaluate(params)
    assert not any(k.startswith("availability.") for k in out)
    alone = evaluate_cost(model.design(params))  # computes perf and availability itself
    for k, v in alone.items():
        np.testing.assert_array_equal(out[f"cost.{k}"], v)


def test_the_conformance_check_calls_an_evaluator_after_what_it_needs() -> None:
    from dse.errors import ConformanceError
    from dse.testing import check_evaluator

    def base(design):  # type: ignore[no-untyped-def]
        return {"y": 2.0 * float(design["x"])}

    def top(design, *, base):  # type: ignore[no-untyped-def]
        return {"z": base["y"] + 1.0}

    top.needs = ("base",)  # type: ignore[attr-defined]
    assert check_evaluator(top, {"x": 1.5}, needs={"base": base}) == {"z": 4.0}
    with pytest.raises(ConformanceError, match="needs 'base', which is neither selected nor"):
        check_evaluator(top, {"x": 1.5})
