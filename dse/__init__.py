"""litegpu-dse engine: declarative design-space exploration on Optuna.

Generic: knows specs, evaluators, studies and fronts, nothing about the domain it explores.
The domain
models are found through the ``dse.evaluators`` entry-point group like any user's evaluator.
"""

from __future__ import annotations

__version__ = "0.1.0"
