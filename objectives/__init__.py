"""Domain models of an AI cluster: cost, performance and power, availability.

Pure numpy functions of a design mapping; they know nothing of Optuna or the ``dse`` engine, so
they can be imported and composed directly::

    from objectives import resolve_context
    from objectives.cost import evaluate_cost
    d = resolve_context({"gpu": "h100-sxm", "cluster_size": 1024})
    evaluate_cost(d)["usd_per_mtok"]
"""

from __future__ import annotations

from objectives.errors import ContextError
from objectives.params import PARAMS
from objectives.presets import resolve_context

__all__ = ["PARAMS", "ContextError", "resolve_context"]
