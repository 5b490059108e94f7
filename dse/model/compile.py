"""Compiling a spec against its evaluators, collecting every problem (``dse validate``): the
evaluators a spec selects, its context resolved, names checked, metrics probed; the result is a
:class:`dse.model.study_model.StudyModel`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dse.errors import EvaluatorError, ExprError, Problem
from dse.model.context import nominal_fixed, resolved_context
from dse.model.param_ranges import merge_probe_problems, param_range_problems
from dse.model.probe import BATCH, ProbeFailed, probe
from dse.model.registry import (
    Evaluator,
    MetricInfo,
    builtin_evaluators,
    domain_hooks,
    domains_of,
    load_import_path,
    run_order,
    with_needs,
)
from dse.model.study_model import (
    StudyModel,
    midpoint,
)
from dse.model.uncertain import check_paths
from dse.spec.expr import parse_expr
from dse.spec.messages import choices_text, did_you_mean
from dse.spec.schema import LoadedSpec


def _referenced_evaluators(loaded: LoadedSpec) -> list[str]:
    """Evaluator names the objectives and constraints mention (``perf`` in ``perf.x``)."""
    names = [o.metric for o in loaded.spec.objectives]
    for text in loaded.spec.constraints:
        try:
            names += sorted(parse_expr(text).names)
        except ExprError:
            continue  # reported with its location by collect_model
    return [n.split(".", 1)[0] for n in names if "." in n]


def select_evaluators(loaded: LoadedSpec) -> tuple[dict[str, Evaluator], list[Problem]]:
    """The evaluators a spec runs, and the problems with its ``evaluators`` entries.

    Without an ``evaluators`` entry: every installed evaluator (a spec of the built-in domain
    needs to name none). With one: exactly those named (installed ones by name, custom ones as
    ``module:function``), plus installed evaluators whose metrics the objectives or
    constraints name. A spec that selects no installed evaluator is a plain optimisation
    problem: nothing of the built-in domain runs or checks its ``fixed`` values.
    """
    spec = loaded.spec
    installed = builtin_evaluators()
    problems: list[Problem] = []
    if "evaluators" not in spec.model_fields_set:
        return dict(installed), problems
    wanted = {n for n, path in spec.evaluators.items() if path is None}
    wanted |= {n for n in _referenced_evaluators(loaded) if n in installed}
    for name in sorted(n for n in wanted if n not in installed):
        problems.append(
            loaded.problem(
                ("evaluators", name),
                f"no installed evaluator {name!r} ({did_you_mean(name, installed)}installed: "
                f"{choices_text(installed)}; a custom one is written name: 'module:function')",
            )
        )
    evaluators = {n: ev for n, ev in installed.items() if n in wanted}
    for name, path in spec.evaluators.items():
        if path is None:
            continue
        loc = ("evaluators", name)
        if name in installed:
            problems.append(
                loaded.problem(
                    loc,
                    f"name {name!r} is taken by an installed evaluator "
                    f"(installed: {choices_text(installed)}; list it by name to use it)",
                )
            )
            continue
        try:
            # Absolute: a relative folder's finder is cached for the first working folder.
            here = loaded.path.parent.resolve()
            evaluators[name] = load_import_path(name, path, search_dirs=[here])
        except EvaluatorError as exc:
            problems.append(loaded.problem(loc, str(exc)))
    if not evaluators and not problems:
        problems.append(loaded.problem(("evaluators",), "the spec selects no evaluator"))
    for name, ev in list(evaluators.items()):
        try:
            run_order({name: ev}, installed={**installed, **evaluators})
        except EvaluatorError as exc:
            problems.append(loaded.problem(("evaluators", name), str(exc)))
            del evaluators[name]
    return evaluators, problems


def collect_model(
    loaded: LoadedSpec,
    *,
    fixed_overrides: Mapping[str, Any] | None = None,
    inline_probe: bool = False,
) -> tuple[StudyModel | None, list[Problem]]:
    """Compile a spec against its evaluators, collecting every problem rather than stopping at
    the first stage that has one: a broken part is left out and the rest is still checked, and
    problems that only follow from an earlier one (a metric of an evaluator that did not load)
    are not reported twice.

    The stages: load the evaluators; take the uncertain values out of ``fixed``; resolve the
    context; check the space's and fixed keys' names; probe each evaluator for its metrics
    (and for values its model rejects); check the objectives' and constraints' names.
    ``inline_probe``: probe the evaluators in this process (see :func:`dse.model.probe.probe`).
    """
    evaluators, problems = select_evaluators(loaded)
    broken = _unloaded(loaded, evaluators)
    nominal, uncertain, found = nominal_fixed(loaded, evaluators, fixed_overrides)
    problems += found
    resolvers = domain_hooks(evaluators.values(), "resolve")
    context, context_ok, found = resolved_context(loaded, evaluators, resolvers, nominal)
    problems += found
    if context_ok:
        for exc in check_paths(context, uncertain):
            problems.append(loaded.problem(("fixed", *exc.loc), exc.message))
    ranges = param_range_problems(loaded, evaluators.values(), nominal)
    declared, found = _name_problems(loaded, evaluators, broken, resolvers)
    problems += found
    model = StudyModel(
        loaded=loaded,
        evaluators=evaluators,
        context=context,
        metrics={},
        constraints=[],
        fixed_overrides=dict(fixed_overrides or {}),
        uncertain=uncertain,
    )
    problems += _derived_problems(loaded, model, declared)
    # A parameter the schema rejected is missing from the space: probing without it would only
    # report the evaluator's KeyError, a consequence of the problem already listed.
    found, probed = _metric_catalog(
        loaded,
        model,
        broken,
        context_ok=context_ok and _written_space(loaded) <= set(loaded.spec.space),
        inline=inline_probe,
    )
    problems += found
    problems += merge_probe_problems(ranges, probed)
    problems += _objective_and_constraint_problems(loaded, model, broken)
    return model, problems


def _written_space(loaded: LoadedSpec) -> set[str]:
    """The parameters written in the spec's ``space``, those the schema rejected included."""
    space = loaded.raw.get("space")
    return {str(k) for k in space} if isinstance(space, dict) else set()


def _unloaded(loaded: LoadedSpec, evaluators: Mapping[str, Evaluator]) -> set[str]:
    """Evaluators named in the spec that could not be loaded (or that pydantic rejected)."""
    raw_evaluators = loaded.raw.get("evaluators")
    named = set(loaded.spec.evaluators)
    if isinstance(raw_evaluators, dict):
        named |= {str(n) for n in raw_evaluators}
    elif isinstance(raw_evaluators, list):
        for item in raw_evaluators:
            named |= {str(n) for n in item} if isinstance(item, dict) else {str(item)}
    return {n for n in named if n not in evaluators}


def _name_problems(
    loaded: LoadedSpec,
    evaluators: Mapping[str, Evaluator],
    broken: set[str],
    resolvers: list[Any],
) -> tuple[set[str] | None, list[Problem]]:
    """Space names, and fixed keys no resolver expands, that no evaluator reads: errors when
    every evaluator says which params it reads (then those params are returned, else None)."""
    spec = loaded.spec
    problems: list[Problem] = []
    known_params = set().union(*(e.domain.params for e in evaluators.values()))
    all_declare = all(e.domain.params for e in evaluators.values()) and not broken
    for name in spec.space:
        if all_declare and name not in known_params:
            problems.append(_unknown_param(loaded, ("space", name), known_params))
    if all_declare and not resolvers:
        for key in spec.fixed:
            if key not in known_params:
                problems.append(
                    loaded.problem(
                        ("fixed", key),
                        f"unknown fixed field {key!r} ({did_you_mean(key, known_params)}"
                        f"fields the evaluators read: {choices_text(known_params)})",
                    )
                )
    return (known_params if all_declare else None), problems


def _metric_catalog(
    loaded: LoadedSpec,
    model: StudyModel,
    broken: set[str],
    *,
    context_ok: bool,
    inline: bool = False,
) -> tuple[list[Problem], list[Problem]]:
    """Fill ``model.metrics``: declared, or discovered by probing the midpoint design. Every
    evaluator is probed once, so a bad fixed value its model rejects (an error carrying the
    ``path`` of the offending field) stops the spec here instead of failing every trial
    later. Returns the problems, and the bad values the models rejected on the probe design
    (merged with the range checks'); an evaluator whose probe failed joins ``broken``."""
    spec = loaded.spec
    problems: list[Problem] = []
    probe_params = {n: midpoint(p) for n, p in spec.space.items()}
    timeout_s = spec.search.trial_timeout_s
    probed: list[Problem] = []  # bad values the models rejected on the probe design
    for ev in model.evaluators.values():
        declared = ev.metrics is not None
        for k, info in (ev.metrics or {}).items():
            model.metrics[f"{ev.name}.{k}"] = info
        if not context_ok:
            if not declared:
                broken.add(ev.name)
            continue
        try:
            with np.errstate(all="ignore"):  # a bad range's midpoint is reported already
                keys = _probe(model, ev, probe_params, timeout_s, inline=inline)
            missing = [k for k in ev.metrics or {} if k not in keys]
            if missing:
                raise ProbeFailed(
                    f"returned no {', '.join(map(repr, missing))} on the midpoint design, "
                    f"though it declares {'them' if len(missing) > 1 else 'it'} in "
                    f"'metrics' (returned: {', '.join(map(repr, keys))})"
                )
        except ProbeFailed as exc:
            problems.append(_evaluator_problem(loaded, ev, str(exc)))
            if not declared:
                broken.add(ev.name)
            continue
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit from a user's model too
            path = getattr(exc, "path", None) if isinstance(exc, ValueError) else None
            if declared and path:  # a bad value its model rejects, located in the spec
                head = path.split(".")[0]
                loc = ("space", head) if head in spec.space else ("fixed", *path.split("."))
                probed.append(loaded.problem(loc, getattr(exc, "message", str(exc))))
            elif not declared:  # a declared one's other failures are per-trial, not the spec's
                problems.append(
                    loaded.problem(
                        ("evaluators", ev.name),
                        f"probing the evaluator on the midpoint design raised "
                        f"{getattr(exc, 'kind', type(exc).__name__)}"
                        f"{f': {exc}' if str(exc) else ''}",
                    )
                )
                broken.add(ev.name)
            continue
        if not declared:
            for k in keys:
                model.metrics[f"{ev.name}.{k}"] = MetricInfo("", "")
    return problems, probed


def _objective_and_constraint_problems(
    loaded: LoadedSpec, model: StudyModel, broken: set[str]
) -> list[Problem]:
    """Objectives and constraints that name no metric (unless of an evaluator that did not
    load); the constraints that parse join ``model.constraints``."""
    spec = loaded.spec
    problems: list[Problem] = []

    def unchecked(name: str) -> bool:  # a metric of an evaluator that could not be loaded
        return name.split(".", 1)[0] in broken

    for i, obj in enumerate(spec.objectives):
        if obj.metric not in model.metrics and not unchecked(obj.metric):
            problems.append(
                loaded.problem(
                    ("objectives", i, "metric"),
                    f"unknown metric {obj.metric!r} ({did_you_mean(obj.metric, model.metrics)}"
                    f"available metrics: {choices_text(model.metrics)})",
                )
            )
    # parameters rejected by the schema are reported there
    names = {*model.metrics, *spec.space, *model.env({}, {}), *_written_space(loaded)}
    for i, text in enumerate(spec.constraints):
        try:
            expr = parse_expr(text)
        except ExprError as exc:
            problems.append(loaded.problem(("constraints", i), str(exc)))
            continue
        for n in sorted(expr.names - names):
            if unchecked(n):
                continue
            problems.append(
                loaded.problem(
                    ("constraints", i),
                    f"unknown name {n!r} in {text!r} ({did_you_mean(n, names)}"
                    f"available metrics: {choices_text(model.metrics)})",
                )
            )
        model.constraints.append(expr)
    problems += _default_constraints(loaded, model)
    return problems


def _default_constraints(loaded: LoadedSpec, model: StudyModel) -> list[Problem]:
    """Join the selected domains' default constraints to ``model.constraints`` (after the
    spec's own), unless the spec opts out; a ``drop`` entry that is no default is a problem.

    A default naming a metric no selected evaluator publishes is left out (a spec running only
    ``perf`` is not held to ``cost.reticle_fits``), and one the spec already writes is not
    held twice."""
    choice = loaded.spec.default_constraints
    if choice is False:
        return []
    defaults: list[str] = []
    for domain in domains_of(model.evaluators.values()):
        defaults += [c for c in domain.default_constraints if c not in defaults]
    drop = [] if choice is True else list(choice.drop)
    problems = [
        loaded.problem(
            ("default_constraints", "drop", i),
            f"{name!r} is no default constraint ({did_you_mean(name, defaults)}the defaults: "
            f"{choices_text(defaults) if defaults else 'none'})",
        )
        for i, name in enumerate(drop)
        if name not in defaults
    ]
    held = {" ".join(c.source.split()) for c in model.constraints}
    for text in defaults:
        if text in drop or " ".join(text.split()) in held:
            continue
        try:
            expr = parse_expr(text)
        except ExprError as exc:  # the domain's own mistake: named, never silently skipped
            problems.append(loaded.problem(("default_constraints",), f"{text!r}: {exc}"))
            continue
        if expr.names <= set(model.metrics):
            model.constraints.append(expr)
    return problems


def _derived_problems(
    loaded: LoadedSpec, model: StudyModel, known_params: set[str] | None
) -> list[Problem]:
    """Parse the spec's ``derived`` values into ``model.derived``; their problems, located."""
    spec = loaded.spec
    problems: list[Problem] = []
    names = {*spec.space, *model.env({}, {})}
    for name, text in spec.derived.items():
        loc = ("derived", name)
        if name in spec.space:
            problems.append(
                loaded.problem(
                    loc,
                    f"{name!r} is searched in 'space'; a derived value cannot also be searched",
                )
            )
            continue
        if known_params is not None and name not in known_params:
            problems.append(_unknown_param(loaded, loc, known_params))
            continue
        try:
            expr = parse_expr(str(text))
        except ExprError as exc:
            problems.append(loaded.problem(loc, str(exc)))
            continue
        unknown = sorted(expr.names - names)
        if unknown:
            problems.append(
                loaded.problem(
                    loc,
                    f"unknown name {unknown[0]!r} in {text!r}: a derived value is computed from "
                    f"searched parameters, numeric fixed values and earlier derived values "
                    f"({did_you_mean(unknown[0], names)}available: {choices_text(names)})",
                )
            )
            continue
        model.derived[name] = expr
        names.add(name)
    return problems


def _unknown_param(loaded: LoadedSpec, loc: tuple[str, str], known: set[str]) -> Problem:
    name = loc[1]
    return loaded.problem(
        loc,
        f"unknown design parameter {name!r} ({did_you_mean(name, known)}"
        f"valid parameters: {choices_text(known)})",
    )


def _evaluator_problem(loaded: LoadedSpec, ev: Evaluator, message: str) -> Problem:
    return loaded.problem(
        ("evaluators", ev.name), f"evaluator {ev.name!r} ({ev.origin}): {message}"
    )


def _probe(
    model: StudyModel,
    ev: Evaluator,
    params: Mapping[str, Any],
    timeout_s: float | None,
    *,
    inline: bool = False,
) -> list[str]:
    """The metric names ``ev`` returns on the midpoint design, its answer checked against the
    contract (:mod:`dse.model.probe`); a vectorized one is also asked about a batch of two.
    An evaluator that needs others is called as the engine calls it, after them."""
    batch = None
    if ev.vectorized and params:
        pair = {k: np.asarray([v] * BATCH) for k, v in params.items()}
        batch = model.design(pair, frozen=True)
    design = model.design(params, frozen=True)
    fn = with_needs(ev, installed={**builtin_evaluators(), **model.evaluators})
    return probe(fn, design, batch=batch, timeout_s=timeout_s, inline=inline)
