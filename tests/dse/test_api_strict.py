"""``dse.api`` is as strict as the CLI: a misspelt name, a value outside the space or an
argument of the wrong type raises the package's error (a DseError) before anything is created,
never SystemExit or a bare TypeError/KeyError from deep inside; results come as DataFrames and
an Evaluation that says whether the design is feasible."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dse import api
from dse.errors import ArgumentError, DesignError, DseError

ROOT = Path(__file__).resolve().parents[2]
LITE = ROOT / "spaces" / "litegpu.yaml"
H100 = ROOT / "spaces" / "h100.yaml"
DESIGN = {"die_area_mm2": 204, "hbm_stacks_per_die": 2, "optics_per_link": 4, "cluster_size": 64}


@pytest.fixture(scope="module")
def lite() -> api.StudyModel:
    return api.load(LITE)


def test_dir_shows_the_public_surface_only() -> None:
    names = dir(api)
    assert {"Any", "Path", "Mapping", "TYPE_CHECKING", "annotations"}.isdisjoint(names)
    assert set(names) == set(api.__all__)
    assert all(hasattr(api, n) for n in api.__all__)


def test_evaluate_says_feasibility_with_the_metrics(lite: api.StudyModel) -> None:
    ok = api.evaluate(lite, DESIGN)
    assert ok.feasible is True and ok.violated == []
    assert set(ok.objectives) == set(lite.objective_names)
    assert ok["cost.usd_per_mtok"] == ok.objectives["cost.usd_per_mtok"] > 0
    too_big = api.evaluate(lite, {**DESIGN, "die_area_mm2": 858, "hbm_stacks_per_die": 8})
    assert too_big.feasible is False and too_big.violated  # each violated constraint named
    assert all(isinstance(c, str) for c in too_big.violated)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        (
            {**DESIGN, "die_area_mm": 204},
            "unknown parameter 'die_area_mm' .*did you mean 'die_area_mm2'",
        ),
        ({k: v for k, v in DESIGN.items() if k != "cluster_size"}, "cluster_size"),
        ({**DESIGN, "die_area_mm2": 5000}, "outside the searched range"),
        ({**DESIGN, "optics_per_link": 3}, "not one of"),
        ({**DESIGN, "hbm_stacks_per_die": 2.5}, "expected an integer"),
        ({**DESIGN, "die_area_mm2": "big"}, "expected a number"),
    ],
)
def test_a_bad_design_raises_the_design_error(
    lite: api.StudyModel, params: dict[str, object], match: str
) -> None:
    with pytest.raises(DesignError, match=match):
        api.evaluate(lite, params)


def test_a_spec_without_a_space_refuses_any_design_value() -> None:
    """The typo of the issue: on the H100 node, die_area_mm was ignored; now it is refused,
    and a fixed value is changed through sets= (a dict), as --set does."""
    model = api.load(H100)
    with pytest.raises(DesignError, match="searches nothing.*sets="):
        api.evaluate(model, {"die_area_mm": 204})
    small = api.evaluate(api.load(H100, sets={"die_area_mm2": 600}))
    base = api.evaluate(model)
    assert small["cost.die_cost_usd"] < base["cost.die_cost_usd"]
    with pytest.raises(DseError, match="die_area_mm"):
        api.load(H100, sets={"die_area_mm": 600})


def _public_calls(lite: api.StudyModel) -> dict[str, list]:
    """Each public function with arguments of the wrong type (or out of range)."""
    return {
        "load": [lambda: api.load(3), lambda: api.load(LITE, sets=5)],
        "load_for_evaluate": [
            lambda: api.load_for_evaluate(None),
            lambda: api.load_for_evaluate(LITE, 7),
        ],
        "evaluate": [lambda: api.evaluate("spec.yaml", {}), lambda: api.evaluate(lite, [1, 2])],
        "evaluate_design": [lambda: api.evaluate_design(lite, DESIGN, metrics="cost")],
        "simulate": [
            lambda: api.simulate(lite, DESIGN, runs=0, years=1, seed=0),
            lambda: api.simulate(lite, DESIGN, runs="10", years=1, seed=0),
            lambda: api.simulate(lite, DESIGN, runs=10, years=-1, seed=0),
            lambda: api.simulate(lite, DESIGN, runs=10, years=1, seed=1.5),
        ],
        "run": [
            lambda: api.run(LITE, trials=-3),
            lambda: api.run(LITE, trials="5"),
            lambda: api.run(LITE, jobs=0),
            lambda: api.run(42),
            lambda: api.run(LITE, trails=5),
            lambda: api.run(LITE, on_begin=3),
        ],
        "run_jobs": [lambda: api.run_jobs(LITE, jobs=0)],
        "run_worker": [lambda: api.run_worker(LITE, trials=0)],
        "sweep": [lambda: api.sweep(LITE, samples=0), lambda: api.sweep(LITE, jobs=True)],
        "sensitivity": [
            lambda: api.sensitivity(LITE, method="sobel"),
            lambda: api.sensitivity(LITE, sets=DESIGN, metrics="cost.usd_per_mtok"),
            lambda: api.sensitivity(LITE, sets=DESIGN, samples=1),
        ],
        "sensitivity_payload": [lambda: api.sensitivity_payload(b"x")],
        "compare": [lambda: api.compare(H100), lambda: api.compare([]), lambda: api.compare([3])],
        "pareto": [lambda: api.pareto(3)],
        "quality": [lambda: api.quality(None)],
        "read_lock": [lambda: api.read_lock(1.5)],
        "open_study": [lambda: api.open_study([])],
        "load_study": [lambda: api.load_study({})],
        "report": [lambda: api.report(0)],
        "status": [lambda: api.status("x", recent_s="soon"), lambda: api.status(7)],
        "validate": [lambda: api.validate(3)],
        "check": [lambda: api.check(3), lambda: api.check(LITE, sets=1)],
        "lock_dict": [lambda: api.lock_dict({}, "x"), lambda: api.lock_dict(lite, 3)],
        "check_design": [lambda: api.check_design(lite, "x=1")],
        "as_sets": [lambda: api.as_sets({"a": object()}), lambda: api.as_sets({1: 2})],
        "spec_source": [lambda: api.spec_source("no-such-preset")],
        "trial_design": [lambda: api.trial_design(3, 1), lambda: api.trial_design("x", -1)],
    }


def test_every_public_function_refuses_wrong_arguments_with_the_package_error(
    lite: api.StudyModel, studies_dir: Path
) -> None:
    calls = _public_calls(lite)
    for name, cases in calls.items():
        for i, call in enumerate(cases):
            try:
                call()
            except DseError:
                continue
            except BaseException as exc:  # noqa: BLE001 - the point: nothing else escapes
                pytest.fail(f"api.{name} case {i}: {type(exc).__name__}: {exc}")
            pytest.fail(f"api.{name} case {i}: accepted")
    assert not any(studies_dir.iterdir())  # nothing was created by a refused call
    functions = {
        n
        for n in api.__all__
        if callable(getattr(api, n)) and not isinstance(getattr(api, n), type)
    }
    covered = set(calls) | {
        "counts_line", "json_schema", "list_evaluators", "trial_counts",
    }  # fmt: skip
    assert functions <= covered, functions - covered


def test_argument_errors_are_also_value_errors() -> None:
    with pytest.raises(ValueError):
        api.run(LITE, trials=0)
    assert issubclass(ArgumentError, DseError)


@pytest.mark.slow
def test_results_are_dataframes_and_optuna_is_quiet(
    studies_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import optuna

    spec = studies_dir.parent / "tiny.yaml"
    spec.write_text(
        LITE.read_text().replace("trials: 500", "trials: 6").replace("warm_start: 20000, ", "")
    )
    before = optuna.logging.get_verbosity()
    with caplog.at_level(logging.INFO, logger="optuna"):
        api.run(spec)
    assert not [r for r in caplog.records if r.name.startswith("optuna") and r.levelno < 30]
    assert optuna.logging.get_verbosity() == before  # no global state changed
    front = api.pareto(spec)
    assert isinstance(front, pd.DataFrame) and len(front) >= 1
    assert front.attrs["objectives"][0] == "cost.usd_per_mtok"
    table = api.compare([H100, (LITE, DESIGN)], labels=["h100", "lite"])
    assert {"h100", "lite", "lite/h100"} <= set(table.columns)
    assert table.loc["feasible", "h100"] == "yes"
    tornado = api.sensitivity(LITE, sets=DESIGN, only=["defect_density_per_cm2", "pue"])
    assert isinstance(tornado, pd.DataFrame)
    assert set(tornado["assumption"]) == {
        "technology.defect_density_per_cm2", "technology.pue",
    }  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("how", ["-c", "-m", "script"])
def test_a_users_objectives_py_is_named_in_one_line(tmp_path: Path, how: str) -> None:
    """``python -c``/``-m`` put the working folder first on the path, a script its own folder:
    a user's objectives.py there would shadow the installed domain package."""
    (tmp_path / "objectives.py").write_text("def tco(design):\n    return {'x': 1.0}\n")
    (tmp_path / "probe.py").write_text("from dse import api\nprint('imported')\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = {
        "-c": [sys.executable, "-c", "from dse import api"],
        "-m": [sys.executable, "-m", "probe"],
        "script": [sys.executable, str(tmp_path / "probe.py")],
    }[how]
    res = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode != 0
    last = res.stderr.strip().splitlines()[-1]
    assert "objectives.py shadows the package 'objectives'" in last and "rename it" in last
    (tmp_path / "objectives.py").rename(tmp_path / "my_objectives.py")
    res = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
