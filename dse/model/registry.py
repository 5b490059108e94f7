"""Evaluator registry: installed evaluators from the ``dse.evaluators`` entry-point group, plus
any ``module:function`` named in a spec. Both kinds go through exactly the same interface, the
:class:`EvaluatorFunction` protocol (docs/evaluators.md), and a study runs only the evaluators
its spec selects (:func:`dse.model.study_model.select_evaluators`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from dse.spec.errors import EvaluatorError, choices_text, did_you_mean

ENTRY_POINT_GROUP = "dse.evaluators"
F = TypeVar("F", bound=Callable[..., Any])


@runtime_checkable
class EvaluatorFunction(Protocol):
    """The evaluator contract: ``f(design) -> {metric: number or array}``.

    ``design`` maps every searched parameter and every resolved ``fixed`` value to its value
    (numpy arrays of one batch shape when ``vectorized``); metrics are published as
    ``<evaluator name>.<metric>``. Every attribute below is optional and read by duck typing:

    - ``metrics``: ``{metric: (unit, one-line meaning)}``; declared metrics are not probed.
    - ``vectorized``: True when any design value may be an array and results broadcast.
    - ``params``: the design keys it reads; with it, unknown ``space``/``fixed`` keys are
      errors with did-you-mean instead of values passed through.
    - ``resolve(fixed) -> dict``: expands the spec's ``fixed`` mapping (presets, defaults)
      into the design context; raise ``ValueError`` with ``.path``/``.message`` for a spec
      error. Evaluators sharing one ``resolve`` run it once.
    - ``context_path(path) -> path``: where a ``fixed`` path lands in the resolved context
      (a domain may spread a named group's fields to the top level); default: unchanged.
    - ``check_value(param, value) -> str | None``: why a value is physically impossible; asked
      about fixed values and the ends of searched ranges.
    - ``as_mapping(value) -> dict``: the mapping form of a named ``fixed`` value, so a dotted
      override (``--set group.x=1`` on ``group: name``) can refine it.
    - ``assumptions(context) -> {dotted path: nominal value}``: the numeric constants of the
      resolved context that ``dse sensitivity`` swings by +/-20 % when the spec declares no
      distribution (evaluators sharing a constant list it once).
    - ``waterfall(own_metrics) -> [(section, label, value)]``: ``dse evaluate --breakdown``
      (an optional ``waterfall.unit`` heads the values' column).
    - ``simulate(design, *, years, runs, seed) -> {name: samples}``: ``dse evaluate
      --simulate`` (Monte Carlo cross-checks).
    """

    def __call__(self, design: Mapping[str, Any], /) -> Mapping[str, Any]: ...


def evaluator(
    *,
    metrics: Mapping[str, tuple[str, str]] | None = None,
    vectorized: bool = False,
    resolve: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None,
    check_value: Callable[[str, Any], str | None] | None = None,
) -> Callable[[F], F]:
    """Decorate a user's evaluator with its metric units, meanings and capabilities.

    ``resolve`` expands the spec's ``fixed`` context; pass ``objectives.resolve_context`` to reuse
    the built-in presets when the spec runs without them. ``check_value(param, value)`` says
    why a value is physically impossible (None when it is fine).
    """

    def wrap(fn: F) -> F:
        if metrics is not None:
            fn.metrics = dict(metrics)  # type: ignore[attr-defined]
        fn.vectorized = vectorized  # type: ignore[attr-defined]
        if resolve is not None:
            fn.resolve = resolve  # type: ignore[attr-defined]
        if check_value is not None:
            fn.check_value = check_value  # type: ignore[attr-defined]
        return fn

    return wrap


@dataclass(frozen=True)
class MetricInfo:
    unit: str
    description: str


@dataclass(frozen=True)
class Evaluator:
    """An evaluator with what the engine knows about it."""

    name: str
    fn: Callable[[Mapping[str, Any]], Mapping[str, Any]]
    origin: str
    metrics: dict[str, MetricInfo] | None = None
    vectorized: bool = False
    params: frozenset[str] = field(default_factory=frozenset)
    resolve: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    check_value: Callable[[str, Any], str | None] | None = None
    context_path: Callable[[tuple[str, ...]], tuple[str, ...]] | None = None
    as_mapping: Callable[[Any], dict[str, Any]] | None = None
    assumptions: Callable[[Mapping[str, Any]], Mapping[str, float]] | None = None

    @classmethod
    def wrap(cls, name: str, fn: Any, origin: str) -> Evaluator:
        if not callable(fn):
            raise EvaluatorError(f"evaluator {name!r} ({origin}) is not callable")
        raw = getattr(fn, "metrics", None)
        metrics = None
        if raw is not None:
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
        return cls(
            name=name,
            fn=fn,
            origin=origin,
            metrics=metrics,
            vectorized=bool(getattr(fn, "vectorized", False)),
            params=frozenset(getattr(fn, "params", None) or ()),
            resolve=getattr(fn, "resolve", None),
            check_value=getattr(fn, "check_value", None),
            context_path=getattr(fn, "context_path", None),
            as_mapping=getattr(fn, "as_mapping", None),
            assumptions=getattr(fn, "assumptions", None),
        )


@cache
def builtin_evaluators() -> dict[str, Evaluator]:
    """Evaluators registered by installed distributions under ``dse.evaluators``."""
    out = {}
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            fn = ep.load()
        except Exception as exc:  # a broken plug-in must not hide the others
            raise EvaluatorError(f"entry point {ep.name!r} ({ep.value}) failed: {exc}") from exc
        out[ep.name] = Evaluator.wrap(ep.name, fn, f"entry point {ep.value}")
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


def import_object(path: str, *, search_dirs: list[Path] | None = None) -> Any:
    """The object ``module:attr`` names (a spec's plug-in: an evaluator, a sampler); the
    spec's folder is searched before ``sys.path``."""
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise EvaluatorError(f"expected 'module:function', got {path!r}")
    try:
        with _path_first(search_dirs or []):
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
