"""Uncertain assumptions: distributions in a spec's ``fixed`` context.

Any numeric value inside ``fixed`` may be written as a distribution instead of a number
(``scale: {dist: uniform, low: 0.5, high: 1.5}``); the distributions, their parameters and
nominal values are documented in docs/robust.md. The nominal value is the one a plain
evaluation, ``dse evaluate`` and a nominal ``dse run`` use, and the one the spec is validated
with. The engine's robust objectives over these assumptions live in :mod:`dse.model.robust`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from dse.errors import UncertainError
from dse.spec.messages import choices_text

__all__ = [
    "DISTRIBUTIONS",
    "Uncertain",
    "check_paths",
    "extract_uncertain",
    "sample",
]

DIST_KEY = "dist"
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "normal": ("mean", "sd"),
    "lognormal": ("median", "sigma"),
    "uniform": ("low", "high"),
    "triangular": ("low", "mode", "high"),
}
_Z = NormalDist()


@dataclass(frozen=True)
class Uncertain:
    """One uncertain assumption: where it sits in ``fixed`` and its distribution."""

    path: tuple[str, ...]  # location in the spec's ``fixed`` mapping
    dist: str
    params: Mapping[str, float]
    #: Location in the resolved context when the evaluators' ``context_path`` moves it.
    landing: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        return ".".join(self.path)

    @property
    def context_path(self) -> tuple[str, ...]:
        """Location in the resolved context (an evaluator's ``context_path`` hook may move it)."""
        return self.landing or self.path

    @property
    def nominal(self) -> float:
        p = self.params
        if self.dist == "uniform":
            return float((p["low"] + p["high"]) / 2)
        return float(p[{"normal": "mean", "lognormal": "median", "triangular": "mode"}[self.dist]])

    def ppf(self, q: Any) -> np.ndarray:
        """The quantile function (inverse CDF) at probabilities ``q`` in (0, 1)."""
        q = np.asarray(q, dtype=float)
        p = self.params
        if self.dist in ("normal", "lognormal"):
            z = np.vectorize(_Z.inv_cdf, otypes=[float])(q)
            if self.dist == "normal":
                return p["mean"] + p["sd"] * z
            return p["median"] * np.exp(p["sigma"] * z)
        lo, hi = p["low"], p["high"]
        if self.dist == "uniform":
            return lo + q * (hi - lo)
        c = (p["mode"] - lo) / (hi - lo)
        left = lo + np.sqrt(q * (hi - lo) * (p["mode"] - lo))
        right = hi - np.sqrt((1 - q) * (hi - lo) * (hi - p["mode"]))
        return np.where(q < c, left, right)

    def as_dict(self) -> dict[str, Any]:
        return {DIST_KEY: self.dist, **{k: float(v) for k, v in self.params.items()}}


def _parse(loc: tuple[str, ...], raw: Mapping[str, Any]) -> Uncertain:
    kind = raw.get(DIST_KEY)
    if kind not in DISTRIBUTIONS:
        raise UncertainError(
            (*loc, DIST_KEY),
            f"unknown distribution {kind!r} (valid choices: {choices_text(DISTRIBUTIONS)})",
        )
    need = DISTRIBUTIONS[kind]
    extra = sorted(set(raw) - {DIST_KEY, *need})
    if extra:
        raise UncertainError(
            (*loc, extra[0]),
            f"unknown field {extra[0]!r} for a {kind} distribution "
            f"(valid fields: {', '.join(need)})",
        )
    params: dict[str, float] = {}
    for key in need:
        if key not in raw:
            raise UncertainError(
                loc, f"a {kind} distribution needs {', '.join(need)}; {key!r} is missing"
            )
        v = raw[key]
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise UncertainError((*loc, key), f"expected a finite number, got {v!r}")
        params[key] = float(v)
    positive = {"normal": ("sd",), "lognormal": ("median", "sigma")}.get(kind, ())
    for key in positive:
        if params[key] <= 0:
            raise UncertainError((*loc, key), f"must be > 0, got {params[key]}")
    if kind in ("uniform", "triangular") and not params["low"] < params["high"]:
        raise UncertainError((*loc, "low"), f"low ({params['low']}) must be below high")
    if kind == "triangular" and not params["low"] <= params["mode"] <= params["high"]:
        raise UncertainError((*loc, "mode"), "mode must lie between low and high")
    return Uncertain(path=loc, dist=kind, params=params)


def extract_uncertain(
    fixed: Mapping[str, Any], *, errors: list[UncertainError] | None = None
) -> tuple[dict[str, Any], list[Uncertain]]:
    """``fixed`` with every ``{dist: ...}`` mapping replaced by its nominal value, and the list.

    A malformed distribution raises UncertainError (with the location); with ``errors``, each
    one is appended there instead and left out (its field's default takes over).
    """
    found: list[Uncertain] = []

    def walk(node: Any, loc: tuple[str, ...]) -> Any:
        if isinstance(node, Mapping):
            if DIST_KEY in node and loc:
                u = _parse(loc, node)
                found.append(u)
                return u.nominal
            out = {}
            for k, v in node.items():
                try:
                    out[k] = walk(v, (*loc, str(k)))
                except UncertainError as exc:  # from the distribution ``v`` itself
                    if errors is None:
                        raise
                    errors.append(exc)
            return out
        return node

    return walk(copy.deepcopy(dict(fixed)), ()), found


# -- sampling and batch evaluation ---------------------------------------------------------------


def sample(uncertain: list[Uncertain], k: int, *, seed: int) -> dict[str, np.ndarray]:
    """K Latin-hypercube samples of every assumption (independent), keyed by name."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for u in uncertain:
        strata = rng.permutation(k)
        q = (strata + rng.random(k)) / k
        out[u.name] = u.ppf(np.clip(q, 1e-12, 1 - 1e-12))
    return out


def context_with(
    context: Mapping[str, Any], uncertain: list[Uncertain], values: Mapping[str, Any]
) -> dict[str, Any]:
    """A copy of the resolved context with the assumptions set to ``values`` (copy on write)."""
    ctx = dict(context)
    for u in uncertain:
        if u.name not in values:
            continue
        *head, last = u.context_path
        node = ctx
        for part in head:
            node[part] = dict(node[part])
            node = node[part]
        node[last] = values[u.name]
    return ctx


def check_paths(context: Mapping[str, Any], uncertain: list[Uncertain]) -> list[UncertainError]:
    """Each assumption must land on a number in the resolved context."""
    problems = []
    for u in uncertain:
        node: Any = context
        for part in u.context_path:
            node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(node, bool) or not isinstance(node, int | float):
            problems.append(
                UncertainError(u.path, f"a distribution needs a numeric field, found {node!r}")
            )
    return problems
