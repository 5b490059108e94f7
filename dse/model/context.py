"""A spec's ``fixed`` values as the design context: ``--set`` overrides applied, uncertain
values taken out, presets expanded by the ``resolve`` hooks of the evaluators' domains
(:class:`dse.plugin.Domain`); a rejected field is reported, dropped (its default takes over) and
the rest still checked.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from dse.errors import Problem, UncertainError
from dse.model.isolation import user_code
from dse.model.registry import Evaluator, domain_hooks
from dse.model.study_model import (
    apply_dotted,
)
from dse.model.uncertain import extract_uncertain
from dse.spec.messages import shorten
from dse.spec.schema import LoadedSpec


def _drop_path(tree: dict[str, Any], path: tuple[str, ...]) -> bool:
    """Remove ``path`` (or its deepest existing prefix) from a nested dict; False if absent."""
    node: Any = tree
    for i, part in enumerate(path):
        if not isinstance(node, dict) or part not in node:
            return False
        if i == len(path) - 1 or not isinstance(node[part], dict):
            del node[part]
            return True
        node = node[part]
    return False


def _first_hook(evaluators: Mapping[str, Evaluator], name: str) -> Any:
    """The first selected evaluator's domain hook ``name`` (a member of dse.plugin.Domain)."""
    return next(iter(domain_hooks(evaluators.values(), name)), None)


#: How often a rejected fixed field is dropped and the context resolved again, so every bad
#: preset name or field is reported in one pass (each resolver stops at its first problem).
_MAX_RETRIES = 50


def _call_resolve(
    resolve: Callable[..., dict[str, Any]], fixed: Mapping[str, Any], *, spec_dir: Path
) -> dict[str, Any]:
    """Call a resolver; one that takes ``spec_dir`` is told the spec's folder (user presets)."""
    try:
        takes_dir = "spec_dir" in inspect.signature(resolve).parameters
    except (TypeError, ValueError):
        takes_dir = False
    with user_code():
        return resolve(fixed, spec_dir=spec_dir) if takes_dir else resolve(fixed)


def nominal_fixed(
    loaded: LoadedSpec,
    evaluators: Mapping[str, Evaluator],
    fixed_overrides: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], list[Any], list[Problem]]:
    """The spec's ``fixed`` with the overrides applied, as nominal values and the uncertain
    ones (each located where it lands in the context); a malformed distribution is a problem
    and left out."""
    fixed = copy.deepcopy(loaded.spec.fixed)
    as_mapping = _first_hook(evaluators, "as_mapping")
    for dotted, value in (fixed_overrides or {}).items():
        apply_dotted(fixed, dotted, value, as_mapping=as_mapping)
    errors: list[UncertainError] = []
    nominal, uncertain = extract_uncertain(fixed, errors=errors)
    problems = [loaded.problem(("fixed", *exc.loc), exc.message) for exc in errors]
    locate = _first_hook(evaluators, "context_path")
    if locate is not None:
        uncertain = [dataclasses.replace(u, landing=tuple(locate(u.path))) for u in uncertain]
    return nominal, uncertain, problems


def resolved_context(
    loaded: LoadedSpec,
    evaluators: Mapping[str, Evaluator],
    resolvers: list[Callable[[Mapping[str, Any]], dict[str, Any]]],
    fixed: dict[str, Any],
) -> tuple[dict[str, Any], bool, list[Problem]]:
    """The design context: resolvers expand presets; keys claimed by another evaluator's
    params pass through. Also whether every resolver succeeded."""
    problems: list[Problem] = []
    context = dict(fixed)
    context_ok = True
    for resolve in resolvers:
        owners = {e.name for e in evaluators.values() if e.domain.resolve is resolve}
        foreign = set().union(
            *(e.domain.params for e in evaluators.values() if e.name not in owners)
        )
        mine = {k: v for k, v in context.items() if k not in foreign}
        resolved, found = _run_resolver(loaded, resolve, mine, owner=min(owners))
        problems += found
        if resolved is None:
            context_ok = False
            continue
        context = {**resolved, **{k: v for k, v in context.items() if k in foreign}}
    return context, context_ok, problems


def _run_resolver(
    loaded: LoadedSpec,
    resolve: Callable[[Mapping[str, Any]], dict[str, Any]],
    mine: dict[str, Any],
    *,
    owner: str,
) -> tuple[dict[str, Any] | None, list[Problem]]:
    """One resolver's context (None if it refused), and every problem it found: a rejected
    field is dropped (its default takes over) and the resolver asked again. A resolver that
    raises anything but a ValueError, or returns no mapping, is a problem of its evaluator
    (``owner``)."""
    problems: list[Problem] = []
    for _ in range(_MAX_RETRIES):
        try:
            resolved = _call_resolve(resolve, copy.deepcopy(mine), spec_dir=loaded.path.parent)
        except ValueError as exc:
            located = getattr(exc, "problems", None)
            if located:  # problems in files the resolver read (preset files), with lines
                problems += [Problem(p.file, p.line, p.path, p.message) for p in located]
                break
            path = getattr(exc, "path", "")
            message = getattr(exc, "message", str(exc))
            loc = ("fixed", *path.split(".")) if path else ("fixed",)
            problems.append(loaded.problem(loc, message))
            if not path or not _drop_path(mine, tuple(path.split("."))):
                break
            continue
        except Exception as exc:  # noqa: BLE001 - a user's resolve hook failed: its problem
            problems.append(_hook_failed(loaded, owner, f"raised {type(exc).__name__}: {exc}"))
            break
        if not isinstance(resolved, Mapping):
            what = f"returned {type(resolved).__name__}, expected the resolved context (a mapping)"
            problems.append(_hook_failed(loaded, owner, what))
            break
        return dict(resolved), problems
    return None, problems


def _hook_failed(loaded: LoadedSpec, owner: str, what: str) -> Problem:
    """A resolve hook that broke its contract, at its evaluator's place in the spec."""
    return loaded.problem(("evaluators", owner), f"its 'resolve' hook {shorten(what)}")
