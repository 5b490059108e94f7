"""A conformance check for evaluators, the way ``optuna.testing`` serves plug-in authors.

Run it on your own evaluator in your test suite::

    from dse.testing import check_evaluator
    check_evaluator(my_metric, design, batch={"x1": [0.1, 0.4, 0.8]})

It checks the contract the engine relies on: a mapping of metric name -> finite number (as the
engine's probe checks it, :func:`dse.model.probe.output_problem`), documented units for every
metric (when ``metrics`` is declared), and, for an evaluator that claims ``vectorized = True``,
that a batch gives exactly the per-design results. An evaluator
that ``needs`` others is called as the engine calls it, after them, with their metrics (pass
``needs={"name": fn}`` for ones that are not installed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dse.errors import ConformanceError, EvaluatorError
from dse.model.probe import output_problem
from dse.model.registry import Evaluator, builtin_evaluators, with_needs


def check_evaluator(
    fn: Evaluator | Callable[[Mapping[str, Any]], Mapping[str, Any]],
    design: Mapping[str, Any],
    *,
    batch: Mapping[str, Sequence[Any]] | None = None,
    rtol: float = 1e-9,
    needs: Mapping[str, Any] | None = None,
) -> dict[str, float]:
    """Check ``fn`` on ``design`` (and on ``batch`` if vectorized); return the scalar metrics.
    ``needs``: evaluators it needs by name, besides the installed ones."""
    try:
        name = fn.name if isinstance(fn, Evaluator) else getattr(fn, "__name__", "")
        ev = Evaluator.wrap(name or "evaluator", fn, "under test")
        pool = dict(builtin_evaluators())
        pool.update({n: Evaluator.wrap(n, f, "given") for n, f in (needs or {}).items()})
        call = with_needs(ev, installed=pool)
    except EvaluatorError as exc:
        raise ConformanceError(str(exc)) from None
    result = call(design)
    problem = output_problem(result, ())  # the contract as the engine's probe checks it
    if problem:
        raise ConformanceError(f"{ev.name} {problem}")
    scalars: dict[str, float] = {}
    for key, v in result.items():
        scalars[key] = float(v)
        if not np.isfinite(scalars[key]):
            raise ConformanceError(f"{ev.name}.{key} is not finite: {v!r}")
    if ev.metrics is not None:
        declared, returned = set(ev.metrics), set(result)
        if declared != returned:
            raise ConformanceError(
                f"{ev.name}: declared metrics differ from returned ones "
                f"(missing: {sorted(declared - returned)}, undeclared: "
                f"{sorted(returned - declared)})"
            )
        for key, info in ev.metrics.items():
            if not info.unit or not info.description:
                raise ConformanceError(f"{ev.name}.{key}: unit and description must be given")
    if ev.vectorized and batch:
        _check_batch(ev, call, design, batch, rtol)
    return scalars


def _check_batch(
    ev: Evaluator,
    call: Callable[[Mapping[str, Any]], Mapping[str, Any]],
    design: Mapping[str, Any],
    batch: Mapping[str, Sequence[Any]],
    rtol: float,
) -> None:
    arrays = {k: np.asarray(v) for k, v in batch.items()}
    n = {len(v) for v in arrays.values()}
    if len(n) != 1:
        raise ConformanceError("batch values must all have the same length")
    size = n.pop()
    vec = call({**design, **arrays})
    for i in range(size):
        one = call({**design, **{k: v[i].item() for k, v in arrays.items()}})
        for key, v in one.items():
            got = np.broadcast_to(np.asarray(vec[key], dtype=float), (size,))[i]
            if not np.isclose(got, float(v), rtol=rtol, atol=0.0):
                raise ConformanceError(
                    f"{ev.name}.{key}: batch element {i} is {got!r} but the scalar call gives "
                    f"{float(v)!r} (vectorized results must equal per-design results)"
                )
