"""Benchmark 2: storage overhead per trial (in-memory, journal file, SQLite).

Runs the runner's own trial path (``dse.search.study.runner.run_trial``: ask, evaluate, one user
attribute per metric, constraints, tell) with a trivial custom evaluator that returns ``--metrics``
constants (78 is what ``spaces/litegpu.yaml`` records per trial), a random sampler, and each
storage. Evaluation costs microseconds, so the time per trial is the storage and Optuna overhead.

    python benchmarks/bench_storage.py [--trials 300] [--metrics 78]
"""

from __future__ import annotations

import argparse
import tempfile
import textwrap
import time
from pathlib import Path

import optuna

from dse import api
from dse.search.samplers.factory import distribution
from dse.search.storage import open_storage
from dse.search.study.runner import run_trial

EVALUATOR = """
def trivial(design):
    x = float(design["x"])
    return {f"m{i}": x + i for i in range(N_METRICS)}
"""


def _model(tmp: Path, n_metrics: int):  # noqa: ANN202 - StudyModel
    (tmp / "trivial_eval.py").write_text(
        EVALUATOR.replace("N_METRICS", str(n_metrics)), encoding="utf-8"
    )
    (tmp / "spec.yaml").write_text(
        textwrap.dedent(
            """
            study: storage-bench
            space:
              x: {type: float, low: 0, high: 1}
            evaluators: {triv: "trivial_eval:trivial"}
            objectives: [{metric: triv.m0, direction: minimize}]
            constraints: ["triv.m1 <= 1.5"]
            search: {sampler: random, trials: 100, seed: 0}
            """
        ),
        encoding="utf-8",
    )
    model = api.load(tmp / "spec.yaml")
    # Only the trivial evaluator: the built-ins would dominate the time being measured.
    model.evaluators = {"triv": model.evaluators["triv"]}
    return model


def per_trial_ms(model, storage: optuna.storages.BaseStorage, trials: int) -> float:  # noqa: ANN001
    study = optuna.create_study(
        storage=storage,
        study_name="storage-bench",
        sampler=optuna.samplers.RandomSampler(seed=0),
    )
    dists = {n: distribution(p) for n, p in model.spec.space.items()}
    run_trial(model, study, dists)  # warm-up: table creation, first journal read
    t0 = time.perf_counter()
    for _ in range(trials):
        run_trial(model, study, dists)
    return (time.perf_counter() - t0) / trials * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--metrics", type=int, nargs="+", default=[2, 78])
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    print(
        f"{'storage':10s} {'metrics':>7s} {'ms/trial':>9s}  ({args.trials} trials, random sampler)"
    )
    for n_metrics in args.metrics:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            model = _model(tmp, n_metrics)
            storages = {
                "in-memory": "memory",
                "journal": f"journal:{tmp / 'journal.log'}",
                "sqlite": f"sqlite:///{tmp / 'study.db'}",
            }
            for name, url in storages.items():
                storage = (
                    optuna.storages.InMemoryStorage() if url == "memory" else open_storage(url)
                )
                ms = per_trial_ms(model, storage, args.trials)
                print(f"{name:10s} {n_metrics:7d} {ms:9.2f}")


if __name__ == "__main__":
    main()
