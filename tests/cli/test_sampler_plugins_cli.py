"""The tests of tests/dse/search/test_sampler_plugins.py that run the ``dse`` command."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import run_dse
from tests.dse.search.test_sampler_plugins import PLUGINS, ZDT1

EVALUATOR = """
import numpy as np

def zdt(design):
    x = np.asarray(design["x"], dtype=float)
    y = np.asarray(design["y"], dtype=float)
    return {"f1": x, "f2": 1.0 + 9.0 * y - np.sqrt(x * (1.0 + 9.0 * y))}

zdt.vectorized = True
zdt.metrics = {"f1": ("1", "first objective"), "f2": ("1", "second objective")}
"""


def _spec(tmp_path: Path, study: str, search: str) -> Path:
    (tmp_path / "zdt_eval.py").write_text(EVALUATOR)
    spec = tmp_path / f"{study}.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        study: {study}
        space:
          x: {{type: float, low: 0.0, high: 1.0}}
          y: {{type: float, low: 0.0, high: 1.0}}
        evaluators:
          zdt: zdt_eval:zdt
        objectives:
          - {{metric: zdt.f1, direction: minimize}}
          - {{metric: zdt.f2, direction: minimize}}
        search: {search}
        """)
    )
    return spec


def _strata(values: pd.Series, k: int) -> list[int]:
    return sorted(np.floor(values.to_numpy() * k).astype(int).tolist())


@pytest.mark.slow
@pytest.mark.parametrize(
    "search",
    [
        "{sampler: lhs, trials: 16, seed: 3, options: {round_size: 8}}",
        "{sampler: {path: 'dse_outside:latin', options: {round_size: 8}}, trials: 16, seed: 3}",
    ],
    ids=["entry-point", "import-path"],
)
def test_an_outside_sampler_runs_a_study_end_to_end(
    tmp_path: Path, studies_dir: Path, search: str
) -> None:
    spec = _spec(tmp_path, "lhs", search)
    env = {"DSE_STUDIES_DIR": str(studies_dir), "PYTHONPATH": str(PLUGINS)}
    res = run_dse("run", str(spec), "--no-progress", env=env)
    assert res.returncode == 0, res.stderr
    trials = pd.read_csv(studies_dir / "lhs" / "trials.csv").sort_values("number")
    assert len(trials) == 16 and (trials["state"] == "COMPLETE").all()
    # The Latin hypercube property: in each round of 8, each eighth of each axis holds one.
    for start in (0, 8):
        rnd = trials.iloc[start : start + 8]
        for axis in ("params.x", "params.y"):
            assert _strata(rnd[axis], 8) == list(range(8))


@pytest.mark.slow
def test_an_outside_samplers_bad_option_is_one_line(tmp_path: Path, studies_dir: Path) -> None:
    spec = _spec(tmp_path, "lhs-bad", "{sampler: lhs, trials: 4, options: {round_sise: 8}}")
    env = {"DSE_STUDIES_DIR": str(studies_dir), "PYTHONPATH": str(PLUGINS)}
    res = run_dse("validate", str(spec), env=env)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert lines == [
        f"{spec}:10: search.options.round_sise: unknown option 'round_sise' for sampler "
        "'lhs' (valid options: round_size)"
    ], res.stderr
    res = run_dse("validate", str(spec), env={"DSE_STUDIES_DIR": str(studies_dir)})
    assert res.returncode == 2 and "unknown sampler 'lhs'" in res.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("search", "line"),
    [
        (
            "{sampler: {path: 'no_such_samplers:f'}, trials: 4}",
            "search.sampler.path: cannot import module 'no_such_samplers'",
        ),
        (
            "{sampler: {path: 'dse_outside:latin', options: {round_size: 2}}, "
            "options: {round_size: 4}, trials: 4}",
            "search.options: the sampler's options are given twice",
        ),
        ("{sampler: nsga4, trials: 4}", "search.sampler: unknown sampler 'nsga4' (did you mean"),
    ],
    ids=["unknown-module", "options-twice", "unknown-name"],
)
def test_a_bad_sampler_is_one_line(
    tmp_path: Path, studies_dir: Path, search: str, line: str
) -> None:
    spec = _spec(tmp_path, "bad", search)
    env = {"DSE_STUDIES_DIR": str(studies_dir), "PYTHONPATH": str(PLUGINS)}
    res = run_dse("validate", str(spec), env=env)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{spec}:10: {line}"), res.stderr


@pytest.mark.slow
def test_the_pymoo_example_spec_runs_pymoos_nsga2(tmp_path: Path, studies_dir: Path) -> None:
    """spaces/zdt1/pymoo.yaml through ``dse run`` records exactly the designs pymoo's own
    NSGA-II asks for when driven directly on ZDT1 with the same seed (three generations)."""
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.core.evaluator import Evaluator
    from pymoo.core.problem import Problem
    from pymoo.core.termination import NoTermination
    from pymoo.problems.static import StaticProblem

    res = run_dse(
        "run", str(ZDT1 / "pymoo.yaml"), "--trials", "60", "--no-progress",
        env={"DSE_STUDIES_DIR": str(studies_dir)},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    trials = pd.read_csv(studies_dir / "zdt1-pymoo" / "trials.csv").sort_values("number")
    got = trials[[f"params.x{i}" for i in range(1, 6)]].to_numpy()

    problem = Problem(n_var=5, n_obj=2, n_ieq_constr=1, xl=0.0, xu=1.0)
    algorithm = NSGA2(pop_size=20)
    algorithm.setup(problem, termination=NoTermination(), seed=0, verbose=False)
    asked = []
    for _ in range(3):
        pop = algorithm.ask()
        x = pop.get("X")
        asked.append(x)
        g = 1.0 + 9.0 * x[:, 1:].sum(axis=1) / 4.0
        f = np.column_stack([x[:, 0], g * (1.0 - np.sqrt(x[:, 0] / g))])
        Evaluator().eval(StaticProblem(problem, F=f, G=np.zeros((len(x), 1))), pop)
        algorithm.tell(infills=pop)
    want = np.concatenate(asked)[:60]
    assert len(got) == 60
    np.testing.assert_array_equal(got, want)
