"""An evaluator cannot change the design of later trials: nested fixed values and searched
arrays reach it read-only (dse.model.frozen), so a write raises and fails that trial alone."""

from __future__ import annotations

import copy
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from dse import api
from dse.model.frozen import FrozenDict, FrozenList, freeze

MUTATING = """
import numpy as np

def mut(design):
    cost = float(design["technology"]["wafer_cost_usd"])
    seen = list(design["technology"]["sizes"])
    if float(design["x"]) > 0.5:  # half the designs try to change what later ones see
        design["technology"]["wafer_cost_usd"] *= 2
    return {"cost": cost, "first_size": seen[0], "x": float(design["x"])}

mut.metrics = {"cost": ("USD", "wafer cost seen"), "first_size": ("1", "first size seen"),
               "x": ("1", "x")}
mut.params = ("x", "technology")

def vec(design):
    x = design["x"]
    try:
        x *= 2  # in place on the batch's own array
    except ValueError:
        pass
    try:
        design["technology"]["sizes"].append(9)
    except TypeError:
        pass
    return {"x": x, "n": np.asarray(len(design["technology"]["sizes"])) + 0 * x}

vec.metrics = {"x": ("1", "x"), "n": ("1", "sizes seen")}
vec.vectorized = True
vec.params = ("x", "technology")
"""


def _spec(tmp_path: Path, evaluator: str, trials: int = 12) -> Path:
    (tmp_path / "mutmod.py").write_text(MUTATING)
    spec = {
        "study": f"frozen-{evaluator}",
        "fixed": {"technology": {"wafer_cost_usd": 100.0, "sizes": [1, 2]}},
        "space": {"x": {"type": "float", "low": 0, "high": 1}},
        "evaluators": {"m": f"mutmod:{evaluator}"},
        "objectives": [{"metric": "m.x", "direction": "minimize"}],
        "search": {"sampler": "random", "trials": trials, "seed": 1},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.slow
def test_an_evaluator_that_doubles_a_nested_value_leaves_later_trials_unchanged(
    tmp_path: Path, studies_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("mutmod", None)
    result = api.run(_spec(tmp_path, "mut"))
    trials = result.trials
    done = trials[trials["state"] == "COMPLETE"]
    failed = trials[trials["state"] == "FAIL"]
    assert len(done) >= 3 and len(failed) >= 3, trials["state"].value_counts()
    # Every completed trial, before and after the ones that tried, saw the spec's value.
    assert (done["m.cost"] == 100.0).all() and (done["m.first_size"] == 1).all()
    assert (done["m.x"] <= 0.5).all()


def test_a_vectorized_batch_cannot_change_its_arrays_or_nested_values(tmp_path: Path) -> None:
    sys.path.insert(0, str(tmp_path))
    try:
        sys.modules.pop("mutmod", None)
        model = api.load(_spec(tmp_path, "vec"))
    finally:
        sys.path.remove(str(tmp_path))
    x = np.linspace(0.0, 1.0, 5)
    for _ in range(3):  # the same batch again: nothing it saw has changed
        out = model.evaluate({"x": x})
        np.testing.assert_array_equal(out["m.x"], np.linspace(0.0, 1.0, 5))
        np.testing.assert_array_equal(out["m.n"], np.full(5, 2.0))
    np.testing.assert_array_equal(x, np.linspace(0.0, 1.0, 5))
    assert model.context["technology"]["sizes"] == [1, 2]


def test_frozen_values_read_like_plain_ones_and_refuse_every_write() -> None:
    value = freeze({"a": {"b": [1, {"c": 2.0}]}, "arr": np.arange(3.0)})
    assert isinstance(value, dict) and isinstance(value["a"]["b"], list)
    assert value == {"a": {"b": [1, {"c": 2.0}]}, "arr": value["arr"]}
    for write in (
        lambda: value.__setitem__("a", 1),
        lambda: value["a"].update(b=1),
        lambda: value["a"]["b"].append(1),
        lambda: value["a"]["b"][1].pop("c"),
        lambda: value.setdefault("z", 1),
    ):
        with pytest.raises(TypeError, match="read-only"):
            write()
    with pytest.raises(ValueError, match="read-only"):
        value["arr"][0] = 5.0
    # Copies and pickles stay frozen, and a plain dict of one is an ordinary dict.
    for clone in (copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
        assert type(clone) is FrozenDict and type(clone["a"]["b"]) is FrozenList
        assert clone["a"]["b"][1]["c"] == 2.0
    plain = dict(value)
    plain["new"] = 1
    assert "new" not in value
