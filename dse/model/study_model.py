"""A spec compiled against the evaluators: resolved context, metric catalog, objectives,
constraints, and the one evaluation path every command uses (single trial, ``evaluate``,
vectorized batch).
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from dse.model.param_ranges import merge_probe_problems, param_range_problems
from dse.model.probe import BATCH, ProbeFailed, ProbeTimeout, probe
from dse.model.quiet_stdout import stdout_to_stderr
from dse.model.registry import Evaluator, MetricInfo, builtin_evaluators, load_import_path
from dse.model.uncertain import UncertainError, check_paths, extract_uncertain
from dse.spec.errors import (
    DesignError,
    DseError,
    EvaluatorError,
    Problem,
    SpecError,
    choices_text,
    did_you_mean,
)
from dse.spec.expr import Expr, ExprError, parse_expr
from dse.spec.schema import CategoricalParam, FloatParam, IntParam, LoadedSpec, ParamSpec

#: Every evaluated design carries a fresh scratch dict under this key, so evaluators that call
#: one another (a TCO model needing the performance model) can compute shared parts once.
MEMO_KEY = "_memo"


class EvaluationError(Exception):
    """An evaluator raised or returned something unusable; fails the trial, never the study."""


@dataclass
class StudyModel:
    loaded: LoadedSpec
    evaluators: dict[str, Evaluator]
    context: dict[str, Any]
    metrics: dict[str, MetricInfo]
    constraints: list[Expr]
    fixed_overrides: dict[str, Any] = field(default_factory=dict)
    # Uncertain assumptions (dse.model.uncertain.Uncertain): ``fixed`` values given as
    # distributions; the context holds their nominal values.
    uncertain: list[Any] = field(default_factory=list)
    # ``derived`` values of the spec: name -> expression of searched params, numeric fixed values
    # and earlier derived values, computed into every design (vectorized like the rest).
    derived: dict[str, Expr] = field(default_factory=dict)

    @property
    def spec(self):  # noqa: ANN201 - StudySpec, kept short for readers
        return self.loaded.spec

    @property
    def objective_names(self) -> list[str]:
        return [o.metric for o in self.spec.objectives]

    @property
    def maximize(self) -> list[bool]:
        return [o.direction == "maximize" for o in self.spec.objectives]

    # -- evaluation -------------------------------------------------------------------------
    def design(self, params: Mapping[str, Any]) -> dict[str, Any]:
        d = dict(self.context)
        d.update(params)
        if self.derived:
            env = self.env(params, {})
            for name, expr in self.derived.items():
                d[name] = env[name] = expr.evaluate(env)
        return d

    def evaluate(self, params: Mapping[str, Any], *, strict: bool = True) -> dict[str, np.ndarray]:
        """All metrics of a design or a batch (params may be arrays of one shape).

        With ``strict`` any non-finite value raises EvaluationError (a failed trial); otherwise
        non-finite values are kept for the caller to drop (sweeps).
        """
        arrays = {k: np.asarray(v) for k, v in params.items()}
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values())) if arrays else ()
        design = self.design(arrays if shape else {k: v.item() for k, v in arrays.items()})
        design[MEMO_KEY] = {}
        out: dict[str, np.ndarray] = {}
        for ev in self.evaluators.values():
            try:
                with stdout_to_stderr():
                    if ev.vectorized or not shape:
                        result = ev.fn(design)
                    else:
                        result = _loop(ev.fn, design, arrays, shape)
            except DseError:
                raise
            except Exception as exc:
                raise EvaluationError(
                    f"evaluator {ev.name!r} raised {type(exc).__name__}: {exc}"
                ) from exc
            if not isinstance(result, Mapping):
                raise EvaluationError(
                    f"evaluator {ev.name!r} returned {type(result).__name__}, expected a mapping"
                )
            for key, v in result.items():
                try:
                    arr = np.broadcast_to(np.asarray(v, dtype=float), shape)
                except OverflowError:  # an int beyond float range, e.g. 10**400
                    if strict:
                        raise EvaluationError(
                            f"metric '{ev.name}.{key}' is not finite (too large for a float)"
                        ) from None
                    arr = np.full(shape, np.nan)
                except (TypeError, ValueError) as exc:
                    raise EvaluationError(
                        f"metric '{ev.name}.{key}' is not numeric or has the wrong shape: {exc}"
                    ) from None
                if strict and not np.all(np.isfinite(arr)):
                    raise EvaluationError(f"metric '{ev.name}.{key}' is not finite ({_short(v)})")
                out[f"{ev.name}.{key}"] = arr
            # A declared metric the evaluator left out fails the design (NaN in a sweep).
            for key in ev.metrics or {}:
                if f"{ev.name}.{key}" not in out:
                    if strict:
                        raise EvaluationError(
                            f"evaluator {ev.name!r} returned no declared metric {key!r}"
                        )
                    out[f"{ev.name}.{key}"] = np.full(shape, np.nan)
        return out

    def env(self, params: Mapping[str, Any], metrics: Mapping[str, Any]) -> dict[str, Any]:
        """Names visible to constraint expressions: numeric design values, params, metrics."""
        env: dict[str, Any] = {}
        for k, v in self.context.items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                env[k] = v
        env.update(params)
        env.update(metrics)
        return env

    def violations(self, params: Mapping[str, Any], metrics: Mapping[str, Any]) -> list[Any]:
        env = self.env(params, metrics)
        return [c.violation(env) for c in self.constraints]


def _short(v: Any, limit: int = 80) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _loop(
    fn: Callable[[Mapping[str, Any]], Mapping[str, Any]],
    design: dict[str, Any],
    arrays: Mapping[str, np.ndarray],
    shape: tuple[int, ...],
) -> dict[str, np.ndarray]:
    """Run a scalar-only evaluator over a batch, one design at a time."""
    full = {k: np.broadcast_to(v, shape) for k, v in arrays.items()}
    results: dict[str, np.ndarray] = {}
    for idx in np.ndindex(shape):
        d = dict(design)
        d.update({k: _scalar(v[idx]) for k, v in full.items()})
        d[MEMO_KEY] = {}
        for key, val in fn(d).items():
            if key not in results:
                results[key] = np.full(shape, np.nan)
            results[key][idx] = float(val)
    return results


def _scalar(v: Any) -> Any:
    """One element of a batch as a Python value (object arrays hold them already)."""
    return v.item() if isinstance(v, np.generic) else v


# -- compiling a spec ---------------------------------------------------------------------------


def parse_value(text: str) -> Any:
    """A ``--set`` value: YAML scalar typing (``8`` int, ``0.1`` float, ``abc`` str)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def apply_dotted(
    fixed: dict[str, Any],
    dotted: str,
    value: Any,
    *,
    as_mapping: Callable[[Any], dict[str, Any]] | None = None,
) -> None:
    """Set ``a.b.c`` inside ``fixed``; a value on the way that is not a mapping (a preset
    name) is first turned into one by the evaluators' ``as_mapping`` hook."""
    parts = dotted.split(".")
    node = fixed
    for part in parts[:-1]:
        cur = node.get(part)
        if cur is None:
            cur = {}
        elif not isinstance(cur, dict):
            try:
                if as_mapping is None:
                    raise ValueError("no evaluator of this spec expands it")
                cur = dict(as_mapping(cur))
            except ValueError:
                raise DesignError(f"--set {dotted}: {part!r} is {cur!r}, not a mapping") from None
        node[part] = cur
        node = cur
    node[parts[-1]] = value


def midpoint(p: ParamSpec) -> Any:
    if isinstance(p, CategoricalParam):
        return p.choices[0]
    if p.log:
        mid = math.sqrt(p.low * p.high)
    else:
        mid = (p.low + p.high) / 2
    return int(round(mid)) if isinstance(p, IntParam) else float(mid)


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


def _distribution_at(tree: Mapping[str, Any], loc: tuple[str, ...]) -> tuple[str, ...]:
    """The path of the ``{dist: ...}`` mapping a distribution problem at ``loc`` is in."""
    node: Any = tree
    for i, part in enumerate(loc):
        if isinstance(node, Mapping) and "dist" in node:
            return loc[:i]
        node = node.get(part) if isinstance(node, Mapping) else None
    return loc


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
    with stdout_to_stderr():
        return resolve(fixed, spec_dir=spec_dir) if takes_dir else resolve(fixed)


def _referenced_evaluators(loaded: LoadedSpec) -> list[str]:
    """Evaluator names the objectives and constraints mention (``perf`` in ``perf.x``)."""
    names = [o.metric for o in loaded.spec.objectives]
    for text in loaded.spec.constraints:
        try:
            names += sorted(parse_expr(text).names)
        except ExprError:
            continue  # reported with its location by compile_spec
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
    return evaluators, problems


def _first_hook(evaluators: Mapping[str, Evaluator], name: str) -> Any:
    """The first selected evaluator's optional hook ``name`` (a member of Evaluator)."""
    return next((getattr(e, name) for e in evaluators.values() if getattr(e, name)), None)


def compile_spec(
    loaded: LoadedSpec, *, fixed_overrides: Mapping[str, Any] | None = None
) -> StudyModel:
    """Check everything that needs the evaluators; raise SpecError listing every problem."""
    model, problems = collect_model(loaded, fixed_overrides=fixed_overrides)
    if problems or model is None:
        raise SpecError(problems)
    return model


def collect_model(
    loaded: LoadedSpec, *, fixed_overrides: Mapping[str, Any] | None = None
) -> tuple[StudyModel | None, list[Problem]]:
    """Compile a spec against its evaluators, collecting every problem rather than stopping at
    the first stage that has one: a broken part is left out and the rest is still checked, and
    problems that only follow from an earlier one (a metric of an evaluator that did not load)
    are not reported twice.

    The stages: load the evaluators; take the uncertain values out of ``fixed``; resolve the
    context; check the space's and fixed keys' names; probe each evaluator for its metrics
    (and for values its model rejects); check the objectives' and constraints' names.
    """
    evaluators, problems = select_evaluators(loaded)
    broken = _unloaded(loaded, evaluators)
    nominal, uncertain, found = _nominal_fixed(loaded, evaluators, fixed_overrides)
    problems += found
    if nominal is None:
        return None, problems
    resolvers = _resolvers(evaluators)
    context, context_ok, found = _resolve_context(loaded, evaluators, resolvers, nominal)
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
    found, probed = _metric_catalog(loaded, model, broken, context_ok=context_ok)
    problems += found
    problems += merge_probe_problems(ranges, probed)
    problems += _objective_and_constraint_problems(loaded, model, broken)
    return model, problems


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


def _nominal_fixed(
    loaded: LoadedSpec,
    evaluators: Mapping[str, Evaluator],
    fixed_overrides: Mapping[str, Any] | None,
) -> tuple[dict[str, Any] | None, list[Any], list[Problem]]:
    """The spec's ``fixed`` with the overrides applied, as nominal values and the uncertain
    ones (each located where it lands in the context); None when a distribution could not be
    taken out."""
    problems: list[Problem] = []
    fixed = copy.deepcopy(loaded.spec.fixed)
    as_mapping = _first_hook(evaluators, "as_mapping")
    for dotted, value in (fixed_overrides or {}).items():
        apply_dotted(fixed, dotted, value, as_mapping=as_mapping)
    for _ in range(_MAX_RETRIES):
        try:
            nominal, uncertain = extract_uncertain(fixed)
            break
        except UncertainError as exc:
            problems.append(loaded.problem(("fixed", *exc.loc), exc.message))
            if not _drop_path(fixed, _distribution_at(fixed, tuple(exc.loc))):
                return None, [], problems
    else:
        return None, [], problems
    locate = _first_hook(evaluators, "context_path")
    if locate is not None:
        uncertain = [dataclasses.replace(u, landing=tuple(locate(u.path))) for u in uncertain]
    return nominal, uncertain, problems


def _resolvers(
    evaluators: Mapping[str, Evaluator],
) -> list[Callable[[Mapping[str, Any]], dict[str, Any]]]:
    """Each distinct ``resolve`` hook once, in the evaluators' order."""
    resolvers: list[Callable[[Mapping[str, Any]], dict[str, Any]]] = []
    for ev in evaluators.values():
        if ev.resolve is not None and ev.resolve not in resolvers:
            resolvers.append(ev.resolve)
    return resolvers


def _resolve_context(
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
        owners = {e.name for e in evaluators.values() if e.resolve is resolve}
        foreign = set().union(*(e.params for e in evaluators.values() if e.name not in owners))
        mine = {k: v for k, v in context.items() if k not in foreign}
        resolved, found = _run_resolver(loaded, resolve, mine)
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
) -> tuple[dict[str, Any] | None, list[Problem]]:
    """One resolver's context (None if it refused), and every problem it found: a rejected
    field is dropped (its default takes over) and the resolver asked again."""
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
        return resolved, problems
    return None, problems


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
    known_params = set().union(*(e.params for e in evaluators.values()))
    all_declare = all(e.params for e in evaluators.values()) and not broken
    for name in spec.space:
        if all_declare and name not in known_params:
            problems.append(
                loaded.problem(
                    ("space", name),
                    f"unknown design parameter {name!r} ({did_you_mean(name, known_params)}"
                    f"valid parameters: {choices_text(known_params)})",
                )
            )
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
    loaded: LoadedSpec, model: StudyModel, broken: set[str], *, context_ok: bool
) -> tuple[list[Problem], list[Problem]]:
    """Fill ``model.metrics``: declared, or discovered by probing the midpoint design. Every
    evaluator is probed once, so a bad fixed value its model rejects (an error carrying the
    ``path`` of the offending field) stops the spec here instead of failing every trial
    later. Returns the problems, and the bad values the models rejected on the probe design
    (merged with the range checks'); an evaluator whose probe failed joins ``broken``."""
    spec = loaded.spec
    evaluators = model.evaluators
    problems: list[Problem] = []
    probe_params = {n: midpoint(p) for n, p in spec.space.items()}
    timeout_s = spec.search.trial_timeout_s
    probed: list[Problem] = []  # bad values the models rejected on the probe design
    for ev in evaluators.values():
        if ev.metrics is not None:
            for k, info in ev.metrics.items():
                model.metrics[f"{ev.name}.{k}"] = info
            if not context_ok:
                continue
            try:
                with np.errstate(all="ignore"):  # a bad range's midpoint is reported already
                    _probe(model, ev, probe_params, timeout_s)
            except (ProbeTimeout, ProbeFailed) as exc:
                problems.append(_evaluator_problem(loaded, ev, str(exc)))
            except ValueError as exc:
                path = getattr(exc, "path", None)
                if path:
                    head = path.split(".")[0]
                    loc = ("space", head) if head in spec.space else ("fixed", *path.split("."))
                    probed.append(loaded.problem(loc, getattr(exc, "message", str(exc))))
            except KeyboardInterrupt:
                raise
            except BaseException:  # noqa: BLE001 - other failures are per-trial, not spec errors
                pass
            continue
        if not context_ok:
            broken.add(ev.name)
            continue
        try:
            keys = _probe(model, ev, probe_params, timeout_s)
        except (ProbeTimeout, ProbeFailed) as exc:
            problems.append(_evaluator_problem(loaded, ev, str(exc)))
            broken.add(ev.name)
            continue
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit from a user's model too
            problems.append(
                loaded.problem(
                    ("evaluators", ev.name),
                    f"probing the evaluator on the midpoint design raised "
                    f"{type(exc).__name__}: {exc}",
                )
            )
            broken.add(ev.name)
            continue
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
    raw_space = loaded.raw.get("space")
    names = {*model.metrics, *spec.space, *model.env({}, {})}
    if isinstance(raw_space, dict):  # parameters rejected by the schema are reported there
        names |= {str(n) for n in raw_space}
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
            problems.append(
                loaded.problem(
                    loc,
                    f"unknown design parameter {name!r} ({did_you_mean(name, known_params)}"
                    f"valid parameters: {choices_text(known_params)})",
                )
            )
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


def _evaluator_problem(loaded: LoadedSpec, ev: Evaluator, message: str) -> Problem:
    return loaded.problem(
        ("evaluators", ev.name), f"evaluator {ev.name!r} ({ev.origin}): {message}"
    )


def _probe(
    model: StudyModel, ev: Evaluator, params: Mapping[str, Any], timeout_s: float | None
) -> list[str]:
    """The metric names ``ev`` returns on the midpoint design, its answer checked against the
    contract (:mod:`dse.model.probe`); a vectorized one is also asked about a batch of two."""
    batch = None
    if ev.vectorized and params:
        pair = {k: np.asarray([v] * BATCH) for k, v in params.items()}
        batch = {**model.design(pair), MEMO_KEY: {}}
    design = {**model.design(params), MEMO_KEY: {}}
    return probe(ev.fn, design, batch=batch, timeout_s=timeout_s)


def split_sets(
    model_space: Mapping[str, ParamSpec], sets: list[str], known: set[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split ``--set k=v`` items into design params and dotted fixed overrides."""
    params: dict[str, Any] = {}
    fixed: dict[str, Any] = {}
    for item in sets:
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise DesignError(f"--set {item!r}: expected name=value")
        value = parse_value(text.strip())
        if key in model_space:
            params[key] = value
        elif "." in key or key in known:
            fixed[key] = value
        else:
            raise DesignError(
                f"--set {key}: unknown parameter ({did_you_mean(key, [*model_space, *known])}"
                f"valid: {choices_text([*model_space, *known])}, or a dotted fixed value "
                "such as group.field)"
            )
    return params, fixed


def check_params(space: Mapping[str, ParamSpec], params: Mapping[str, Any]) -> None:
    """A fixed design must set every searched parameter, within its range."""
    missing = [n for n in space if n not in params]
    if missing:
        raise DesignError(
            "the spec searches "
            + ", ".join(missing)
            + "; give a value with "
            + " ".join(f"--set {n}=..." for n in missing)
        )
    for name, p in space.items():
        v = params[name]
        if isinstance(p, FloatParam | IntParam):
            if not isinstance(v, int | float) or isinstance(v, bool):
                raise DesignError(f"--set {name}: expected a number, got {v!r}")
            if isinstance(p, IntParam) and not float(v).is_integer():
                raise DesignError(f"--set {name}: expected an integer, got {v!r}")
            if not p.low <= v <= p.high:
                raise DesignError(
                    f"--set {name}: {v!r} is outside the searched range [{p.low}, {p.high}]"
                )
        elif v not in p.choices:
            raise DesignError(f"--set {name}: {v!r} is not one of {p.choices}")
