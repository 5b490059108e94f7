"""Restricted expressions for constraints: names, numbers, arithmetic, comparisons, and/or/not.

Parsed with :mod:`ast` and walked by hand; nothing is ever passed to ``eval``. Names may be dotted
(``perf.package_power_w``) and refer to metrics or design parameters. Evaluation is vectorized:
every name may be a numpy array.

A constraint's *violation* follows Optuna's convention (feasible when ``<= 0``): for ``a <= b``
it is ``(a - b) / max(|b|, 1)`` so constraints in large units and in fractions weigh alike; a
bare expression is feasible when non-zero (``m.fits``); ``and`` takes the worst violation,
``or`` the best, ``not`` flips feasibility.
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from dse.errors import ExprError
from dse.spec.messages import shorten

_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.Mod: operator.mod,
    ast.FloorDiv: operator.floordiv,
}
_CMPOPS: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
#: Violation of ``a < b`` at ``a == b``: positive (infeasible) but below any real violation.
_STRICT_EPS = float(np.finfo(float).eps)
_ALLOWED = "names, numbers, + - * / // ** %, comparisons (< <= > >= == !=), and, or, not"
#: Bounded work for any input: a constraint is a short formula. Longer or deeper ones are
#: refused with these numbers in the message (never a RecursionError), and an exponent must be
#: a name or a number of at most MAX_EXPONENT in size (``9 ** 9 ** 9 ** 9`` would never end).
MAX_EXPR_CHARS = 2_000
MAX_EXPR_NODES = 500
MAX_EXPR_DEPTH = 100
MAX_EXPONENT = 1_000


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


@dataclass(frozen=True)
class Expr:
    """A parsed, checked expression."""

    source: str
    tree: ast.expr = field(repr=False)
    names: frozenset[str]

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        return _value(self.tree, env)

    def value(self, env: Mapping[str, Any]) -> Any:
        """What the constraint measures: the left side of a comparison (``perf.package_power_w``
        in ``perf.package_power_w <= 1200``), else the expression's own value."""
        if isinstance(self.tree, ast.Compare):
            return _value(self.tree.left, env)
        return _value(self.tree, env)

    def violation(self, env: Mapping[str, Any]) -> np.ndarray:
        """Constraint violation, ``<= 0`` where feasible."""
        return np.asarray(_violation(self.tree, env), dtype=float)


def parse_expr(source: str) -> Expr:
    if len(source) > MAX_EXPR_CHARS:
        raise ExprError(
            f"expression is {len(source):,} characters long (at most {MAX_EXPR_CHARS:,}); "
            "split it into several constraints"
        )
    try:
        tree = ast.parse(source.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ExprError(f"cannot parse {shorten(source, 80)!r}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ExprError(
            f"expression is nested too deeply (at most {MAX_EXPR_DEPTH} levels)"
        ) from None
    _check_size(tree)
    names: set[str] = set()
    _check(tree, names)
    return Expr(source=source, tree=tree, names=frozenset(names))


def _check_size(tree: ast.AST) -> None:
    """Count nodes, then depth, without recursion, so any input gets a clear answer."""
    for count, _ in enumerate(ast.walk(tree), start=1):
        if count > MAX_EXPR_NODES:
            raise ExprError(
                f"expression has more than {MAX_EXPR_NODES} terms and operators; "
                "split it into several constraints"
            )
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_EXPR_DEPTH:
            raise ExprError(f"expression is nested too deeply (at most {MAX_EXPR_DEPTH} levels)")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _exponent_ok(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    if _dotted(node) is not None:
        return True  # evaluated in floating point: overflows to inf, never hangs
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
        and abs(node.value) <= MAX_EXPONENT
    )


def _check(node: ast.AST, names: set[str]) -> None:
    dotted = _dotted(node)
    if dotted is not None:
        names.add(dotted)
        return
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ExprError(f"only numbers are allowed as constants, got {node.value!r}")
        return
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        if isinstance(node.op, ast.Pow) and not _exponent_ok(node.right):
            raise ExprError(
                f"the exponent {shorten(ast.unparse(node.right), 60)!r} must be a name or a "
                f"number between -{MAX_EXPONENT} and {MAX_EXPONENT}"
            )
        _check(node.left, names)
        _check(node.right, names)
        return
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd | ast.Not):
        _check(node.operand, names)
        return
    if isinstance(node, ast.Compare) and all(type(op) in _CMPOPS for op in node.ops):
        _check(node.left, names)
        for c in node.comparators:
            _check(c, names)
        return
    if isinstance(node, ast.BoolOp):
        for v in node.values:
            _check(v, names)
        return
    what = type(node).__name__
    if isinstance(node, ast.Call):
        what = "function call"
    elif isinstance(node, ast.Subscript):
        what = "subscript"
    raise ExprError(f"{what} is not allowed (allowed: {_ALLOWED})")


def _value(node: ast.AST, env: Mapping[str, Any]) -> Any:
    dotted = _dotted(node)
    if dotted is not None:
        v = env[dotted]
        return np.float64(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
    if isinstance(node, ast.Constant):
        # float arithmetic: overflow gives inf, not a huge int
        return np.float64(cast(Any, node.value))
    if isinstance(node, ast.BinOp):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return _BINOPS[type(node.op)](_value(node.left, env), _value(node.right, env))
    if isinstance(node, ast.UnaryOp):
        v = _value(node.operand, env)
        if isinstance(node.op, ast.Not):
            return np.logical_not(v)
        return -v if isinstance(node.op, ast.USub) else +v
    if isinstance(node, ast.Compare):
        left = _value(node.left, env)
        result: Any = True
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _value(comp, env)
            result = np.logical_and(result, _CMPOPS[type(op)](left, right))
            left = right
        return result
    if isinstance(node, ast.BoolOp):
        fn = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
        return functools.reduce(fn, [_value(v, env) for v in node.values])
    raise ExprError(f"unsupported node {type(node).__name__}")  # unreachable after _check


def _compare_violation(op: ast.cmpop, left: Any, right: Any) -> Any:
    scale = np.maximum(np.abs(right), 1.0)
    if isinstance(op, ast.LtE):
        return (left - right) / scale
    if isinstance(op, ast.GtE):
        return (right - left) / scale
    if isinstance(op, ast.Lt | ast.Gt):  # equality violates a strict bound, by the least amount
        v = (left - right) / scale if isinstance(op, ast.Lt) else (right - left) / scale
        return np.where(_CMPOPS[type(op)](left, right), v, np.maximum(v, _STRICT_EPS))
    if isinstance(op, ast.Eq):
        return np.abs(left - right) / scale
    return np.where(left != right, 0.0, 1.0)  # NotEq


def _violation(node: ast.AST, env: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Compare):
        left = _value(node.left, env)
        worst: Any = None  # the first comparison's violation as it is: no max with -inf
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _value(comp, env)
            v = _compare_violation(op, left, right)
            worst = v if worst is None else np.maximum(worst, v)
            left = right
        return worst
    if isinstance(node, ast.BoolOp):
        fn = np.maximum if isinstance(node.op, ast.And) else np.minimum
        return functools.reduce(fn, [_violation(v, env) for v in node.values])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return np.where(_violation(node.operand, env) <= 0, 1.0, 0.0)
    return np.where(np.asarray(_value(node, env)) != 0, 0.0, 1.0)
