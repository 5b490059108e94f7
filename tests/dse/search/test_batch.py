"""Batched trials (ask a batch, one vectorized evaluation, tell together) record exactly what
one-at-a-time runs record for the same seed, failures included, and keep the exact total."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import optuna
import pytest
import yaml

from dse import api
from dse.errors import EvaluationError
from dse.model.batched import evaluate_trials
from dse.model.guarded import evaluate_trial
from dse.search.samplers.plugin import sampler_of
from dse.search.study.batch import BatchPlanner
from dse.search.study.runner import run_study
from dse.search.sweep.chunks import SweepPlan
from tests.conftest import SPACES

# A vectorized evaluator that fails some designs three ways: it raises for the whole batch
# when one design has x in a band, returns NaN for another band, and a constraint on a third.
FLAKY = """
import numpy as np

def flaky(design):
    x = np.asarray(design["x"], dtype=float)
    y = np.asarray(design["y"], dtype=float)
    if np.any((x > 0.90) & (x < 0.93)):
        raise RuntimeError("x in the forbidden band")
    f1 = np.where((x > 0.2) & (x < 0.23), np.nan, x)
    f2 = 1.0 + 9.0 * y - np.sqrt(np.abs(x))
    return {"f1": f1, "f2": f2, "g": x + y}

flaky.vectorized = True
flaky.metrics = {"f1": ("1", "x"), "f2": ("1", "zdt-like"), "g": ("1", "x + y")}
"""


def _flaky_spec(tmp_path: Path, name: str, sampler: str, trials: int) -> Path:
    (tmp_path / "flaky_eval.py").write_text(FLAKY)
    spec = {
        "study": name,
        "space": {
            "x": {"type": "float", "low": 0.0, "high": 1.0},
            "y": {"type": "float", "low": 0.0, "high": 1.0},
            "k": {"type": "categorical", "choices": [1, "two", 3.5]},
        },
        "evaluators": {"flaky": "flaky_eval:flaky"},
        "objectives": [
            {"metric": "flaky.f1", "direction": "minimize"},
            {"metric": "flaky.f2", "direction": "minimize"},
        ],
        "constraints": ["flaky.g <= 1.4"],
        "search": {"sampler": sampler, "trials": trials, "seed": 7}
        | ({"options": {"population_size": 10}} if sampler == "nsga2" else {}),
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _records(study: optuna.Study) -> list[tuple]:
    return [
        (
            t.number,
            t.state,
            t.params,
            t.values,
            dict(sorted(t.user_attrs.items())),
            {k: v for k, v in t.system_attrs.items() if k.startswith("constraints")},
        )
        for t in study.get_trials()
    ]


def _run(spec: Path, tmp_path: Path, *, batch: bool, trials: int) -> optuna.Study:
    model = api.load(spec)
    url = f"journal:{tmp_path / ('b' if batch else 's')}-{spec.stem}.log"
    return run_study(model, storage_url=url, trials=trials, seed_offset=0, batch=batch)


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["nsga2", "random"])
def test_batched_and_one_at_a_time_runs_record_the_same_trials(
    tmp_path: Path, studies_dir: Path, sampler: str
) -> None:
    spec = _flaky_spec(tmp_path, f"flaky-{sampler}", sampler, 70)
    seq = _records(_run(spec, tmp_path, batch=False, trials=70))
    bat = _records(_run(spec, tmp_path, batch=True, trials=70))
    assert bat == seq
    states = [r[1] for r in seq]
    failed = [r for r in seq if r[1] == optuna.trial.TrialState.FAIL]
    assert len(states) == 70 and failed, "the flaky evaluator should fail some designs"
    reasons = " / ".join(r[4]["dse.fail_reason"] for r in failed)
    # Both kinds of failure happened inside batches: a raise (the batch re-run design by
    # design) and a non-finite metric (that design alone re-run).
    assert "forbidden band" in reasons and "not finite" in reasons


@pytest.mark.slow
def test_litegpu_nsga2_batched_equals_one_at_a_time(tmp_path: Path, studies_dir: Path) -> None:
    raw = yaml.safe_load((SPACES / "litegpu.yaml").read_text())
    raw["search"] = {"sampler": "nsga2", "seed": 3, "warm_start": 2000, "options": {}}
    raw["search"]["options"] = {"population_size": 12}
    spec = tmp_path / "lg.yaml"
    spec.write_text(yaml.safe_dump(raw, sort_keys=False))
    seq = _records(_run(spec, tmp_path, batch=False, trials=40))
    bat = _records(_run(spec, tmp_path, batch=True, trials=40))
    assert bat == seq


@pytest.mark.slow
def test_a_batch_is_the_rest_of_the_generation(tmp_path: Path, studies_dir: Path) -> None:
    spec = _flaky_spec(tmp_path, "gen", "nsga2", 25)
    model = api.load(spec)
    study = _run(spec, tmp_path, batch=True, trials=25)
    complete = [t for t in study.get_trials() if t.state == optuna.trial.TrialState.COMPLETE]
    planner = BatchPlanner(sampler_of(model))
    rest = planner.size(study, 1000)
    assert 1 <= rest <= 10
    assert rest == 10 - len(complete) % 10 or len(complete) % 10 == 0
    assert planner.size(study, 3) == min(3, rest)


@pytest.mark.slow
def test_concurrent_workers_share_a_generation(tmp_path: Path, studies_dir: Path) -> None:
    from dse.search.samplers.factory import distribution
    from dse.search.study.runner import create_or_load

    spec = _flaky_spec(tmp_path, "share", "nsga2", 25)
    model = api.load(spec)
    study = create_or_load(model, f"journal:{tmp_path / 'share.log'}")
    dists = {n: distribution(p) for n, p in model.spec.space.items()}
    planner = BatchPlanner(sampler_of(model))
    assert planner.size(study, 100) == 10
    asked = [study.ask(fixed_distributions=dists) for _ in range(6)]  # another worker's batch
    assert planner.size(study, 100) == 4
    for _ in range(4):
        asked.append(study.ask(fixed_distributions=dists))
    assert planner.size(study, 100) == 5  # nothing left: half a generation joins it
    for t in asked:
        study.tell(t, [t.params["x"], t.params["y"]])
    assert planner.size(study, 100) == 10  # generation 0 complete: a whole new one


def test_vectorized_batch_evaluation_is_bit_identical_to_one_design(
    tmp_path: Path,
) -> None:
    model = api.load(SPACES / "litegpu.yaml")
    _, p = SweepPlan("samples", 64, 64, 1, space=dict(model.spec.space)).designs(0)
    designs = [{k: v[i].item() for k, v in p.items()} for i in range(64)]
    batch = evaluate_trials(model, designs)
    for d, b in zip(designs, batch, strict=True):
        one = evaluate_trial(model, d)
        assert b.metrics == one.metrics and b.violations == one.violations
        assert b.objectives == one.objectives and b.feasible == one.feasible
        assert b == one


def test_a_failing_design_fails_alone_with_its_own_reason(tmp_path: Path) -> None:
    spec = _flaky_spec(tmp_path, "alone", "random", 5)
    model = api.load(spec)
    designs = [{"x": x, "y": 0.1, "k": 1} for x in (0.1, 0.21, 0.5, 0.91)]
    out = evaluate_trials(model, designs)
    assert not isinstance(out[0], EvaluationError) and not isinstance(out[2], EvaluationError)
    assert isinstance(out[1], EvaluationError) and "not finite" in str(out[1])
    assert isinstance(out[3], EvaluationError) and "forbidden band" in str(out[3])
    assert np.isclose(out[2].metrics["flaky.f1"], 0.5)
    assert str(out[3]) == _reason(model, designs[3])


def _reason(model, design) -> str:  # noqa: ANN001
    with pytest.raises(EvaluationError) as info:
        evaluate_trial(model, design)
    return str(info.value)


@pytest.mark.slow
def test_a_batched_cli_run_keeps_the_exact_total(tmp_path: Path, studies_dir: Path) -> None:
    spec = _flaky_spec(tmp_path, "total", "nsga2", 37)
    res = api.run(spec)
    assert len(res.trials) == 37
    res = api.run(spec, trials=45)
    assert len(res.trials) == 45


def test_heartbeats_beat_every_trial_of_the_batch_until_it_ends() -> None:
    """One thread per batch records each trial's heartbeat every interval, as Optuna's
    per-trial thread does; a storage without heartbeats gets no thread; a heartbeat that fails
    (a lost server) ends the thread quietly, and the worker's own next call reports it."""
    import threading
    import time

    from dse.search.study.batch import heartbeats

    class Beats:
        def __init__(self, interval: float | None, fail: bool = False) -> None:
            self.interval, self.fail = interval, fail
            self.calls: list[int] = []

        def get_heartbeat_interval(self) -> float | None:
            return self.interval

        def record_heartbeat(self, trial_id: int) -> None:
            if self.fail:
                raise ConnectionError("server gone")
            self.calls.append(trial_id)

    storage = Beats(0.01)
    with heartbeats(storage, [3, 4, 5]):  # type: ignore[arg-type]
        time.sleep(0.1)
    after = len(storage.calls)
    assert storage.calls[:3] == [3, 4, 5] and after >= 6 and after % 3 == 0
    time.sleep(0.05)
    assert len(storage.calls) == after  # stopped with the batch
    threads = threading.active_count()
    with heartbeats(Beats(None), [1]):  # type: ignore[arg-type]
        assert threading.active_count() == threads
    with heartbeats(Beats(0.01, fail=True), [1]):  # type: ignore[arg-type]
        time.sleep(0.05)
