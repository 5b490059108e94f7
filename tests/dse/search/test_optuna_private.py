"""Optuna's private API is used in one small adapter module only (issue 16, item 5).

``dse/search/optuna_private.py`` holds every private Optuna and optuna-dashboard access the
engine needs (run path, batched storage writes, dashboard notes). Anywhere else, a private name
(``x._y`` on anything but ``self``/``cls``, or an import from a private Optuna module) fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

import optuna
from optuna.distributions import FloatDistribution

from dse.search import optuna_private as op
from dse.search.samplers.plugin import genetic_sampler
from dse.search.study.batch import suggest

DSE = Path(__file__).resolve().parents[3] / "dse"
ADAPTERS = {"search/optuna_private.py"}


#: Names with a leading underscore that the standard library documents as public.
DOCUMENTED = {("os", "_exit")}


def private_uses(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            if node.attr.startswith("__"):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if isinstance(node.value, ast.Name) and (node.value.id, node.attr) in DOCUMENTED:
                continue
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if parts[0].startswith("optuna") and any(p.startswith("_") for p in parts):
                found.append(f"line {node.lineno}: from {node.module} import ...")
    return found


def test_no_private_optuna_use_outside_the_adapter() -> None:
    offenders = {
        str(p.relative_to(DSE)): private_uses(p)
        for p in sorted(DSE.rglob("*.py"))
        if str(p.relative_to(DSE)) not in ADAPTERS
    }
    assert not {k: v for k, v in offenders.items() if v}


def test_the_checker_sees_a_private_use(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from optuna.storages._heartbeat import x\ndef f(s):\n    return s._storage\n"
    )
    assert [u.split(":")[0] for u in private_uses(probe)] == ["line 1", "line 3"]
    probe.write_text("import os\nos._exit(0)\n")  # documented: os._exit is public
    assert private_uses(probe) == []


def test_adapter_functions_on_a_real_study() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    storage = op.storage_of(study)
    assert isinstance(storage, optuna.storages.BaseStorage)
    study.enqueue_trial({"x": 0.25})
    tid = op.pop_waiting_trial_id(study)
    assert tid is not None and op.pop_waiting_trial_id(study) is None
    trial = optuna.Trial(study, tid)
    assert op.trial_id(trial) == tid
    assert suggest(trial, "x", FloatDistribution(0.0, 1.0)) == 0.25  # the enqueued value
    study.tell(trial, 1.0)
    (frozen,) = study.get_trials()
    assert op.trial_id(frozen) == tid and frozen.params == {"x": 0.25}
    assert storage.get_study_id_from_name(study.study_name) == op.study_id(study)
    assert op.stale_trial_ids(study) == []
    op.forget_cached_trials(study)
    assert len(study.get_trials()) == 1
    assert genetic_sampler(study.sampler) is None
    nsga = optuna.samplers.NSGAIISampler(population_size=8, seed=0)
    assert genetic_sampler(nsga) is nsga
    assert op.generation_key(nsga) == "NSGAIISampler:generation"


def test_public_suggest_draws_what_the_private_one_drew() -> None:
    """``dse.search.study.batch.suggest`` (public ``suggest_*`` calls) replaced Optuna's private
    ``Trial._suggest``: the same seeded draws, the same stored distributions, for every kind."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dists = {
        "f": FloatDistribution(0.5, 4.0),
        "flog": FloatDistribution(1.0, 1000.0, log=True),
        "fstep": FloatDistribution(0.0, 1.0, step=0.25),
        "i": IntDistribution(1, 9),
        "istep": IntDistribution(2, 20, step=2),
        "ilog": IntDistribution(1, 512, log=True),
        "c": CategoricalDistribution(["a", "b", 3, None]),
    }
    runs = []
    for public in (True, False):
        study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=3, n_startup_trials=4))
        for _ in range(8):
            trial = study.ask()
            for name, dist in dists.items():
                if public:
                    suggest(trial, name, dist)
                else:
                    trial._suggest(name, dist)
            study.tell(trial, float(len(str(trial.params))))
        runs.append([(t.params, t.distributions) for t in study.get_trials()])
    assert runs[0] == runs[1]
