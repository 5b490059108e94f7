"""The evaluator probe: what ``dse validate`` (and every run's start) asks of each evaluator.

Each evaluator is called once on the midpoint design, and a vectorized one also on a batch of
two, in a child process bounded by a short time limit; the returned object is checked against
the contract (docs/evaluators.md): a mapping of metric names (non-empty strings without dots)
to real numbers a float holds, or, when vectorized, arrays of the batch's shape (NaN or inf at
the midpoint fails that trial in a run, so it is no spec error). The hooks an evaluator
carries are checked for their types when it is loaded. Each problem is one line that the
caller puts at the evaluator's place in the spec.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence, Set
from functools import partial
from typing import Any

import numpy as np

from dse.model.isolation import CallFailed, DeadlineExceeded, Isolated, user_code
from dse.spec.messages import short_repr

#: The probe's time limit when the spec sets no ``search.trial_timeout_s``: a model's midpoint
#: design is one trial, and a probe that takes longer is better told than waited for (within
#: the 20 s a user waits for ``dse validate`` before taking it for hung).
PROBE_TIMEOUT_S = 10.0
#: The batch a vectorized evaluator is probed with: two copies of the midpoint design.
BATCH = 2

#: Longest metric name: a name is a column of the records and a key of every trial's metrics.
MAX_METRIC_NAME = 200

#: The hooks that are data; every other hook (``dse.plugin.HOOKS``) is a function.
_DATA_HOOKS = ("metrics", "vectorized", "needs", "params", "version", "default_constraints")


class ProbeFailed(Exception):
    """The evaluator's answer on the probe design breaks the contract, or it ran past the
    probe's time limit (the message says which)."""


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {short_repr(value)}"


def metric_name_problem(key: Any) -> str | None:
    if not isinstance(key, str):
        return f"metric name {short_repr(key)} ({type(key).__name__}; metric names are strings)"
    if not key or "." in key or key != key.strip() or not key.isprintable():
        return (
            f"metric name {short_repr(key)} (metric names are non-empty, printable, without "
            "dots or outer blanks: they are published as '<evaluator>.<metric>')"
        )
    if len(key) > MAX_METRIC_NAME:
        n = len(key)
        return f"metric name {short_repr(key)} of {n:,} characters (at most {MAX_METRIC_NAME})"
    return None


def hook_problem(hooks: Mapping[str, Any]) -> str | None:
    """Why an evaluator's hooks (``metrics``, ``vectorized``, ``params``, the functions), as
    given to ``dse.plugin.Evaluator``, have the wrong types, or None. Looking at them
    runs the evaluator's code (a mapping's ``items``, a property): what that raises is the
    answer too."""
    try:
        return _hook_problem(hooks)
    except Exception as exc:  # noqa: BLE001 - the evaluator's own code, reading its hooks
        return f"reading its hooks raised {type(exc).__name__}: {short_repr(str(exc))}"


def _hook_problem(hooks: Mapping[str, Any]) -> str | None:
    metrics = hooks.get("metrics")
    if metrics is not None:
        if not isinstance(metrics, Mapping):
            return f"'metrics' must map metric names to (unit, meaning), got {_kind(metrics)}"
        for key, info in metrics.items():
            problem = metric_name_problem(key)
            if problem:
                return f"'metrics' has {problem}"
            pair = (getattr(info, "unit", None), getattr(info, "description", None))
            if isinstance(info, tuple | list) and len(info) == 2:
                pair = (info[0], info[1])
            if not all(isinstance(p, str) for p in pair):
                return f"'metrics'[{key!r}] must be (unit, meaning) strings, got {_kind(info)}"
    vectorized = hooks.get("vectorized", False)
    if not isinstance(vectorized, bool | np.bool_):
        return f"'vectorized' must be True or False, got {_kind(vectorized)}"
    version = hooks.get("version")
    if version is not None and not isinstance(version, str):
        return f"'version' must be a string, got {_kind(version)}"
    # Lists of strings: a list, set or mapping of design keys, a list of constraints; never a
    # one-shot iterator (read twice) nor an endless one.
    lists = (("params", "design keys", Sequence | Set | Mapping),
             ("needs", "evaluator names", Sequence | Set),
             ("default_constraints", "constraints", Sequence))  # fmt: skip
    for hook, what, kinds in lists:
        value = hooks.get(hook)
        if value is None:
            continue
        if isinstance(value, str | bytes) or not isinstance(value, kinds):
            return f"'{hook}' must be a list of {what}, got {_kind(value)}"
        bad = [v for v in value if not isinstance(v, str)]
        if bad:
            return f"'{hook}' must hold {what} (strings), got {_kind(bad[0])}"
    for hook, value in hooks.items():
        if hook not in _DATA_HOOKS and value is not None and not callable(value):
            return f"'{hook}' must be a function, got {_kind(value)}"
    return None


def value_problem(value: Any, shape: tuple[int, ...]) -> str | None:
    """Why one returned value is not a real finite number (or array of ``shape``), or None."""
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            return f"is an array of {value.dtype}, expected real numbers"
        if value.shape not in ((), shape):
            want = f"{shape} (the batch's)" if shape else "() (one design)"
            return f"is an array of shape {value.shape}, expected {want} or a single number"
        if value.dtype.kind == "f" and value.dtype.itemsize > 8:  # np.longdouble
            with np.errstate(over="ignore"):
                if np.any(np.isfinite(value) & ~np.isfinite(value.astype(np.float64))):
                    return f"is an array of {value.dtype} beyond what a float holds (1e308)"
        return None  # NaN/inf at the midpoint fails that trial, as in a run
    if isinstance(value, complex | np.complexfloating):
        return f"is the complex number {value!r}, expected a real number"
    if not isinstance(value, numbers.Real | np.number):
        return f"is {_kind(value)}, expected a real number"
    try:
        as_float = float(value)
    except (OverflowError, TypeError, ValueError):
        return f"is {short_repr(value)}, which does not fit a float"
    if math.isinf(as_float) and isinstance(value, np.floating) and np.isfinite(value):
        return f"is {short_repr(value)}, which does not fit a float (np.longdouble beyond 1e308)"
    return None  # NaN/inf at the midpoint fails that trial, as in a run, not the spec


def output_problem(result: Any, shape: tuple[int, ...]) -> str | None:
    """Why an evaluator's returned object breaks the contract, or None."""
    if not isinstance(result, Mapping):
        return (
            f"returned {type(result).__name__} {short_repr(result)}, "
            "expected a mapping of metric names to numbers"
        )
    if not result:
        return "returned an empty mapping, expected metric names with numbers"
    for key, value in result.items():
        problem = metric_name_problem(key)
        if problem:
            return f"returned {problem}"
        problem = value_problem(value, shape)
        if problem:
            return f"returned metric {key!r} that {problem}"
    return None


def _call_and_check(
    fn: Callable[[Any], Any], designs: tuple[dict[str, Any], dict[str, Any] | None]
) -> tuple[str, Any]:
    """The evaluator on the design (and the batch), its answer checked where it ran, so that
    nothing unpicklable (a generator, a lambda) needs to come back from the child; what it
    raises comes back as :class:`~dse.model.isolation.CallFailed` (its ``kind``, ``path`` and
    ``message``), a ValueError as a ValueError."""
    single, batch = designs
    keys: list[str] = []
    for design, shape in ((single, ()), (batch, (BATCH,))):
        if design is None:
            continue
        with np.errstate(all="ignore"), user_code():
            result = fn(design)
        problem = output_problem(result, shape)
        if problem:
            return "bad", problem + (" on a batch of two designs" if shape else "")
        if not shape:
            keys = list(result)
    return "ok", keys


def probe(
    fn: Callable[[Any], Any],
    design: dict[str, Any],
    *,
    batch: dict[str, Any] | None,
    timeout_s: float | None,
    inline: bool = False,
) -> list[str]:
    """The metric names ``fn`` returns on ``design`` (and ``batch``, a vectorized evaluator's
    batch of two); raises ProbeFailed, or what the evaluator raised (from the
    child: a :class:`~dse.model.isolation.CallFailed` naming it).

    ``inline`` calls ``fn`` in this process, without the child and its time limit: for a caller
    that evaluates a design in this process right after (``dse evaluate``), where the child
    guards nothing the evaluation does not meet anyway and costs a fork per evaluator (~15 ms
    each, a tenth of ``dse evaluate``'s start-up: benchmarks/RESULTS.md)."""
    limit = timeout_s if timeout_s is not None else PROBE_TIMEOUT_S
    try:
        with Isolated(partial(_call_and_check, fn), None if inline else limit) as isolated:
            status, value = isolated((design, batch))
    except DeadlineExceeded:
        said = "search.trial_timeout_s" if timeout_s is not None else "the probe's limit"
        hint = "" if timeout_s is not None else "; set search.trial_timeout_s for a slower model"
        raise ProbeFailed(
            f"probing the evaluator on the midpoint design timed out after {limit:g} s "
            f"({said}{hint})"
        ) from None
    except CallFailed as exc:
        if not exc.kind:  # the child died, or the answer could not come back
            raise RuntimeError(str(exc)) from None
        raise
    if status == "bad":
        raise ProbeFailed(value)
    return list(value)
