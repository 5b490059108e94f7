"""Evaluator registry: installed evaluators from the ``dse.evaluators`` entry-point group, plus
any ``module:function`` named in a spec. Both kinds go through exactly the same interface, the
:class:`Evaluator` object (its optional hooks are its named members; docs/evaluators.md), and a
study runs only the evaluators its spec selects (:func:`dse.model.compile.select_evaluators`).
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from functools import cache
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from dse.model.isolation import user_code
from dse.model.probe import hook_problem
from dse.spec.entry_points import installed_entry_points, load_entry_point
from dse.spec.errors import EvaluatorError, choices_text, did_you_mean, short_repr

ENTRY_POINT_GROUP = "dse.evaluators"
F = TypeVar("F", bound=Callable[..., Any])


@runtime_checkable
class EvaluatorFunction(Protocol):
    """The evaluator contract: ``f(design) -> {metric: number or array}``.

    ``design`` maps every searched parameter and every resolved ``fixed`` value to its value
    (numpy arrays of one batch shape when ``vectorized``); metrics are published as
    ``<evaluator name>.<metric>``. A plain function is an evaluator; its optional hooks are
    the attributes named by :data:`HOOKS`, documented on :class:`Evaluator`.
    """

    def __call__(self, design: Mapping[str, Any], /) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class MetricInfo:
    unit: str
    description: str


#: ``waterfall(own_metrics) -> [(section, label, value)]``.
Waterfall = Callable[[Mapping[str, float]], list[tuple[str, str, float]]]


@dataclass(frozen=True, kw_only=True)
class Evaluator:
    """An evaluator and its optional hooks: the one typed place that lists them.

    A module may export an ``Evaluator`` (``Evaluator(fn=f, metrics=..., vectorized=True)``),
    or a plain function, which the engine wraps (:meth:`wrap`) reading each hook from the
    function's attribute of the same name (set by hand or by :func:`evaluator`); any other
    public attribute on the function is an error naming the closest hook, so a typo is never
    silently ignored. ``name`` and ``origin`` are set when the evaluator is loaded.
    """

    #: ``fn(design) -> {metric: number or array}`` (:class:`EvaluatorFunction`).
    fn: Callable[[Mapping[str, Any]], Mapping[str, Any]]
    #: The name metrics are published under (``<name>.<metric>``): its spec or entry-point name.
    name: str = ""
    #: Where it came from (entry point or import path), for messages.
    origin: str = ""
    #: ``{metric: MetricInfo(unit, one-line meaning)}`` (``(unit, meaning)`` pairs are
    #: converted); declared metrics are not probed.
    metrics: dict[str, MetricInfo] | None = None
    #: Any design value may be a numpy array and the results broadcast (else the engine loops).
    vectorized: bool = False
    #: The design keys it reads: unknown ``space``/``fixed`` keys become errors with
    #: did-you-mean instead of values passed through.
    params: frozenset[str] = field(default_factory=frozenset)
    #: The model's version (a string): recorded in the study, so resuming it with another
    #: version, whose trials would not compare, is refused.
    version: str | None = None
    #: ``resolve(fixed) -> dict``: expands the spec's ``fixed`` mapping (presets, defaults)
    #: into the design context; raise ``ValueError`` with ``.path``/``.message`` for a spec
    #: error. Evaluators sharing one ``resolve`` run it once.
    resolve: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    #: ``check_value(param, value) -> str | None``: why a value is physically impossible;
    #: asked about fixed values and the ends of searched ranges.
    check_value: Callable[[str, Any], str | None] | None = None
    #: ``context_path(path) -> path``: where a ``fixed`` path lands in the resolved context (a
    #: domain may spread a named group's fields to the top level); default: unchanged.
    context_path: Callable[[tuple[str, ...]], tuple[str, ...]] | None = None
    #: ``as_mapping(value) -> dict``: the mapping form of a named ``fixed`` value, so a dotted
    #: override (``--set group.x=1`` on ``group: name``) can refine it.
    as_mapping: Callable[[Any], dict[str, Any]] | None = None
    #: ``assumptions(context) -> {dotted path: nominal value}``: the numeric constants of the
    #: resolved context that ``dse sensitivity`` swings by +/-20 % when the spec declares no
    #: distribution (evaluators sharing a constant list it once).
    assumptions: Callable[[Mapping[str, Any]], Mapping[str, float]] | None = None
    #: ``waterfall(own_metrics) -> [(section, label, value)]``: ``dse evaluate --breakdown``;
    #: an optional ``waterfall.unit`` heads the values' column.
    waterfall: Waterfall | None = None
    #: ``simulate(design, *, years, runs, seed) -> {name: samples}``: ``dse evaluate
    #: --simulate`` (Monte Carlo cross-checks).
    simulate: Callable[..., Mapping[str, Any]] | None = None
    #: ``fixed_schema() -> {"properties": ..., "$defs": ...}``: JSON Schema of the ``fixed``
    #: keys it reads (presets, constants), merged into ``dse schema`` for editor completion.
    fixed_schema: Callable[[], Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise EvaluatorError(f"evaluator {self.name!r} ({self.origin}) is not callable")
        problem = hook_problem({h: getattr(self, h) for h in HOOKS})
        if problem:
            raise EvaluatorError(f"evaluator {self.name!r} ({self.origin}): {problem}")
        if self.metrics is not None:
            object.__setattr__(self, "metrics", _metric_infos(self.name, self.metrics))
        object.__setattr__(self, "vectorized", bool(self.vectorized))
        object.__setattr__(self, "params", frozenset(self.params or ()))

    def __call__(self, design: Mapping[str, Any], /) -> Mapping[str, Any]:
        return self.fn(design)

    @property
    def waterfall_unit(self) -> str | None:
        """The unit heading the breakdown's values (``waterfall.unit``), if it names one."""
        return getattr(self.waterfall, "unit", None)

    @classmethod
    def wrap(cls, name: str, fn: Any, origin: str) -> Evaluator:
        """``fn`` as an Evaluator named ``name``: an Evaluator as it is, a function (or any
        callable) with its hooks read from its attributes."""
        if isinstance(fn, Evaluator):
            return replace(fn, name=name, origin=origin)
        if not callable(fn):
            raise EvaluatorError(f"evaluator {name!r} ({origin}) is not callable")
        if inspect.isfunction(fn):
            _check_attributes(name, origin, fn)
        try:  # a property or __getattr__ of the user's object runs here
            hooks = {h: getattr(fn, h) for h in HOOKS if getattr(fn, h, None) is not None}
        except Exception as exc:  # noqa: BLE001 - one line naming the evaluator, not a traceback
            raise EvaluatorError(
                f"evaluator {name!r} ({origin}): reading its hooks raised "
                f"{type(exc).__name__}: {short_repr(str(exc))}"
            ) from None
        return cls(fn=fn, name=name, origin=origin, **hooks)


#: The optional hooks, by the attribute name a function evaluator carries them under.
HOOKS = tuple(f.name for f in fields(Evaluator) if f.name not in ("fn", "name", "origin"))


def _metric_infos(
    name: str, raw: Mapping[str, MetricInfo | tuple[str, str]]
) -> dict[str, MetricInfo]:
    metrics = {}
    for key, info in dict(raw).items():
        if isinstance(info, MetricInfo):
            metrics[key] = info
        elif isinstance(info, tuple | list) and len(info) == 2:
            metrics[key] = MetricInfo(str(info[0]), str(info[1]))
        else:
            raise EvaluatorError(
                f"evaluator {name!r}: metrics[{key!r}] must be (unit, description)"
            )
    return metrics


def _check_attributes(name: str, origin: str, fn: Callable[..., Any]) -> None:
    """A public attribute of a function evaluator that is no hook is a typo (or a hook of
    another version): one line naming it and the closest hook."""
    unknown = sorted(k for k in vars(fn) if not k.startswith("_") and k not in HOOKS)
    if unknown:
        raise EvaluatorError(
            f"evaluator {name!r} ({origin}): unknown attribute {unknown[0]!r} "
            f"({did_you_mean(unknown[0], HOOKS)}the hooks are: {', '.join(HOOKS)})"
        )


def evaluator(
    *,
    metrics: Mapping[str, tuple[str, str]] | None = None,
    vectorized: bool = False,
    **hooks: Any,
) -> Callable[[F], F]:
    """Decorate a user's evaluator with its metric units, meanings and hooks (the members of
    :class:`Evaluator`: ``params``, ``resolve``, ``check_value``, ...).

    ``resolve`` expands the spec's ``fixed`` context; pass ``objectives.resolve_context`` to reuse
    the built-in presets when the spec runs without them. ``check_value(param, value)`` says
    why a value is physically impossible (None when it is fine).
    """
    unknown = [h for h in hooks if h not in HOOKS]
    if unknown:
        raise TypeError(
            f"evaluator() got an unknown hook {unknown[0]!r} "
            f"({did_you_mean(unknown[0], HOOKS)}the hooks are: {', '.join(HOOKS)})"
        )

    def wrap(fn: F) -> F:
        if metrics is not None:
            fn.metrics = dict(metrics)  # type: ignore[attr-defined]
        fn.vectorized = vectorized  # type: ignore[attr-defined]
        for hook, value in hooks.items():
            if value is not None:
                setattr(fn, hook, value)
        return fn

    return wrap


@cache
def builtin_evaluators() -> dict[str, Evaluator]:
    """Evaluators registered by installed distributions under ``dse.evaluators``."""
    out = {}
    for name in installed_entry_points(ENTRY_POINT_GROUP):
        fn, origin = load_entry_point(ENTRY_POINT_GROUP, name, kind="evaluator")
        out[name] = Evaluator.wrap(name, fn, origin)
    return out


@contextmanager
def _path_first(dirs: list[Path]) -> Iterator[None]:
    added = [str(d) for d in dirs if str(d) not in sys.path]
    sys.path[:0] = added
    try:
        yield
    finally:
        for d in added:
            if d in sys.path:
                sys.path.remove(d)


def load_import_path(name: str, path: str, *, search_dirs: list[Path] | None = None) -> Evaluator:
    """Import ``module:function``; the spec's folder is searched before ``sys.path``."""
    return Evaluator.wrap(name, import_object(path, search_dirs=search_dirs), path)


def _forget_shadowing(module_name: str, dirs: list[Path]) -> None:
    """A module of that name imported earlier from elsewhere (another spec's folder, in a
    notebook or any process that loads several specs) would shadow the one in this spec's
    folder: forget it (and its submodules), so the spec's folder really comes first."""
    top = module_name.partition(".")[0]
    for d in dirs:
        here = [d / f"{top}.py", d / top / "__init__.py"]
        if not any(f.is_file() for f in here):
            continue
        origin = getattr(sys.modules.get(top), "__file__", None)
        if top in sys.modules and (
            origin is None or Path(origin).resolve() not in {f.resolve() for f in here}
        ):
            for name in [m for m in sys.modules if m == top or m.startswith(f"{top}.")]:
                del sys.modules[name]
        return


def import_object(path: str, *, search_dirs: list[Path] | None = None) -> Any:
    """The object ``module:attr`` names (a spec's plug-in: an evaluator, a sampler); the
    spec's folder is searched before ``sys.path``."""
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise EvaluatorError(f"expected 'module:function', got {path!r}")
    _forget_shadowing(module_name, search_dirs or [])
    try:
        with _path_first(search_dirs or []), user_code():
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise EvaluatorError(f"cannot import module {module_name!r} ({exc})") from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit at import is the module's fault too
        raise EvaluatorError(
            f"importing module {module_name!r} raised {type(exc).__name__}: {exc}"
        ) from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            public = [n for n in dir(module) if not n.startswith("_")]
            raise EvaluatorError(
                f"module {module_name!r} has no attribute {attr!r} "
                f"({did_you_mean(attr, public)}public names: {choices_text(public)})"
            )
        obj = getattr(obj, part)
    return obj
