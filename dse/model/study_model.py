"""A spec compiled against the evaluators (by :mod:`dse.model.compile`): resolved context,
metric catalog, objectives, constraints, and the one evaluation path every command uses (single
trial, ``evaluate``, vectorized batch).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from dse.errors import DesignError, DseError, EvaluationError, YamlReadError
from dse.model.frozen import freeze, read_only
from dse.model.isolation import ExitCalled, user_code
from dse.model.registry import Evaluator, MetricInfo, run_order
from dse.spec import safe_yaml
from dse.spec.expr import Expr
from dse.spec.messages import choices_text, did_you_mean, short_repr
from dse.spec.schema import CategoricalParam, FloatParam, IntParam, LoadedSpec, ParamSpec


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
    def design(self, params: Mapping[str, Any], *, frozen: bool = False) -> dict[str, Any]:
        """The fixed values with ``params`` and the derived values; ``frozen``: with nested
        values and arrays read-only (:mod:`dse.model.frozen`), as evaluators get it."""
        if not frozen:
            d = dict(self.context)
        else:  # frozen once per context (a robust scenario swaps the context)
            cached = self.__dict__.get("_frozen_context")
            if cached is None or cached[0] is not self.context:
                cached = self.__dict__["_frozen_context"] = (self.context, freeze(self.context))
            d = dict(cached[1])
            params = {
                k: read_only(v) if isinstance(v, np.ndarray) else v for k, v in params.items()
            }
        d.update(params)
        if self.derived:
            env = self.env(params, {})
            for name, expr in self.derived.items():
                d[name] = env[name] = freeze(expr.evaluate(env)) if frozen else expr.evaluate(env)
        return d

    @cached_property
    def run_order(self) -> list[Evaluator]:
        """The evaluators to run, each after the ones it needs (unselected needed ones
        included: their metrics are passed on, not published)."""
        return run_order(self.evaluators)

    def evaluate(self, params: Mapping[str, Any], *, strict: bool = True) -> dict[str, np.ndarray]:
        """All metrics of a design or a batch (params may be arrays of one shape).

        Each evaluator runs once, after the ones it ``needs``, and gets their metrics as
        keyword arguments named after them. With ``strict`` any non-finite value raises
        EvaluationError (a failed trial); otherwise non-finite values are kept for the caller
        to drop (sweeps).
        """
        arrays = {k: np.asarray(v) for k, v in params.items()}
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values())) if arrays else ()
        design = self.design(
            arrays if shape else {k: v.item() for k, v in arrays.items()}, frozen=True
        )
        results: dict[str, Mapping[str, Any]] = {}
        for ev in self.run_order:
            needed = {n: results[n] for n in ev.needs}
            try:
                with user_code():
                    if ev.vectorized or not shape:
                        result = ev.fn(design, **needed)
                    else:
                        result = _loop(ev.fn, design, arrays, shape, needed)
            except (DseError, KeyboardInterrupt):  # Ctrl-C stops the study, as anywhere
                raise
            except BaseException as exc:  # noqa: BLE001 - SystemExit in a model fails its design
                kind = type(exc).__name__
                what = exc if isinstance(exc, ExitCalled) else f"raised {kind}: {exc}"
                raise EvaluationError(f"evaluator {ev.name!r} {what}") from exc
            if not isinstance(result, Mapping):
                raise EvaluationError(
                    f"evaluator {ev.name!r} returned {type(result).__name__}, expected a mapping"
                )
            results[ev.name] = result
        out: dict[str, np.ndarray] = {}
        for ev in self.evaluators.values():  # published in the spec's order
            result = results[ev.name]
            for key, v in result.items():
                try:
                    arr = np.asarray(v, dtype=float)
                    # read-only either way (one metric's array may be another's); a view of an
                    # array of the batch's shape costs a tenth of a broadcast (per trial: ~110)
                    arr = read_only(arr) if arr.shape == shape else np.broadcast_to(arr, shape)
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
                if strict and not np.isfinite(arr).all():
                    raise EvaluationError(
                        f"metric '{ev.name}.{key}' is not finite ({short_repr(v)})"
                    )
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

    @cached_property
    def design_constraints(self) -> list[Expr]:
        """The constraints on searched and numeric fixed values alone, which need no evaluator:
        a sweep checks them first, so a grid's impossible combinations cost nothing."""
        known = set(self.spec.space) | {
            k
            for k, v in self.context.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        return [c for c in self.constraints if c.names and c.names <= known]

    def screen(self, params: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """Which of ``n`` designs pass :attr:`design_constraints` (all, when there are none)."""
        ok = np.ones(n, dtype=bool)
        if self.design_constraints:
            env = self.env(params, {})
            for c in self.design_constraints:
                ok &= np.broadcast_to(c.violation(env) <= 0, (n,))
        return ok

    def violations(self, params: Mapping[str, Any], metrics: Mapping[str, Any]) -> list[Any]:
        env = self.env(params, metrics)
        return [violation(c, env) for c in self.constraints]


def violation(constraint: Expr, env: Mapping[str, Any]) -> Any:
    """``constraint``'s violation in ``env``; what it raises (ZeroDivisionError, ...) is an
    EvaluationError naming it, which fails the design."""
    try:
        return constraint.violation(env)
    except Exception as exc:  # noqa: BLE001 - the design's values, not the engine
        raise EvaluationError(
            f"constraint {constraint.source!r} raised {type(exc).__name__}: {exc}"
        ) from exc


def _loop(
    fn: Callable[..., Mapping[str, Any]],
    design: dict[str, Any],
    arrays: Mapping[str, np.ndarray],
    shape: tuple[int, ...],
    needed: Mapping[str, Mapping[str, Any]],
) -> dict[str, np.ndarray]:
    """Run a scalar-only evaluator over a batch, one design at a time (with each design's
    share of the metrics it needs)."""
    full = {k: np.broadcast_to(v, shape) for k, v in arrays.items()}
    given = {
        n: {k: np.broadcast_to(np.asarray(v, dtype=float), shape) for k, v in m.items()}
        for n, m in needed.items()
    }
    results: dict[str, np.ndarray] = {}
    for idx in np.ndindex(shape):
        d = dict(design)
        d.update({k: _scalar(v[idx]) for k, v in full.items()})
        mine = {n: {k: float(v[idx]) for k, v in m.items()} for n, m in given.items()}
        for key, val in fn(d, **mine).items():
            if key not in results:
                results[key] = np.full(shape, np.nan)
            results[key][idx] = float(val)
    return results


def _scalar(v: Any) -> Any:
    """One element of a batch as a Python value (object arrays hold them already)."""
    return v.item() if isinstance(v, np.generic) else v


# -- compiling a spec ---------------------------------------------------------------------------


#: What the guarded YAML reader says of a value that is bounded work no more (a bomb, a
#: recursive alias, thousands of brackets): refused, where other invalid YAML is plain text.
_UNBOUNDED = ("nested deeper", "nested too deeply", "recursive alias", "once aliases")


def parse_value(text: str, key: str = "value") -> Any:
    """A ``--set`` value: YAML scalar typing (``8`` int, ``0.1`` float, ``abc`` str), read by
    the guarded reader (dse.spec.safe_yaml): bounded depth and alias expansion. A refusal
    names the option's field (``--set KEY``)."""
    try:
        return safe_yaml.parse(text, "--set").data
    except YamlReadError as exc:
        if any(word in exc.message for word in _UNBOUNDED):
            raise DesignError(f"--set {key}: {exc.message} (value {short_repr(text)})") from None
        return text
    except ValueError:  # an integer beyond Python's int-string limit
        digits = sum(c.isdigit() for c in text)
        raise DesignError(
            f"--set {key}: an integer of {digits:,} digits ({short_repr(text)}); expected a "
            f"number of at most {sys.get_int_max_str_digits():,} digits"
        ) from None


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
    if p.log and p.low > 0 and p.high > 0:  # a bad log range is reported; never a crash here
        mid = math.sqrt(p.low) * math.sqrt(p.high)
    else:
        mid = p.low / 2 + p.high / 2  # no overflow at +/-1e308
    if isinstance(p, IntParam):
        return (p.low + p.high) // 2 if not p.log else int(round(mid))
    return float(mid)


#: Deepest dotted ``--set`` key: a fixed value nests no deeper than a YAML file may.
MAX_SET_DEPTH = 50


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
        if key.count(".") >= MAX_SET_DEPTH:  # as deep as a YAML file may nest (safe_yaml)
            raise DesignError(
                f"--set {short_repr(key)}: nested deeper than {MAX_SET_DEPTH} levels"
            )
        value = parse_value(text.strip(), key)
        if key in model_space:
            params[key] = value
        elif "." in key or key in known:
            fixed[key] = value
        else:
            names = list(dict.fromkeys([*model_space, *known]))  # searched ones are known too
            raise DesignError(
                f"--set {key}: unknown parameter ({did_you_mean(key, names)}"
                f"valid: {choices_text(names)}, or a dotted fixed value "
                "such as group.field)"
            )
    return params, fixed


def check_params(space: Mapping[str, ParamSpec], params: Mapping[str, Any]) -> None:
    """A fixed design must set every searched parameter, within its range."""
    missing = [n for n in space if n not in params]
    if missing:
        given = " ".join(f"--set {n}=..." for n in missing)
        raise DesignError(f"the spec searches {', '.join(missing)}; give a value with {given}")
    for name, p in space.items():
        problem = value_problem(p, params[name])
        if problem:
            raise DesignError(f"--set {name}: {problem}")


def value_problem(p: ParamSpec, v: Any) -> str | None:
    """Why ``v`` is no value of the searched parameter ``p``, or None."""
    if isinstance(p, FloatParam | IntParam):
        if isinstance(v, bool) or not isinstance(v, int | float):
            return f"expected a number, got {v!r}"
        if isinstance(p, IntParam) and not float(v).is_integer():
            return f"expected an integer, got {v!r}"
        if not p.low <= v <= p.high:
            return f"{v!r} is outside the searched range [{p.low}, {p.high}]"
        return None
    return None if v in p.choices else f"{v!r} is not one of {p.choices}"
