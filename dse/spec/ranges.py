"""Checks of a shape-valid spec's ranges and lists that pydantic cannot state field by
field: bounds in order, a step that divides its range, values a float holds exactly, distinct
choices and objectives."""

from __future__ import annotations

import math
from typing import Any

from dse.errors import Problem
from dse.spec.messages import short_repr
from dse.spec.schema import CategoricalParam, FloatParam, IntParam, LoadedSpec, SamplerRef
from dse.spec.yamlio import Loc

#: Integers Optuna keeps exactly: it stores every parameter as a float (and the records as
#: int64), so an integer bound beyond 2**53 would come back as another number.
MAX_EXACT_INT = 2**53


def _holdable_problems(loaded: LoadedSpec, loc: Loc, p: FloatParam | IntParam) -> list[Problem]:
    """Bounds the run can use: a float range numpy can span, integers a float holds exactly,
    and a step that divides the range (Optuna would move ``high`` without a word)."""
    if not (math.isfinite(p.low) and math.isfinite(p.high)) or p.low >= p.high:
        return []  # reported above
    span = p.high - p.low
    if isinstance(p, IntParam):
        big = max(abs(p.low), abs(p.high))
        if big > MAX_EXACT_INT:
            return [
                loaded.problem(
                    (*loc, "low" if abs(p.low) == big else "high"),
                    f"integer bounds must lie within +/-2**53 ({MAX_EXACT_INT:,}): Optuna stores "
                    "parameters as floats, which hold no larger integer exactly",
                )
            ]
        if span % p.step and p.step <= span and not p.log:  # else reported above
            last = p.low + span // p.step * p.step
            return [
                loaded.problem(
                    (*loc, "step"),
                    f"step ({p.step}) does not divide high - low ({span}): the last value would "
                    f"be {last}, not high ({p.high}); make high - low a multiple of step",
                )
            ]
        return []
    if not math.isfinite(span):
        return [
            loaded.problem(
                (*loc, "high"),
                f"high - low overflows a float ({p.low:g} to {p.high:g}); narrow the range",
            )
        ]
    if p.step is not None and p.step <= span and not p.log:  # else reported above
        count = span / p.step
        if count > MAX_EXACT_INT:  # Optuna's step arithmetic (Decimal) fails beyond ~1e28
            return [
                loaded.problem(
                    (*loc, "step"),
                    f"step ({p.step:g}) cuts high - low into {count:.3g} values, more than a "
                    "float tells apart (2**53); use a larger step, or none",
                )
            ]
        if abs(count - round(count)) > 1e-9 * max(1.0, count):
            last = p.low + math.floor(count + 1e-9) * p.step
            return [
                loaded.problem(
                    (*loc, "step"),
                    f"step ({p.step:g}) does not divide high - low ({span:g}): the last value "
                    f"would be {last:g}, not high ({p.high:g}); make high - low a multiple of "
                    "step",
                )
            ]
    return []


def _choice_problems(loaded: LoadedSpec, loc: Loc, choices: list[Any]) -> list[Problem]:
    """Choices the run can store: finite floats, integers a float holds exactly."""
    bad = [x for x in choices if isinstance(x, float) and not math.isfinite(x)]
    if bad:
        return [loaded.problem((*loc, "choices"), f"choices must be finite (got {bad[0]})")]
    big = [x for x in choices if isinstance(x, int) and abs(x) > MAX_EXACT_INT]
    if big:
        return [
            loaded.problem(
                (*loc, "choices"),
                f"integer choices must lie within +/-2**53 (got {short_repr(big[0])}): the "
                "records hold numbers as floats and 64-bit integers",
            )
        ]
    return []


def _first_equal_pair(choices: list[Any]) -> tuple[Any, Any] | None:
    """The first two choices Optuna cannot tell apart (it finds a choice by ==; 1, 1.0 and
    true are one), in one pass: equal numbers and strings hash alike."""
    seen: dict[Any, Any] = {}
    for x in choices:
        if x in seen:
            return seen[x], x
        seen[x] = x
    return None


def range_problems(loaded: LoadedSpec) -> list[Problem]:
    problems = []
    for name, p in loaded.spec.space.items():
        loc: Loc = ("space", name)
        if isinstance(p, FloatParam | IntParam):
            if not math.isfinite(p.low) or not math.isfinite(p.high):
                problems.append(loaded.problem((*loc, "low"), "low and high must be finite"))
            elif p.low >= p.high:
                problems.append(
                    loaded.problem((*loc, "low"), f"low ({p.low}) must be below high ({p.high})")
                )
            if p.log and p.low <= 0:
                problems.append(
                    loaded.problem((*loc, "log"), f"log scale needs low > 0 (got {p.low})")
                )
            if p.log and isinstance(p, FloatParam) and p.step is not None:
                problems.append(
                    loaded.problem((*loc, "step"), "step cannot be combined with log: true")
                )
            if p.log and isinstance(p, IntParam) and p.step != 1:
                problems.append(
                    loaded.problem((*loc, "step"), "step must be 1 with log: true (Optuna)")
                )
            if p.step is not None and p.low < p.high and p.step > p.high - p.low:
                problems.append(
                    loaded.problem((*loc, "step"), f"step ({p.step}) is larger than high - low")
                )
            problems += _holdable_problems(loaded, loc, p)
        elif isinstance(p, CategoricalParam):
            # Optuna finds a choice by ==, so 1, 1.0 and true are one choice to it.
            c = p.choices
            problems += _choice_problems(loaded, loc, c)
            same = _first_equal_pair(c)
            if same:
                a, b = same
                problems.append(
                    loaded.problem(
                        (*loc, "choices"), f"choices must be distinct ({a!r} equals {b!r})"
                    )
                )
    search = loaded.spec.search
    if isinstance(search.sampler, SamplerRef) and search.sampler.options and search.options:
        problems.append(
            loaded.problem(
                ("search", "options"),
                "the sampler's options are given twice: keep them in search.sampler.options "
                "or here, not both",
            )
        )
    seen: dict[str, int] = {}
    for i, obj in enumerate(loaded.spec.objectives):
        if obj.metric in seen:
            problems.append(
                loaded.problem(
                    ("objectives", i, "metric"),
                    f"duplicate objective {obj.metric!r} (also objective {seen[obj.metric]}; "
                    "each metric can be optimised once)",
                )
            )
        seen.setdefault(obj.metric, i)
    return problems
