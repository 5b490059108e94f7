"""A study is one spec on one storage: resuming it with a spec that would mix incompatible
trials, or with another storage, is refused in one line naming what differs (exit 2, nothing
written); the compatible changes docs/scale-out.md lists resume it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.inprocess import run_in_process
from tests.conftest import run_dse

pytestmark = pytest.mark.slow

EVALUATOR = """
import numpy as np

def lin(design):
    a, b = np.asarray(design["a"], float), np.asarray(design["b"], float)
    k = np.asarray(design.get("k", 1.0), float) + 0 * np.asarray(design.get("c", 0.0), float)
    return {"s": k * (a + b), "d": k * (a - b), "p": a * b}

lin.metrics = {"s": ("1", "sum"), "d": ("1", "difference"), "p": ("1", "product")}
lin.vectorized = True
lin.params = ("a", "b", "c", "k")

def other(design):
    return {"q": np.asarray(design["a"], float) ** 2}

other.metrics = {"q": ("1", "square")}
other.version = "1"
other.vectorized = True
other.params = ("a",)
"""

BASE: dict[str, Any] = {
    "study": "res",
    "description": "resume cases",
    "fixed": {"k": 1.0},
    "space": {
        "a": {"type": "float", "low": 0, "high": 1},
        "b": {"type": "float", "low": 0, "high": 1},
    },
    "evaluators": {"lin": "res_lin:lin", "other": "res_lin:other"},
    "objectives": [
        {"metric": "lin.s", "direction": "minimize"},
        {"metric": "lin.d", "direction": "maximize"},
    ],
    "search": {"sampler": "random", "trials": 4, "seed": 0},
}


def _edit(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set (or, for None, delete) the dotted ``path`` of a spec."""

    def apply(spec: dict[str, Any]) -> None:
        *parents, leaf = path.split(".")
        node: Any = spec
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        if value is None:
            del node[leaf]
        elif isinstance(node, list):
            node.append(value)
        else:
            node[leaf] = value

    return apply


#: (name, edit, key the refusal names)
REFUSED: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    (
        "objective_added",
        _edit("objectives.2", {"metric": "lin.p", "direction": "minimize"}),
        "objectives.2 (added)",
    ),
    ("objective_removed", lambda s: s["objectives"].pop(), "objectives"),
    ("direction_changed", _edit("objectives.1.direction", "minimize"), "objectives.1.direction"),
    ("constraint_added", _edit("constraints", ["lin.p <= 0.5"]), "constraints.0 (added)"),
    ("derived_added", _edit("derived", {"c": "a * 0.5"}), "derived.c (added)"),
    ("param_added", _edit("space.c", {"type": "float", "low": 0, "high": 1}), "space.c (added)"),
    ("range_changed", _edit("space.b.high", 2), "space.b.high"),
    (
        "param_fixed",
        lambda s: (s["space"].pop("b"), s["fixed"].update(b=0.5)),
        "space.b (removed)",
    ),
    ("fixed_added", _edit("fixed.c", 0.25), "fixed.c (added)"),
    ("fixed_changed", _edit("fixed.k", 2.0), "fixed.k"),
    ("evaluator_removed", _edit("evaluators.other", None), "evaluators.other (removed)"),
    ("evaluator_replaced", _edit("evaluators.other", "res_lin:lin"), "evaluators.other"),
]

#: Changes that resume the study (docs/scale-out.md, "Resuming a study").
COMPATIBLE: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("trials_raised", _edit("search.trials", 6)),
    (
        "sampler_and_options",
        _edit(
            "search",
            {"sampler": "tpe", "trials": 6, "seed": 3, "options": {"n_startup_trials": 2}},
        ),
    ),
    ("trial_timeout", _edit("search.trial_timeout_s", 30)),
    ("description", _edit("description", "another word")),
    ("threshold", _edit("objectives.0.threshold", 5.0)),
]


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture
def study(tmp_path: Path, studies_dir: Path) -> tuple[Path, Path]:
    """A finished study ``res`` from BASE; returns (spec folder, study folder)."""
    (tmp_path / "res_lin.py").write_text(EVALUATOR)
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(BASE, sort_keys=False))
    res = run_dse("run", "spec.yaml", "--no-progress", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    return tmp_path, studies_dir / "res"


def _write(folder: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    spec = yaml.safe_load(yaml.safe_dump(BASE))
    edit(spec)
    (folder / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))


def test_each_incompatible_change_is_refused_and_writes_nothing(
    study: tuple[Path, Path], studies_dir: Path
) -> None:
    folder, records = study
    before = _digest(records)
    env: dict[str, str | None] = {"DSE_STUDIES_DIR": str(studies_dir)}
    for name, edit, key in REFUSED:
        _write(folder, edit)
        res = run_in_process("run", "spec.yaml", "--no-progress", cwd=folder, env=env)
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1, (name, res.stderr)
        assert "different spec" in lines[0] and key in lines[0], (name, lines[0])
        assert _digest(records) == before, name  # lock, journal and records byte-identical


def test_a_refused_resume_as_a_real_process_leaves_the_lock_byte_identical(
    study: tuple[Path, Path],
) -> None:
    folder, records = study
    lock = (records / "spec.lock.yaml").read_bytes()
    _write(folder, REFUSED[0][1])
    res = run_dse("run", "spec.yaml", "--no-progress", cwd=folder)
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and "objectives.2 (added)" in res.stderr
    assert (records / "spec.lock.yaml").read_bytes() == lock
    status = run_dse("status", "res", cwd=folder)
    assert status.returncode == 0, status.stderr


def test_each_compatible_change_resumes_the_study(
    study: tuple[Path, Path], studies_dir: Path
) -> None:
    folder, _ = study
    env: dict[str, str | None] = {"DSE_STUDIES_DIR": str(studies_dir)}
    for name, edit in COMPATIBLE:
        _write(folder, edit)
        res = run_in_process("run", "spec.yaml", "--no-progress", "--json", cwd=folder, env=env)
        assert res.returncode == 0, (name, res.stderr)
        assert yaml.safe_load(res.stdout)["trials"] >= 4, name


def test_another_storage_for_an_existing_study_is_refused(study: tuple[Path, Path]) -> None:
    folder, records = study
    before = _digest(records)
    res = run_dse(
        "run", "spec.yaml", "--no-progress", "--storage", "sqlite:///other.db", cwd=folder
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "bound to storage" in res.stderr and "journal.log" in res.stderr
    assert not (folder / "other.db").exists()
    assert _digest(records) == before
    again = run_dse("run", "spec.yaml", "--no-progress", cwd=folder)  # its own storage: fine
    assert again.returncode == 0, again.stderr


def test_another_declared_evaluator_version_is_refused(study: tuple[Path, Path]) -> None:
    folder, records = study
    lock = (records / "spec.lock.yaml").read_text()
    assert "evaluator_versions:\n  other: '1'" in lock
    before = _digest(records)
    (folder / "res_lin.py").write_text(EVALUATOR.replace('version = "1"', 'version = "2"'))
    res = run_dse("run", "spec.yaml", "--no-progress", cwd=folder)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "evaluator_versions.other" in res.stderr
    assert _digest(records) == before


def test_a_refused_resume_with_jobs_on_a_finished_study_writes_nothing(
    study: tuple[Path, Path],
) -> None:
    folder, records = study
    before = _digest(records)
    _write(folder, _edit("space.b.high", 2))
    res = run_dse("run", "spec.yaml", "--no-progress", "--jobs", "2", cwd=folder)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "different spec" in res.stderr and "space.b.high" in res.stderr
    assert _digest(records) == before  # the records too: nothing was run
