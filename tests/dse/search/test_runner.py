"""The Optuna glue, in process: samplers, totals, resume, stale trials, feasibility."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import optuna
import pytest
import yaml

from dse import api
from dse.errors import SpecError, StorageError
from dse.search.storage import open_storage
from dse.search.stored import STALE_ATTR, WORKER_ATTR
from dse.search.study.recovery import recover_stale_trials

SPEC = {
    "study": "r",
    "fixed": {"gpu": "h100-sxm", "link_type": "cpo", "lane_gbps": 200},
    "space": {
        "die_area_mm2": {"type": "float", "low": 150, "high": 850, "step": 50},
        "hbm_stacks_per_die": {"type": "int", "low": 1, "high": 6},
        "cluster_size": {"type": "categorical", "choices": [64, 512]},
    },
    "objectives": [
        {"metric": "cost.usd_per_mtok", "direction": "minimize"},
        {"metric": "perf.tokens_per_joule", "direction": "maximize"},
    ],
    "constraints": ["perf.model_fits", "perf.shoreline_used_fraction <= 1"],
    "search": {"sampler": "nsga2", "trials": 12, "seed": 0},
}


def _spec(tmp_path: Path, **search: object) -> Path:
    data = {**SPEC, "search": {**SPEC["search"], **search}}
    p = tmp_path / "spec.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


@pytest.mark.slow
@pytest.mark.parametrize(
    "sampler,options",
    [
        ("nsga2", {"population_size": 6}),
        ("nsga3", {"population_size": 6}),
        ("tpe", {}),
        ("random", {}),
        ("tpe", {"multivariate": True}),
    ],
)
def test_each_sampler_runs_to_the_total(
    tmp_path: Path, studies_dir: Path, sampler: str, options: dict
) -> None:
    res = api.run(_spec(tmp_path, sampler=sampler, options=options))
    assert len(res.trials) == 12
    assert res.study.metric_names == ["cost.usd_per_mtok", "perf.tokens_per_joule"]
    # Every published metric is on every complete trial; the front holds only feasible trials.
    complete = res.trials[res.trials["state"] == "COMPLETE"]
    assert complete["cost.die_yield"].notna().all()
    assert res.front["feasible"].all()
    infeasible = complete[~complete["feasible"].astype(bool)]
    assert not set(infeasible["number"]) & set(res.front["number"])
    # Each complete trial also carries its feasibility as a user attr (shown by the dashboard).
    stored = {
        t.number: t.user_attrs["dse.feasible"]
        for t in res.study.get_trials()
        if t.state == optuna.trial.TrialState.COMPLETE
    }
    assert stored == dict(zip(complete["number"], complete["feasible"].astype(bool), strict=True))


@pytest.mark.slow
def test_same_seed_same_trials(tmp_path: Path, studies_dir: Path) -> None:
    a = api.run(_spec(tmp_path, sampler="random"))
    spec_b = tmp_path / "b.yaml"
    spec_b.write_text((tmp_path / "spec.yaml").read_text().replace("study: r", "study: r2"))
    b = api.run(spec_b)
    cols = [c for c in a.trials.columns if c.startswith("params.")]
    assert a.trials[cols].equals(b.trials[cols])


@pytest.mark.slow
def test_grid_sampler_stops_when_the_grid_is_exhausted(tmp_path: Path, studies_dir: Path) -> None:
    p = tmp_path / "g.yaml"
    data = {
        **SPEC,
        "space": {"die_area_mm2": {"type": "float", "low": 200, "high": 800, "step": 200}},
        "search": {"sampler": "grid", "trials": 50, "seed": 0},
    }
    p.write_text(yaml.safe_dump(data))
    res = api.run(p)
    assert sorted(res.trials["params.die_area_mm2"]) == [200.0, 400.0, 600.0, 800.0]


@pytest.mark.slow
def test_grid_needs_steps_and_unknown_options_are_listed(tmp_path: Path) -> None:
    data = {**SPEC, "search": {"sampler": "grid", "trials": 5, "seed": 0}}
    data["space"] = {"die_area_mm2": {"type": "float", "low": 200, "high": 800}}
    p = tmp_path / "g.yaml"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError, match="needs a 'step'"):
        api.run(p)
    with pytest.raises(SpecError, match="unknown option 'populaton_size'.*population_size"):
        api.run(_spec(tmp_path, options={"populaton_size": 4}))


@pytest.mark.slow
def test_gp_sampler_needs_its_extra(tmp_path: Path, studies_dir: Path) -> None:
    spec = _spec(tmp_path, sampler="gp", trials=3)
    if importlib.util.find_spec("torch") is None:
        with pytest.raises(SpecError, match=r"pip install 'litegpu-dse\[gp\]'"):
            api.run(spec)
    else:
        assert len(api.run(spec).trials) == 3


@pytest.mark.slow
def test_dead_workers_running_trials_are_requeued(tmp_path: Path, studies_dir: Path) -> None:
    spec = _spec(tmp_path, sampler="random", trials=6)
    api.run(spec)  # creates the study with 6 finished trials
    url = f"journal:{studies_dir / 'r' / 'journal.log'}"
    study = optuna.load_study(study_name="r", storage=open_storage(url))
    # A worker that died mid-trial: its pid no longer exists on this host.
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    t = study.ask(
        {
            "die_area_mm2": optuna.distributions.FloatDistribution(150, 850, step=50),
            "hbm_stacks_per_die": optuna.distributions.IntDistribution(1, 6),
            "cluster_size": optuna.distributions.CategoricalDistribution([64, 512]),
        }
    )
    t.set_user_attr(WORKER_ATTR, f"{socket.gethostname()}:{dead}")
    params = dict(t.params)
    assert recover_stale_trials(study) == 1
    stale = [x for x in study.get_trials() if x.user_attrs.get(STALE_ATTR)]
    assert len(stale) == 1 and stale[0].state == optuna.trial.TrialState.FAIL
    # Resuming to 8 finished trials re-evaluates the dead trial's parameters first.
    res = api.run(spec, trials=8)
    finished = res.trials[(res.trials["state"] != "RUNNING") & ~res.trials["stale"]]
    assert len(finished) == 8
    requeued = res.trials[res.trials["number"] == t.number + 1]
    assert requeued["params.die_area_mm2"].item() == params["die_area_mm2"]
    assert os.getpid() != int(dead)


def test_custom_scalar_evaluator_is_looped_in_batches(tmp_path: Path) -> None:
    (tmp_path / "scalar_mod.py").write_text(
        textwrap.dedent("""
        def area_squared(design):
            a = design["die_area_mm2"]
            assert isinstance(a, (int, float)), type(a)   # scalar-only on purpose
            return {"a2": a * a}
    """)
    )
    data = {**SPEC, "evaluators": {"sq": "scalar_mod:area_squared"}}
    p = tmp_path / "spec.yaml"
    p.write_text(yaml.safe_dump(data))
    model = api.load(p)
    out = model.evaluate(
        {"die_area_mm2": [200.0, 300.0], "hbm_stacks_per_die": [2, 2], "cluster_size": [64, 64]}
    )
    assert list(out["sq.a2"]) == [40000.0, 90000.0]
    one = model.evaluate({"die_area_mm2": 300.0, "hbm_stacks_per_die": 2, "cluster_size": 64})
    assert float(one["cost.die_yield"]) == pytest.approx(float(out["cost.die_yield"][1]))


@pytest.mark.slow
def test_relative_storage_paths_are_recorded_absolute(
    tmp_path: Path, studies_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dse.search.storage import storage_url

    monkeypatch.chdir(tmp_path)
    assert storage_url("r", "sqlite:///x.db") == f"sqlite:///{tmp_path / 'x.db'}"
    allowed = storage_url("r", "journal:j.log", journal_outside_studies=True)
    assert allowed == f"journal:{tmp_path / 'j.log'}"
    with pytest.raises(StorageError, match="outside the studies folder"):
        storage_url("r", "journal:j.log")
    assert storage_url("r", "postgresql://u@h/db") == "postgresql://u@h/db"
    res = api.run(_spec(tmp_path, sampler="random", trials=2), storage="sqlite:///rel.db")
    lock = yaml.safe_load((studies_dir / "r" / "spec.lock.yaml").read_text())
    assert lock["storage"] == f"sqlite:///{tmp_path / 'rel.db'}"
    assert len(res.trials) == 2


def test_a_claim_takes_at_most_what_the_study_lacked_and_gives_nothing_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No lock between workers (docs/scale-out.md): a worker claims at most the trials the study
    lacked when it counted, so one that counted before another's batch landed passes the total
    by at most that batch, and nothing is given back or FAILED; once the study has the total
    finished or running, a claim takes nothing."""
    from types import SimpleNamespace

    from dse.search.study import runner
    from dse.search.study.batch import BatchPlanner

    study = optuna.create_study(storage=optuna.storages.InMemoryStorage())
    planner = BatchPlanner(SimpleNamespace(independent=True))  # type: ignore[arg-type]
    first, finished = runner._claim(study, planner, 8, batch=True)
    assert (len(first), finished) == (2, 0)  # a quarter of the 8 lacking
    with monkeypatch.context() as m:  # counted before the first batch landed
        m.setattr(runner, "study_load", lambda _study: (0, 0))
        late, _ = runner._claim(study, planner, 8, batch=True)
    assert len(late) == 2
    claimed = len(first) + len(late)
    while ids := runner._claim(study, planner, 8, batch=True)[0]:
        claimed += len(ids)
    assert claimed == 8  # the late count cost nothing here: 4 trials still lacked
    with monkeypatch.context() as m:  # near the total: passed by at most the late batch
        m.setattr(runner, "study_load", lambda _study: (0, 7))
        over, _ = runner._claim(study, planner, 8, batch=True)
    assert len(over) == 1 and len(study.get_trials()) == 9
    assert {t.state for t in study.get_trials()} == {optuna.trial.TrialState.RUNNING}
    assert runner._claim(study, planner, 8, batch=True) == ([], 0)
