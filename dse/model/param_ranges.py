"""Physically impossible design values, found before a study starts.

Evaluators may say which values of a design parameter are impossible (``check_value``, see
:mod:`dse.model.registry`); the engine asks about every fixed value and about the ends of every
searched range (and one value inside a continuous range, so a whole-number parameter searched
as a float is caught), so a negative count or a fraction above 1 never reaches a trial.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dse.errors import Problem
from dse.model.registry import Evaluator, domain_hooks
from dse.spec.messages import short_repr
from dse.spec.schema import CategoricalParam, FloatParam, IntParam, LoadedSpec

#: A point inside a continuous range, away from round numbers (a golden-section point).
_INSIDE = 0.381966


def _checker(evaluators: Iterable[Evaluator]) -> Callable[[str, Any], str | None]:
    checks = domain_hooks(evaluators, "check_value")

    def why(name: str, value: Any) -> str | None:
        for check in checks:
            try:
                message = check(name, value)
            except Exception as exc:  # noqa: BLE001 - a broken checker is the spec's problem
                message = f"checking it raised {type(exc).__name__}: {exc}"
            if message:
                return message
        return None

    return why


@dataclass(frozen=True)
class RangeCheck:
    """Range problems, and whether the probe design is in doubt (a range is impossible or
    malformed, so what a model says about the probe may only follow from that)."""

    problems: list[Problem]
    doubtful: bool


def _malformed(p: FloatParam | IntParam) -> bool:
    """Reported by the schema already (dse.spec.schema): the midpoint means nothing."""
    finite = math.isfinite(p.low) and math.isfinite(p.high)
    return not finite or p.low >= p.high or (p.log and p.low <= 0)


def param_range_problems(
    loaded: LoadedSpec, evaluators: Iterable[Evaluator], fixed: Mapping[str, Any]
) -> RangeCheck:
    """Problems of searched ranges and top-level ``fixed`` values the evaluators reject."""
    why = _checker(evaluators)
    problems: list[Problem] = []
    malformed = False
    for name, p in loaded.spec.space.items():
        loc = ("space", name)
        if isinstance(p, CategoricalParam):
            for choice in p.choices:
                if msg := why(name, choice):
                    problems.append(
                        loaded.problem((*loc, "choices"), f"choice {short_repr(choice)}: {msg}")
                    )
            continue
        if _malformed(p):
            malformed = True
            continue
        ends_ok = True
        for end, value in (("low", p.low), ("high", p.high)):
            if msg := why(name, value):
                ends_ok = False
                problems.append(
                    loaded.problem(
                        (*loc, end), f"{end} {short_repr(value)} is not a possible {name}: {msg}"
                    )
                )
        if ends_ok and isinstance(p, FloatParam):
            inside = p.low + (p.step if p.step is not None else _INSIDE * (p.high - p.low))
            if inside <= p.high and (msg := why(name, inside)):
                hint = "; search it as type: int" if "whole" in msg else ""
                problems.append(
                    loaded.problem(
                        (*loc, "type"),
                        f"values inside [{p.low}, {p.high}] are not possible {name} values "
                        f"(at {inside:g}: {msg}){hint}",
                    )
                )
    for name, value in fixed.items():
        if name in loaded.spec.space or isinstance(value, dict | list):
            continue  # searched values win; presets and tables are checked by their resolver
        if msg := why(name, value):
            problems.append(loaded.problem(("fixed", name), f"{msg}, got {short_repr(value)}"))
    return RangeCheck(problems, doubtful=malformed or bool(problems))


def merge_probe_problems(ranges: RangeCheck, probed: list[Problem]) -> list[Problem]:
    """Range problems and what the models said on the probe design, each field once.

    A model's own message about a field is the more specific one, so it replaces the range
    problem of that field. When the probe design was impossible anyway, a model's complaint
    about some other field only follows from that and is left out (fix, then validate again).
    """
    if not ranges.doubtful:
        return probed
    fields = {p.field for p in ranges.problems}
    kept = [p for p in probed if p.field in fields]
    said = {p.field for p in kept}
    return kept + [p for p in ranges.problems if p.field not in said]
