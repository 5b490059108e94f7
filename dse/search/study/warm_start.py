"""The warm start: a new study's first population taken from a coarse vectorized sweep.

Only the sweep's chunks are used (:mod:`dse.search.sweep.chunks`: the quasi-random designs,
one vectorized evaluation per chunk, the merged feasible front), in this process: none of the
sweep command's study folder, resume files, local processes or Dask cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import moocore
import numpy as np
import optuna

from dse.errors import EvaluationError
from dse.model.pareto import as_min, reference_point
from dse.model.study_model import StudyModel
from dse.search.samplers.factory import make_sampler, sampler_options
from dse.search.samplers.plugin import genetic_sampler
from dse.search.spec_lock import plain
from dse.search.study.recovery import enqueue_trials
from dse.search.sweep.chunks import (
    DEFAULT_CHUNK,
    SweepPlan,
    SweepTally,
    evaluate_chunk,
    front_frame,
)

if TYPE_CHECKING:
    import pandas as pd

#: Study attributes: the warm start's designs (stored before any is enqueued), and that all
#: of them were enqueued.
WARM_START_ATTR = "dse.warm_start"
WARM_START_DONE_ATTR = "dse.warm_start_done"


#: The warm start a spec gets when it sets none and the search can afford one (the sweep
#: the shipped example spec of three objectives sets). On that space NSGA-II without it
#: stalled on the thin feasible front for some seeds (worst of 100 seeds 48 % of the exact
#: hypervolume at 1,000 trials); with it the worst of 50 seeds reached 98.9 %
#: (benchmarks/RESULTS.md, issue 28).
AUTO_WARM_START = 20_000


def warm_start_samples(model: StudyModel) -> int:
    """How many designs the warm start sweeps: the spec's ``warm_start``, else
    :data:`AUTO_WARM_START` when the sweep is cheap and useful (every evaluator vectorized,
    no per-trial time limit, not robust, a sampler with a first population), else 0 (off)."""
    from dse.model.robust import RobustStudyModel

    search = model.spec.search
    if isinstance(model, RobustStudyModel):
        return 0  # a robust model scores one design at a time over its scenarios: no sweep
    if search.warm_start is not None:
        return search.warm_start
    if search.trial_timeout_s is not None or model.spec.robust is not None:
        return 0  # each design alone in a deadline child / many draws per design
    if not model.evaluators or not all(ev.vectorized for ev in model.evaluators.values()):
        return 0
    if genetic_sampler(make_sampler(model)) is None:
        return 0
    return AUTO_WARM_START


def enqueue_warm_start(model: StudyModel, study: optuna.Study) -> None:
    """Seed a new study's first population from a coarse vectorized sweep.

    The designs are stored in the study before the first is enqueued, so a run killed while
    enqueueing leaves the rest to the next run, which enqueues what is missing; a study that
    has trials but no stored designs predates warm start and gets none.
    """
    attrs = study.user_attrs
    if attrs.get(WARM_START_DONE_ATTR):
        return
    designs = attrs.get(WARM_START_ATTR)
    if designs is None:
        if study.get_trials(deepcopy=False):
            return
        search = model.spec.search
        options = sampler_options(search, spec_dir=model.loaded.path.parent)
        k = int(options.get("population_size", 50))
        try:
            samples = warm_start_samples(model)
            designs = warm_start_designs(model, samples=samples, k=k, seed=search.seed)
        except EvaluationError:
            if search.warm_start is not None:
                raise
            designs = []  # the automatic one skips an evaluator that fails on some designs
        study.set_user_attr(WARM_START_ATTR, designs)
    enqueue_trials(study, designs)
    study.set_user_attr(WARM_START_DONE_ATTR, True)


def warm_start_designs(
    model: StudyModel, *, samples: int, k: int, seed: int | None = 0
) -> list[dict[str, Any]]:
    """Up to ``k`` designs of a coarse quasi-random sweep's feasible front, chosen for volume.

    Enqueued as a sampler's first trials (``search.warm_start``), they start NSGA-II's first
    generation on the front instead of at random: the vectorized sweep costs about a second
    for 10^5 designs, while as many Optuna trials would take minutes. The ``k`` designs are
    chosen by greedily dropping the design of least hypervolume contribution (moocore), with
    the reference point of :func:`dse.model.pareto.reference_point` (thresholds, else the
    coarse front's nadir + 10 %).
    """
    front = _coarse_front(model, samples=samples, seed=seed)
    if front.empty or k < 1:
        return []
    names, maximize = model.objective_names, model.maximize
    values = front[names].to_numpy(dtype=float)
    ref = reference_point(
        thresholds=[o.threshold for o in model.spec.objectives],
        maximize=maximize,
        reference_set=values,
    )
    pts, r = as_min(values, maximize), as_min(ref, maximize)[0]
    idx = np.flatnonzero(np.all(pts < r, axis=1))
    while len(idx) > k:
        contrib = moocore.hv_contributions(pts[idx], ref=r)
        idx = np.delete(idx, int(np.argmin(contrib)))
    cols = {n: front[f"params.{n}"].to_numpy() for n in model.spec.space}
    return plain([{n: v[i] for n, v in cols.items()} for i in sorted(idx)])


def _coarse_front(model: StudyModel, *, samples: int, seed: int | None) -> pd.DataFrame:
    """The feasible front of ``samples`` quasi-random designs, chunk by chunk in this process
    (the front ``dse sweep --samples`` finds with the same seed)."""
    plan = SweepPlan("samples", samples, DEFAULT_CHUNK, seed, space=dict(model.spec.space))
    tally = SweepTally(model.objective_names, model.maximize)
    for index in range(plan.n_chunks):
        tally.add(evaluate_chunk(model, plan, index))
    return front_frame(tally, model.objective_names)
