"""Many trials' designs evaluated in one vectorized call, each failure still its own trial's.

The evaluators broadcast over arrays, so a batch of B designs (a generation of NSGA-II) costs
about one scalar evaluation instead of B. Anything unusual falls back to the one-design path
of :func:`dse.model.guarded.evaluate_trial` for the designs it concerns: a batch whose
vectorized call raises is evaluated design by design (so only the failing design fails, with
the same reason word for word), and so is every design with a non-finite metric or constraint.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dse.errors import EvaluationError
from dse.model.guarded import evaluate_trial
from dse.model.outcome import Outcome
from dse.model.study_model import StudyModel

#: What a trial gets: its outcome, or the error that fails it.
Result = Outcome | EvaluationError


def as_column(values: Sequence[Any]) -> np.ndarray:
    """One parameter's values as an array (a batch's designs, a grid's choices); mixed types
    (``[0.5, "big", 2]``) stay Python objects, since numpy would make them all strings."""
    if len({type(v) for v in values}) <= 1:
        return np.asarray(values)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _one(
    model: StudyModel,
    params: Mapping[str, Any],
    evaluate: Callable[[Mapping[str, Any]], Outcome] | None,
) -> Result:
    try:
        return evaluate(params) if evaluate is not None else evaluate_trial(model, params)
    except EvaluationError as exc:
        return exc


def evaluate_trials(
    model: StudyModel,
    designs: Sequence[Mapping[str, Any]],
    *,
    evaluate: Callable[[Mapping[str, Any]], Outcome] | None = None,
    vectorized: bool = True,
) -> list[Result]:
    """Each design's Outcome, or the EvaluationError that fails its trial.

    ``evaluate`` is the one-design evaluator (``trial_evaluator``: in-process, or in a deadline
    child when the spec sets ``search.trial_timeout_s``); with ``vectorized=False`` every design
    goes through it, which is how time limits stay per design.
    """
    if not designs:
        return []
    if not vectorized or len(designs) == 1:
        return [_one(model, d, evaluate) for d in designs]
    names = list(designs[0])
    if any(list(d) != names for d in designs):
        return [_one(model, d, evaluate) for d in designs]
    arrays = {n: as_column([d[n] for d in designs]) for n in names}
    n = len(designs)
    try:
        with np.errstate(all="ignore"):
            raw = model.evaluate(arrays, strict=False)
            batch = Outcome.batch(raw, model.violations(arrays, raw), model.objective_names, n)
    except Exception:  # noqa: BLE001 - find the failing designs one by one
        return [_one(model, d, evaluate) for d in designs]
    ok = np.all(np.isfinite(np.column_stack([*batch.metrics.values(), *batch.violations])), axis=1)
    keys = list(batch.metrics)
    values = np.column_stack(list(batch.metrics.values())).tolist()
    viol = (
        np.column_stack(batch.violations).tolist() if batch.violations else [[] for _ in range(n)]
    )
    verdict = batch.feasible.tolist()
    out: list[Result] = []
    for i, d in enumerate(designs):
        if not ok[i]:
            out.append(_one(model, d, evaluate))
            continue
        metrics = dict(zip(keys, values[i], strict=True))
        objectives = [metrics[m] for m in model.objective_names]
        out.append(Outcome(metrics, viol[i], verdict[i], objectives))
    return out
