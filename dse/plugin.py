"""The evaluator plug-in contract, in one public module (docs/evaluators.md).

An evaluator is a function ``f(design, **needed) -> {metric: number or array}``; the engine
publishes its metrics as ``<name>.<metric>``. Three nouns describe it:

- :class:`Evaluator`: the function and what it declares of itself (``metrics``, ``vectorized``,
  ``needs``: the evaluators whose metrics it consumes, passed to it as keyword arguments named
  after them, in dependency order, once per design), plus the optional ``waterfall`` and
  ``simulate`` hooks;
- :class:`Domain`: the hooks a family of evaluators shares, declared once (the design keys they
  read, how the spec's ``fixed`` context is resolved and checked, the default assumptions);
- :class:`MetricInfo`: a metric's unit and one-line meaning.

A plain function is an evaluator too: the engine reads these as its attributes of the same
names (:data:`HOOKS`, set by hand or with :func:`evaluator`), so an evaluator needs nothing from
``dse``. :func:`import_object` is the one loader of ``module:attr`` paths for every plug-in kind.
Conformance checks live in :mod:`dse.testing`.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from dse.errors import EvaluatorError
from dse.model.isolation import user_code
from dse.model.probe import hook_problem
from dse.spec.messages import choices_text, did_you_mean, short_repr

__all__ = [
    "DOMAIN_HOOKS",
    "HOOKS",
    "Domain",
    "Evaluator",
    "EvaluatorFunction",
    "MetricInfo",
    "evaluator",
    "import_object",
]

F = TypeVar("F", bound=Callable[..., Any])


@runtime_checkable
class EvaluatorFunction(Protocol):
    """``f(design, **needed) -> {metric: number or array}``.

    ``design`` maps every searched parameter and every resolved ``fixed`` value to its value
    (numpy arrays of one batch shape when ``vectorized``). ``needed`` holds, for each name in
    the evaluator's ``needs``, that evaluator's metrics of the same designs (unprefixed).
    """

    def __call__(self, design: Mapping[str, Any], /, **needed: Any) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class MetricInfo:
    unit: str
    description: str


#: ``waterfall(own_metrics) -> [(section, label, value)]``.
Waterfall = Callable[[Mapping[str, float]], list[tuple[str, str, float]]]


@dataclass(frozen=True, kw_only=True)
class Domain:
    """The hooks a family of evaluators shares, declared once on one object.

    An evaluator points at its domain (``domain=``); the engine runs each hook of a domain once
    however many of its evaluators a spec selects. Any object carrying these attributes is read
    as a domain (:meth:`wrap`), so a domain package needs nothing from ``dse``.
    """

    #: A short name, for messages.
    name: str = ""
    #: The design keys its evaluators read: unknown ``space``/``fixed`` keys become errors with
    #: did-you-mean instead of values passed through.
    params: frozenset[str] = field(default_factory=frozenset)
    #: ``resolve(fixed) -> dict``: expands the spec's ``fixed`` mapping (presets, defaults)
    #: into the design context; raise ``ValueError`` with ``.path``/``.message`` for a spec
    #: error. A resolver that takes ``spec_dir`` is told the spec's folder.
    resolve: Callable[..., dict[str, Any]] | None = None
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
    #: distribution.
    assumptions: Callable[[Mapping[str, Any]], Mapping[str, float]] | None = None
    #: ``fixed_schema() -> {"properties": ..., "$defs": ...}``: JSON Schema of the ``fixed``
    #: keys it reads (presets, constants), merged into ``dse schema`` for editor completion.
    fixed_schema: Callable[[], Mapping[str, Any]] | None = None
    #: Constraints (the spec's expression language) every spec selecting this domain holds
    #: unless it opts out (``default_constraints: false``, or ``{drop: [...]}``): the checks
    #: without which a design is not buildable, so a spec that forgets one is not misled. One
    #: that names a metric of an evaluator the spec does not run is left out.
    default_constraints: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        problem = hook_problem({h: getattr(self, h) for h in DOMAIN_HOOKS})
        if problem:
            raise EvaluatorError(f"domain {self.name!r}: {problem}")
        object.__setattr__(self, "params", frozenset(self.params or ()))
        object.__setattr__(self, "default_constraints", tuple(self.default_constraints or ()))

    @classmethod
    def wrap(cls, obj: Any, origin: str) -> Domain:
        """``obj`` as a Domain: a Domain as it is, any other object read by its attributes
        (a public attribute that is no hook is an error naming the closest)."""
        if isinstance(obj, Domain):
            return obj
        return cls(**_read_hooks(obj, ("name", *DOMAIN_HOOKS), f"domain of {origin}", True))


#: The hooks a :class:`Domain` declares (its members but ``name``).
DOMAIN_HOOKS = tuple(f.name for f in fields(Domain) if f.name != "name")
#: An evaluator with none of the domain hooks.
NO_DOMAIN = Domain()


@dataclass(frozen=True, kw_only=True, init=False)
class Evaluator:
    """An evaluator and its optional hooks: the one typed place that lists them.

    A module may export an ``Evaluator`` (``Evaluator(fn=f, metrics=..., vectorized=True)``),
    or a plain function, which the engine wraps (:meth:`wrap`) reading each hook from the
    function's attribute of the same name (set by hand or by :func:`evaluator`); any other
    public attribute on the function is an error naming the closest hook, so a typo is never
    silently ignored. ``name`` and ``origin`` are set when the evaluator is loaded. Domain hooks
    given to an evaluator itself (``params=``, ``resolve=``, ... as attributes of a function, or
    as keywords here) are its own one-evaluator :class:`Domain`.
    """

    #: ``fn(design, **needed) -> {metric: number or array}`` (:class:`EvaluatorFunction`).
    fn: Callable[..., Mapping[str, Any]]
    #: The name metrics are published under (``<name>.<metric>``): its spec or entry-point name.
    name: str
    #: Where it came from (entry point or import path), for messages.
    origin: str
    #: ``{metric: MetricInfo(unit, one-line meaning)}`` (``(unit, meaning)`` pairs are
    #: converted); declared metrics are not probed.
    metrics: dict[str, MetricInfo] | None
    #: Any design value may be a numpy array and the results broadcast (else the engine loops).
    vectorized: bool
    #: The evaluators whose metrics it consumes, by name: the engine evaluates them first (once
    #: per design) and passes each one's metrics as the keyword argument of that name.
    needs: tuple[str, ...]
    #: The model's version (a string): recorded in the study, so resuming it with another
    #: version, whose trials would not compare, is refused.
    version: str | None
    #: The hooks it shares with its family (:class:`Domain`); an empty Domain when it has none.
    domain: Domain
    #: ``waterfall(own_metrics) -> [(section, label, value)]``: ``dse evaluate --breakdown``;
    #: an optional ``waterfall.unit`` heads the values' column.
    waterfall: Waterfall | None
    #: ``simulate(design, *, years, runs, seed) -> {name: samples}``: ``dse evaluate
    #: --simulate`` (Monte Carlo cross-checks).
    simulate: Callable[..., Mapping[str, Any]] | None

    def __init__(
        self,
        *,
        fn: Callable[..., Mapping[str, Any]],
        name: str = "",
        origin: str = "",
        metrics: Mapping[str, MetricInfo | tuple[str, str]] | None = None,
        vectorized: bool = False,
        needs: Any = (),
        version: str | None = None,
        domain: Any = None,
        waterfall: Waterfall | None = None,
        simulate: Callable[..., Mapping[str, Any]] | None = None,
        **domain_hooks: Any,
    ) -> None:
        where = f"evaluator {name!r} ({origin})"
        _refuse_unknown("Evaluator() got an unknown hook", domain_hooks, HOOKS, TypeError)
        if not callable(fn):
            raise EvaluatorError(f"{where} is not callable")
        own = {h: v for h, v in domain_hooks.items() if v is not None}
        problem = hook_problem(
            {"metrics": metrics, "vectorized": vectorized, "needs": needs, "version": version}
            | own
            | {"waterfall": waterfall, "simulate": simulate}
        )
        if problem:
            raise EvaluatorError(f"{where}: {problem}")
        if domain is not None and own:
            raise EvaluatorError(
                f"{where}: give {', '.join(sorted(own))} on its domain or on the evaluator, "
                "not both"
            )
        if domain is not None:
            dom = Domain.wrap(domain, where)
        elif own:
            dom = Domain(name=name, **own)
        else:
            dom = NO_DOMAIN
        put = object.__setattr__
        put(self, "fn", fn)
        put(self, "name", name)
        put(self, "origin", origin)
        put(self, "metrics", None if metrics is None else _metric_infos(metrics))
        put(self, "vectorized", bool(vectorized))
        put(self, "needs", _needs(where, needs or ()))
        put(self, "version", version)
        put(self, "domain", dom)
        put(self, "waterfall", waterfall)
        put(self, "simulate", simulate)

    def __call__(self, design: Mapping[str, Any], /, **needed: Any) -> Mapping[str, Any]:
        return self.fn(design, **needed)

    @property
    def waterfall_unit(self) -> str | None:
        """The unit heading the breakdown's values (``waterfall.unit``), if it names one."""
        return getattr(self.waterfall, "unit", None)

    def renamed(self, name: str, origin: str) -> Evaluator:
        """This evaluator under another name and origin (as a spec or entry point loads it)."""
        return replace(self, name=name, origin=origin)

    @classmethod
    def wrap(cls, name: str, fn: Any, origin: str) -> Evaluator:
        """``fn`` as an Evaluator named ``name``: an Evaluator as it is, a function (or any
        callable) with its hooks read from its attributes."""
        if isinstance(fn, Evaluator):
            return fn.renamed(name, origin)
        if not callable(fn):
            raise EvaluatorError(f"evaluator {name!r} ({origin}) is not callable")
        hooks = _read_hooks(fn, HOOKS, f"evaluator {name!r} ({origin})", inspect.isfunction(fn))
        return cls(fn=fn, name=name, origin=origin, **hooks)


def _read_hooks(obj: Any, names: Sequence[str], where: str, public: bool) -> dict[str, Any]:
    """The hooks ``obj`` carries as attributes; with ``public``, any other public attribute
    of its own is a typo. A property or ``__getattr__`` of the user's object runs here: what
    it raises is one line naming the plug-in, not a traceback."""
    try:
        if public:
            own = sorted(k for k in getattr(obj, "__dict__", {}) if not k.startswith("_"))
            _refuse_unknown(f"{where}: unknown attribute", own, names)
        return {h: getattr(obj, h) for h in names if getattr(obj, h, None) is not None}
    except EvaluatorError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise EvaluatorError(
            f"{where}: reading its hooks raised {type(exc).__name__}: {short_repr(str(exc))}"
        ) from None


#: The optional hooks, by the attribute name a function evaluator carries them under: the
#: members of Evaluator, then a domain's hooks given to the evaluator itself.
HOOKS = (
    "metrics",
    "vectorized",
    "needs",
    "version",
    "domain",
    "waterfall",
    "simulate",
    *DOMAIN_HOOKS,
)


def _needs(where: str, raw: Any) -> tuple[str, ...]:
    bad = [n for n in raw if not n.isidentifier()]  # strings: hook_problem checked them
    if bad:
        raise EvaluatorError(
            f"{where}: 'needs' must name evaluators (identifiers: each is passed as the keyword "
            f"argument of that name), got {short_repr(bad[0])}"
        )
    return tuple(dict.fromkeys(raw))


def _metric_infos(raw: Mapping[str, Any]) -> dict[str, MetricInfo]:
    """Each metric's ``(unit, meaning)`` as a MetricInfo (``hook_problem`` checked them)."""
    return {
        k: MetricInfo(*i) if isinstance(i, tuple | list) else MetricInfo(i.unit, i.description)
        for k, i in dict(raw).items()
    }


def _refuse_unknown(
    what: str, keys: Iterable[str], names: Sequence[str], error: type[Exception] = EvaluatorError
) -> None:
    """A name that is no hook is a typo (or a hook of another version): one line naming the
    first and the closest hook."""
    unknown = [k for k in keys if k not in names]
    if unknown:
        raise error(
            f"{what} {unknown[0]!r} ({did_you_mean(unknown[0], names)}the hooks are: "
            f"{', '.join(names)})"
        )


def evaluator(
    *,
    metrics: Mapping[str, tuple[str, str]] | None = None,
    vectorized: bool = False,
    **hooks: Any,
) -> Callable[[F], F]:
    """Decorate a user's evaluator with its metric units, meanings and hooks (``needs``,
    ``domain``, ``waterfall``, ``simulate``, or a domain's hooks of its own: ``params``,
    ``resolve``, ``check_value``, ...).

    ``resolve`` expands the spec's ``fixed`` context; pass ``objectives.resolve_context`` to reuse
    the built-in presets when the spec runs without them. ``check_value(param, value)`` says
    why a value is physically impossible (None when it is fine).
    """
    _refuse_unknown("evaluator() got an unknown hook", hooks, HOOKS, TypeError)

    def wrap(fn: F) -> F:
        if metrics is not None:
            fn.metrics = dict(metrics)  # type: ignore[attr-defined]
        fn.vectorized = vectorized  # type: ignore[attr-defined]
        for hook, value in hooks.items():
            if value is not None:
                setattr(fn, hook, value)
        return fn

    return wrap


# -- the loader --------------------------------------------------------------------------------


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
