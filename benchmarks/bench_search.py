"""Benchmark 3: search quality of Optuna's samplers against the true or exact front.

For each sampler and seed, run a study on the spec (in-memory storage: this measures search,
not storage) and record the hypervolume of its feasible front after 100..2000 trials as a
fraction of the reference front's hypervolume, with the same reference point:

- ``spaces/litegpu.yaml``: the exact grid front (``dse sweep SPEC --grid``), reference point its
  nadir pushed out by 10 % of its range (dse.model.pareto);
- ``spaces/zdt1/spec.yaml`` and ``spaces/dtlz2/spec.yaml`` (``--front analytic``): the true
  front's hypervolume in closed form, reference point the specs' thresholds (1.1 each).

pymoo's NSGA-II at equal evaluations is the outside reference. ``default`` is the engine's
default search (``sampler: nsga2`` without options, dse.search.samplers.factory.GA_DEFAULTS);
``nsga2-optuna`` is Optuna's own NSGA-II defaults.

Samplers whose choice does not depend on trials still running (NSGA-II/III within a generation,
random) are asked a generation at a time and evaluated vectorized, which gives the same samples
as one-by-one ask/tell and is much faster; TPE and GP are asked and told one trial at a time.

    python benchmarks/bench_search.py --front studies/litegpu/sweep_front.csv --seeds 5
    python benchmarks/bench_search.py --spec spaces/zdt1/spec.yaml --front analytic --seeds 10 \
        --samplers default,nsga2-optuna,pymoo-nsga2
    python benchmarks/bench_search.py --spec spaces/dtlz2/spec.yaml --front analytic --seeds 10 \
        --samplers default,nsga2-optuna,pymoo-nsga2

Prints one table of median (min..max) fractions per sampler and checkpoint, and writes the raw
per-seed figures as JSON (``--out``).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pandas as pd

from dse import api
from dse.model.outcome import Outcome
from dse.model.study_model import StudyModel
from dse.results.quality import front_hypervolume, hypervolume_history, reference_point
from dse.search.samplers.factory import distribution, make_sampler, sampler_options
from dse.search.study.warm_start import warm_start_designs
from dse.spec.schema import SearchSpec

CHECKPOINTS = [100, 250, 500, 1000, 2000, 4000]
BATCHED = {"nsga2", "nsga3", "random"}

# name -> (sampler, options, trials, extra)
OPTUNA_NSGA2 = {
    "population_size": 50,
    "crossover": "uniform",
    "mutation": "resample",
    "mutation_prob": None,
}
# Closed forms at the reference point (1.1, ...), see tests/dse/search/test_default_search.py
TRUE_HV = {
    "zdt1": (1.1 - 1 + 2 / 3) + 0.1 * 1.1,
    "dtlz2": 1.1**3 - math.pi / 6,
}

CONFIGS: dict[str, tuple[str, dict[str, Any], int, dict[str, Any]]] = {
    "default": ("nsga2", {}, 2000, {}),
    "nsga2-optuna": ("nsga2", OPTUNA_NSGA2, 2000, {}),
    "nsga2-optuna-pop20": ("nsga2", {**OPTUNA_NSGA2, "population_size": 20}, 2000, {}),
    "nsga2-sbx-pm20": ("nsga2", {"mutation": {"name": "polynomial", "eta": 20}}, 2000, {}),
    "nsga2-sbx-pop30": ("nsga2", {"population_size": 30}, 2000, {}),
    "nsga2-sbx-mp03": ("nsga2", {"mutation_prob": 0.3}, 2000, {}),
    "nsga2": ("nsga2", {"population_size": 50}, 2000, {}),
    "nsga2-pop20": ("nsga2", {"population_size": 20}, 2000, {}),
    "nsga2-pop100": ("nsga2", {"population_size": 100}, 2000, {}),
    "nsga2-warm": ("nsga2", {}, 2000, {"warm_samples": 20_000}),
    "nsga2-warm4k": ("nsga2", {}, 2000, {"warm_samples": 4096}),
    "nsga2-warm100k": ("nsga2", {}, 2000, {"warm_samples": 100_000}),
    "nsga2-pop20-warm": ("nsga2", {"population_size": 20}, 2000, {"warm_samples": 20_000}),
    "nsga2-pop100-warm": ("nsga2", {"population_size": 100}, 2000, {"warm_samples": 20_000}),
    "nsga2-pop100-warm100k": ("nsga2", {"population_size": 100}, 2000, {"warm_samples": 100_000}),
    "tpe-multivariate-warm": ("tpe", {"multivariate": True}, 1000, {"warm_samples": 20_000}),
    "nsga3": ("nsga3", {}, 2000, {}),
    "tpe": ("tpe", {}, 1000, {}),
    "tpe-multivariate": ("tpe", {"multivariate": True}, 1000, {}),
    "gp": ("gp", {}, 300, {}),
    "random": ("random", {}, 4000, {}),
}


def _setup(spec: str, front_csv: str) -> tuple[StudyModel, np.ndarray, float]:
    model = api.load(spec)
    if front_csv == "analytic":
        ref = reference_point(
            thresholds=[o.threshold for o in model.spec.objectives],
            maximize=model.maximize,
            reference_set=None,
        )
        return model, ref, TRUE_HV[model.spec.study]
    exact = pd.read_csv(front_csv)[model.objective_names].to_numpy(dtype=float)
    ref = reference_point(
        thresholds=[o.threshold for o in model.spec.objectives],
        maximize=model.maximize,
        reference_set=exact,
    )
    return model, ref, front_hypervolume(exact, ref, model.maximize)


def _evaluate_batch(model: StudyModel, trials: list[optuna.trial.Trial]) -> Outcome:
    names = list(model.spec.space)
    params = {n: np.array([t.params[n] for t in trials]) for n in names}
    metrics = model.evaluate(params, strict=False)
    return Outcome.batch(
        metrics, model.violations(params, metrics), model.objective_names, len(trials)
    )


def run_optuna(
    model: StudyModel, sampler: str, options: dict[str, Any], seed: int, trials: int, extra: dict
) -> dict[str, Any]:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore")
    search = SearchSpec(sampler=sampler, options=options, seed=seed, trials=trials)
    study = optuna.create_study(
        directions=[o.direction for o in model.spec.objectives],
        sampler=make_sampler(model, search),
    )
    dists = {n: distribution(p) for n, p in model.spec.space.items()}
    warm_s = 0.0
    if extra.get("warm_samples"):
        pop = sampler_options(search)["population_size"]
        t_warm = time.perf_counter()
        for p in warm_start_designs(model, samples=extra["warm_samples"], k=pop, seed=seed):
            study.enqueue_trial(p)
        warm_s = time.perf_counter() - t_warm
    batch = sampler_options(search).get("population_size", 50) if sampler in BATCHED else 1
    objs, feas = [], []
    t0 = time.perf_counter()
    done = 0
    while done < trials:
        asked = [study.ask(fixed_distributions=dists) for _ in range(min(batch, trials - done))]
        out = _evaluate_batch(model, asked)
        obj = np.column_stack(out.objectives)
        for i, (t, o) in enumerate(zip(asked, obj, strict=True)):
            for expr, vi in zip(model.constraints, out.violations, strict=True):
                t.set_constraint(expr.source, float(vi[i]))
            if np.all(np.isfinite(o)):
                study.tell(t, [float(x) for x in o])
            else:
                study.tell(t, state=optuna.trial.TrialState.FAIL)
        objs.append(obj)
        feas.append(out.feasible)
        done += len(asked)
    return {
        "values": np.vstack(objs),
        "feasible": np.concatenate(feas),
        "seconds": time.perf_counter() - t0 + warm_s,
        "warm_s": warm_s,
    }


def run_pymoo(model: StudyModel, seed: int, evaluations: int, *, pop: int = 50) -> dict[str, Any]:
    """pymoo NSGA-II (SBX + PM on a continuous encoding rounded onto the grid)."""
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.core.problem import Problem
    from pymoo.optimize import minimize

    from dse.search.sweep.sweep import _from_unit

    space = dict(model.spec.space)
    names = list(space)
    sign = np.where(model.maximize, -1.0, 1.0)
    log: dict[str, list[np.ndarray]] = {"values": [], "feasible": []}

    def decode(x: np.ndarray) -> dict[str, np.ndarray]:
        return {
            n: _from_unit(space[n], np.clip(x[:, j], 0, 1 - 1e-12)) for j, n in enumerate(names)
        }

    class Space(Problem):
        def __init__(self) -> None:
            super().__init__(
                n_var=len(names),
                n_obj=len(sign),
                n_ieq_constr=len(model.constraints),
                xl=0.0,
                xu=1.0,
            )

        def _evaluate(self, x: np.ndarray, out: dict[str, Any], *args: Any, **kw: Any) -> None:
            params = decode(x)
            metrics = model.evaluate(params, strict=False)
            res = Outcome.batch(
                metrics, model.violations(params, metrics), model.objective_names, len(x)
            )
            obj = np.column_stack(res.objectives)
            bad = ~np.all(np.isfinite(obj), axis=1)
            obj = np.where(bad[:, None], 1e30, obj)
            log["values"].append(obj)
            log["feasible"].append(res.feasible & ~bad)
            out["F"] = obj * sign
            if res.violations:
                out["G"] = np.column_stack(res.violations)

    t0 = time.perf_counter()
    minimize(Space(), NSGA2(pop_size=pop), ("n_eval", evaluations), seed=seed, verbose=False)
    values = np.vstack(log["values"])[:evaluations]
    return {
        "values": values,
        "feasible": np.concatenate(log["feasible"])[:evaluations],
        "seconds": time.perf_counter() - t0,
        "warm_s": 0.0,
    }


def _job(args: tuple[str, str, str, int, int]) -> dict[str, Any]:
    spec, front_csv, name, seed, trials = args
    model, ref, exact_hv = _setup(spec, front_csv)
    if name.startswith("pymoo-nsga2"):
        res = run_pymoo(model, seed, trials, pop=20 if name.endswith("pop20") else 50)
    else:
        sampler, options, _, extra = CONFIGS[name]
        res = run_optuna(model, sampler, options, seed, trials, extra)
    hist = hypervolume_history(res["values"], res["feasible"], ref, model.maximize) / exact_hv
    at = {c: float(hist[c - 1]) for c in CHECKPOINTS if c <= len(hist)}
    reach = np.flatnonzero(hist >= 0.99)
    return {
        "name": name,
        "seed": seed,
        "trials": len(hist),
        "fraction_at": at,
        "trials_to_99": int(reach[0]) + 1 if len(reach) else None,
        "seconds": res["seconds"],
        "warm_s": res["warm_s"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default="spaces/litegpu.yaml")
    ap.add_argument("--front", default="studies/litegpu/sweep_front.csv")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--samplers", default=",".join([*CONFIGS, "pymoo-nsga2"]))
    ap.add_argument("--trials-scale", type=float, default=1.0, help="scale every trial budget")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="benchmarks/search_results.json")
    args = ap.parse_args()

    names = [n for n in args.samplers.split(",") if n]
    if "gp" in names:
        try:
            import torch  # noqa: F401
        except ImportError:
            print("gp: NOT RUN (torch is not installed; pip install 'litegpu-dse[gp]')")
            names.remove("gp")
    budget = {k: c[2] for k, c in CONFIGS.items()}
    budget["pymoo-nsga2"] = budget["nsga2"]
    budget["pymoo-nsga2-pop20"] = budget["nsga2"]
    budget = {k: max(100, int(v * args.trials_scale)) for k, v in budget.items()}
    _, _, exact_hv = _setup(args.spec, args.front)
    print(f"exact front hypervolume {exact_hv:.6g} ({args.front})")
    jobs = [(args.spec, args.front, n, s, budget[n]) for n in names for s in range(args.seeds)]
    # Slowest first so the pool stays busy.
    cost = {"tpe": 3, "tpe-multivariate": 3, "gp": 4}
    jobs.sort(key=lambda j: -cost.get(j[2], 1))
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(args.workers) as pool:
        results = pool.map(_job, jobs, chunksize=1)
    wall = time.perf_counter() - t0
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")

    print(f"{len(jobs)} runs in {wall:.0f} s wall ({args.workers} workers)")
    header = ["sampler", *[str(c) for c in CHECKPOINTS], "trials to 99% (median)", "s/run"]
    print(" | ".join(header))
    for n in names:
        rs = [r for r in results if r["name"] == n]
        cells = [n]
        for c in CHECKPOINTS:
            v = [r["fraction_at"][c] for r in rs if c in r["fraction_at"]]
            cells.append(
                f"{100 * np.median(v):.2f} ({100 * min(v):.1f}..{100 * max(v):.1f})" if v else "-"
            )
        reach = [r["trials_to_99"] if r["trials_to_99"] else math.inf for r in rs]
        med = np.median(reach)
        cells.append(f"{med:.0f}" if math.isfinite(med) else f">{rs[0]['trials']}")
        cells.append(f"{np.median([r['seconds'] for r in rs]):.1f}")
        print(" | ".join(cells))


if __name__ == "__main__":
    main()
