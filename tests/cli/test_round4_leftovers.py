"""Round-4 leftovers, each through a real ``dse`` process: a 20-objective report, refusals in
one line naming file, line and field (a 5,000-digit integer, a recursive alias in ``--set``,
a missing SQLite folder, a FIFO as a spec, a second ``$DSE_PRESETS`` folder that does not
exist), and ``dse validate`` on an evaluator that leaves out a declared metric or hangs."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml

from dse import api
from tests.conftest import SPACES, run_dse

pytestmark = pytest.mark.slow

H100 = str(SPACES / "h100.yaml")

MODULE = """
import numpy as np

N = 20

def many(design):
    x, y = np.asarray(design["x"], float), np.asarray(design["y"], float)
    return {f"m{i}": (x - i / N) ** 2 + (y + i / N) ** 2 for i in range(N)}

many.metrics = {f"m{i}": ("1", f"distance to point {i}") for i in range(N)}
many.vectorized = True
many.params = ("x", "y")

def short(design):
    return {"a": float(design["x"])}

short.metrics = {"a": ("1", "x"), "b": ("1", "declared, never returned")}
short.params = ("x", "y")

def hangs(design):
    while True:
        pass
"""


def _spec(
    folder: Path, study: str, evaluator: str, objectives: list[str], **extra: object
) -> Path:
    (folder / "r4mod.py").write_text(MODULE)
    spec = {
        "study": study,
        "space": {
            "x": {"type": "float", "low": 0, "high": 1},
            "y": {"type": "float", "low": 0, "high": 1},
        },
        "evaluators": {"e": f"r4mod:{evaluator}"},
        "objectives": [{"metric": m, "direction": "minimize"} for m in objectives],
        "search": {"sampler": "random", "trials": 24, "seed": 0},
        **extra,
    }
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _one_line(res: object, start: str, fragment: str) -> str:
    stderr = res.stderr  # type: ignore[attr-defined]
    assert res.returncode == 2, stderr  # type: ignore[attr-defined]
    assert "Traceback" not in stderr and stderr.count("\n") == 1, stderr
    assert stderr.startswith(start) and fragment in stderr, stderr
    return stderr


def test_report_of_a_study_with_20_objectives_is_written(
    tmp_path: Path, studies_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    api.run(_spec(tmp_path, "many20", "many", [f"e.m{i}" for i in range(20)]))
    res = run_dse("report", "many20", env={"DSE_STUDIES_DIR": str(studies_dir)})
    assert res.returncode == 0, res.stderr[-2000:]
    html = (studies_dir / "many20" / "report.html").read_text()
    assert "m19" in html
    figures = {p.name for p in (studies_dir / "many20" / "figures").glob("*.png")}
    assert {"pareto_pairs.png", "front_by_parameter.png"} <= figures


def test_an_integer_of_5000_digits_in_set_is_one_line() -> None:
    res = run_dse("evaluate", H100, "--set", "cluster_size=" + "9" * 5000)
    _one_line(res, "error: --set cluster_size:", "5,000 digits")
    assert len(res.stderr) < 400


def test_a_recursive_alias_in_set_names_the_field() -> None:
    res = run_dse("evaluate", H100, "--set", "cluster_size=&a [*a]")
    _one_line(res, "error: --set cluster_size:", "recursive alias")


def test_validate_flags_an_evaluator_that_leaves_out_a_declared_metric(tmp_path: Path) -> None:
    _spec(tmp_path, "short", "short", ["e.a"])
    res = run_dse("validate", "spec.yaml", cwd=tmp_path)
    _one_line(res, "spec.yaml:", "returned no 'b'")
    assert "evaluators.e:" in res.stderr


def test_validate_on_an_evaluator_that_hangs_answers_within_20_s(tmp_path: Path) -> None:
    _spec(tmp_path, "hung", "hangs", ["e.a"])
    t0 = time.monotonic()
    res = run_dse("validate", "spec.yaml", cwd=tmp_path, timeout=60)
    took = time.monotonic() - t0
    _one_line(res, "spec.yaml:", "timed out")
    assert took < 20, took


def test_a_missing_sqlite_folder_in_the_spec_is_refused_at_its_line(
    tmp_path: Path, studies_dir: Path
) -> None:
    _spec(tmp_path, "nosql", "many", ["e.m0"], storage="sqlite:///nowhere/x.db")
    lines = (tmp_path / "spec.yaml").read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if t.startswith("storage:"))
    res = run_dse("run", "spec.yaml", cwd=tmp_path, env={"DSE_STUDIES_DIR": str(studies_dir)})
    _one_line(res, f"spec.yaml:{line}: storage:", "does not exist")
    assert not (tmp_path / "nowhere").exists() and not list(studies_dir.iterdir())


def test_a_fifo_as_a_spec_is_refused_naming_it(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.yaml")
    res = run_dse("validate", "pipe.yaml", cwd=tmp_path, timeout=60)
    _one_line(res, "pipe.yaml: ", "is a FIFO")


def test_a_second_presets_folder_that_does_not_exist_is_named(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    gone = tmp_path / "gone"
    env = {"DSE_PRESETS": f"{tmp_path / 'mine'}{os.pathsep}{gone}"}
    res = run_dse("validate", H100, env=env)
    _one_line(res, f"{gone}: ", "$DSE_PRESETS names it, but it does not exist")
