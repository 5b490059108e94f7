"""Evaluator registry: installed evaluators from the ``dse.evaluators`` entry-point group, plus
any ``module:function`` named in a spec. Both kinds go through exactly the same interface, the
:class:`dse.plugin.Evaluator` object (its optional hooks are its named members;
docs/evaluators.md), and a study runs only the evaluators its spec selects
(:func:`dse.model.compile.select_evaluators`), after the ones they need (:func:`run_order`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from dse.errors import EvaluatorError
from dse.plugin import NO_DOMAIN, Domain, Evaluator, MetricInfo, import_object
from dse.spec.entry_points import installed_entry_points, load_entry_point
from dse.spec.messages import choices_text, did_you_mean

__all__ = [
    "ENTRY_POINT_GROUP",
    "Evaluator",
    "MetricInfo",
    "builtin_evaluators",
    "domain_hooks",
    "domains_of",
    "load_import_path",
    "run_order",
    "with_needs",
]

ENTRY_POINT_GROUP = "dse.evaluators"


@cache
def builtin_evaluators() -> dict[str, Evaluator]:
    """Evaluators registered by installed distributions under ``dse.evaluators``."""
    out = {}
    for name in installed_entry_points(ENTRY_POINT_GROUP):
        fn, origin = load_entry_point(ENTRY_POINT_GROUP, name, kind="evaluator")
        out[name] = Evaluator.wrap(name, fn, origin)
    return out


def load_import_path(name: str, path: str, *, search_dirs: list[Path] | None = None) -> Evaluator:
    """Import ``module:function``; the spec's folder is searched before ``sys.path``."""
    return Evaluator.wrap(name, import_object(path, search_dirs=search_dirs), path)


def domains_of(evaluators: Iterable[Evaluator]) -> list[Domain]:
    """Each distinct domain of ``evaluators`` once, in their order (an evaluator without
    domain hooks has none)."""
    return list(dict.fromkeys(e.domain for e in evaluators if e.domain != NO_DOMAIN))


def domain_hooks(evaluators: Iterable[Evaluator], name: str) -> list[Any]:
    """Each distinct hook ``name`` (a member of :class:`dse.plugin.Domain`) of the evaluators'
    domains once, in their order: a domain's hook runs once however many of its evaluators
    a spec selects."""
    hooks = (getattr(d, name) for d in domains_of(evaluators))
    return list(dict.fromkeys(h for h in hooks if h is not None))


def run_order(
    evaluators: Mapping[str, Evaluator], *, installed: Mapping[str, Evaluator] | None = None
) -> list[Evaluator]:
    """``evaluators`` and the ones they need, each after everything it needs.

    A needed evaluator the spec did not select is taken from the installed ones (it runs, its
    metrics are passed on but not published). An unknown name or a cycle is an
    EvaluatorError naming the evaluator.
    """
    pool = dict(builtin_evaluators() if installed is None else installed)
    pool.update(evaluators)
    order: dict[str, Evaluator] = {}
    visiting: list[str] = []

    def visit(ev: Evaluator) -> None:
        if ev.name in order:
            return
        if ev.name in visiting:
            cycle = " -> ".join([*visiting[visiting.index(ev.name) :], ev.name])
            raise EvaluatorError(f"evaluator {ev.name!r} ({ev.origin}): 'needs' cycle {cycle}")
        visiting.append(ev.name)
        for need in ev.needs:
            if need not in pool:
                raise EvaluatorError(
                    f"evaluator {ev.name!r} ({ev.origin}) needs {need!r}, which is neither "
                    f"selected nor installed ({did_you_mean(need, pool)}evaluators: "
                    f"{choices_text(pool)})"
                )
            visit(pool[need])
        visiting.pop()
        order[ev.name] = ev

    for ev in evaluators.values():
        visit(ev)
    return list(order.values())


def with_needs(
    ev: Evaluator, *, installed: Mapping[str, Evaluator] | None = None
) -> Callable[[Mapping[str, Any]], Mapping[str, Any]]:
    """``ev`` as a function of the design alone, called as the engine calls it: after the
    evaluators it needs (from ``installed``, default the installed ones), with their metrics."""
    if not ev.needs:
        return ev.fn
    chain = run_order({ev.name: ev}, installed=installed)

    def after_needs(design: Mapping[str, Any]) -> Mapping[str, Any]:
        results: dict[str, Mapping[str, Any]] = {}
        for each in chain:
            results[each.name] = each.fn(design, **{n: results[n] for n in each.needs})
        return results[ev.name]

    return after_needs
