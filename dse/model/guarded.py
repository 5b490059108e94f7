"""One trial's evaluation, guarded: whatever goes wrong fails that trial, never the study.

``evaluate_trial`` turns every exception, non-finite or oversized value, missing metric and
constraint error into an ``EvaluationError`` carrying the reason. Evaluations take the one
isolation path (:class:`dse.model.isolation.Isolated`): in-process and free without a time
limit; with ``search.trial_timeout_s`` in a persistent forked child, where a design that hangs,
even inside C code holding the GIL, is killed at the deadline and the child replaced, at the
cost of one pipe round trip per trial.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import numpy as np

from dse.errors import EvaluationError, EvaluationTimeout
from dse.model.isolation import CallFailed, DeadlineExceeded, Isolated
from dse.model.outcome import Outcome
from dse.model.study_model import StudyModel


def evaluate_trial(model: StudyModel, params: Mapping[str, Any]) -> Outcome:
    """Evaluate one design for a trial; any failure raises EvaluationError with the reason."""
    try:
        raw = model.evaluate(params)
        metrics = {k: float(v) for k, v in raw.items()}
    except EvaluationError:
        raise
    except Exception as exc:  # noqa: BLE001 - any evaluator failure is this trial's
        raise EvaluationError(f"evaluation raised {type(exc).__name__}: {exc}") from exc
    missing = [m for m in model.objective_names if m not in metrics]
    if missing:
        raise EvaluationError(
            f"the evaluators returned no {', '.join(repr(m) for m in missing)} "
            f"(returned: {', '.join(sorted(metrics)) or 'nothing'})"
        )
    violations = _violations(model, params, metrics)
    return Outcome.of(metrics, violations, model.objective_names)


def _violations(
    model: StudyModel, params: Mapping[str, Any], metrics: Mapping[str, float]
) -> list[float]:
    """Each constraint's violation, as the model defines it (a robust model: the worst over
    its scenarios), the same call the batched path makes; failures name the constraint."""
    if not model.constraints:
        return []
    try:
        with np.errstate(all="ignore"):
            violations = [float(v) for v in model.violations(params, metrics)]
    except EvaluationError:
        raise
    except Exception as exc:  # noqa: BLE001 - a violation that is no number
        raise EvaluationError(f"a constraint raised {type(exc).__name__}: {exc}") from exc
    for c, v in zip(model.constraints, violations, strict=True):
        if np.isnan(v):
            raise EvaluationError(f"constraint {c.source!r} is not a number (nan)")
    return violations


def trial_evaluator(
    model: StudyModel,
) -> tuple[Callable[[Mapping[str, Any]], Outcome], Callable[[], None]]:
    """The function a runner evaluates each trial's design with, and how to close it:
    in-process without ``search.trial_timeout_s``, in a deadline child with it."""
    isolated = Isolated(partial(evaluate_trial, model), model.spec.search.trial_timeout_s)

    def evaluate(params: Mapping[str, Any]) -> Outcome:
        try:
            outcome: Outcome = isolated(dict(params))
        except DeadlineExceeded as exc:
            raise EvaluationTimeout(f"{exc} (search.trial_timeout_s)") from None
        except CallFailed as exc:
            if exc.kind == EvaluationError.__name__:  # the reason, word for word
                raise EvaluationError(str(exc)) from None
            what = f"{exc.kind}: {exc}" if exc.kind else str(exc)  # no kind: the child died
            raise EvaluationError(f"evaluation raised {what}") from None
        return outcome

    return evaluate, isolated.close
