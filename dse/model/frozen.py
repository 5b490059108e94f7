"""A design an evaluator cannot change for anyone else.

Every evaluator call gets a design whose top level is its own dict (it may add keys) and whose
nested values (the fixed context's mappings) and arrays are read-only: the fixed values are
frozen once per model, the searched arrays become read-only views per call, both O(1) per
call where a deep copy of a resolved preset costs ~0.6 ms. An evaluator that writes into them
raises (its trial fails with the reason) instead of changing the design of every later trial.
"""

from __future__ import annotations

from typing import Any, NoReturn

import numpy as np

MESSAGE = "design values are read-only (copy one to change it, e.g. dict(design[key]))"


def _refuse(*_: Any, **__: Any) -> NoReturn:
    raise TypeError(MESSAGE)


class FrozenDict(dict):  # type: ignore[type-arg]
    """A dict nobody can change; still a dict for readers (``isinstance``, ``**``, JSON)."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[Any, ...]:  # pickle and copy without __setitem__
        return (FrozenDict, (dict(self),))


class FrozenList(list):  # type: ignore[type-arg]
    """A list nobody can change."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


def freeze(value: Any) -> Any:
    """``value`` with every nested dict, list and array read-only (arrays as views)."""
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return FrozenList(freeze(v) for v in value)
    if isinstance(value, np.ndarray):
        return read_only(value)
    return value


def read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (the caller's array stays writable)."""
    view = array.view()
    view.flags.writeable = False
    return view
