"""litegpu-dse engine: declarative design-space exploration on Optuna.

Generic: knows specs, evaluators, studies and fronts, nothing about the domain it explores.
The domain
models are found through the ``dse.evaluators`` entry-point group like any user's evaluator.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]

#: The other top-level packages of this distribution: found anywhere but beside ``dse``, they
#: are someone's file of the same name (an ``objectives.py`` in the working folder, which
#: ``python -c`` and ``python -m`` put first on the path) and would break the engine with an
#: unrelated error much later; said at once, in one line, instead.
_SIBLINGS = ("objectives",)


def _check_siblings() -> None:
    import os
    from importlib.util import find_spec

    home = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for name in _SIBLINGS:
        try:  # an imported module's own spec, else where an import would find it
            origin = getattr(find_spec(name), "origin", None)
        except (ImportError, ValueError):
            continue
        if not origin:
            continue
        where = os.path.dirname(os.path.abspath(origin))
        if os.path.basename(origin) == "__init__.py":
            where = os.path.dirname(where)
        if os.path.realpath(where) != os.path.realpath(home):
            raise ImportError(
                f"{origin} shadows the package {name!r} that litegpu-dse installs beside "
                f"{os.path.join(home, 'dse')}: rename it, or run from another folder"
            )


_check_siblings()
