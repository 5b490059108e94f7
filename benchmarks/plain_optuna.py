"""The plain-Optuna baseline of ``dse run SPEC --trials N`` (issue 15).

What a user would write with Optuna alone for the same study: the same NSGA-II sampler and
options and seed, the same journal file storage, the same first population (the spec's
``warm_start`` designs, enqueued), and the same evaluation (the spec's evaluators through
``StudyModel.evaluate``, one design per trial, constraints with ``trial.set_constraint``).
It records less than ``dse run`` (no per-trial metrics, no records files), so it is the floor.

    .venv/bin/python benchmarks/plain_optuna.py SPEC --trials 1000 --journal /tmp/x.log
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

from dse.model.load import load
from dse.search.samplers.factory import make_sampler, sampler_options
from dse.search.study.warm_start import warm_start_designs
from dse.spec.schema import CategoricalParam, IntParam


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec", type=Path)
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--journal", type=Path, required=True)
    args = ap.parse_args()
    t0 = time.perf_counter()
    model = load(args.spec)
    search = model.spec.search
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = make_sampler(model)  # the spec's sampler with the engine's defaults, as dse runs
    assert isinstance(sampler, optuna.samplers.NSGAIISampler), "plain_optuna runs NSGA-II specs"
    study = optuna.create_study(
        study_name=model.spec.study,
        storage=JournalStorage(JournalFileBackend(str(args.journal))),
        sampler=sampler,
        directions=[o.direction for o in model.spec.objectives],
    )
    if search.warm_start:
        k = int(sampler_options(search)["population_size"])
        for design in warm_start_designs(model, samples=search.warm_start, k=k, seed=search.seed):
            study.enqueue_trial(design, skip_if_exists=True)

    def objective(trial: optuna.Trial) -> list[float]:
        params = {}
        for name, p in model.spec.space.items():
            if isinstance(p, CategoricalParam):
                params[name] = trial.suggest_categorical(name, p.choices)
            elif isinstance(p, IntParam):
                params[name] = trial.suggest_int(name, p.low, p.high, step=p.step, log=p.log)
            else:
                params[name] = trial.suggest_float(name, p.low, p.high, step=p.step, log=p.log)
        metrics = {k: float(v) for k, v in model.evaluate(params).items()}
        env = model.env(params, metrics)
        for c in model.constraints:
            trial.set_constraint(c.source, float(c.violation(env)))
        return [metrics[m] for m in model.objective_names]

    study.optimize(objective, n_trials=args.trials, catch=(Exception,))
    print(f"{len(study.trials)} trials in {time.perf_counter() - t0:.2f} s (in-process)")


if __name__ == "__main__":
    main()
