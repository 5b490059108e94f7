"""Public home of the conformance checks for plug-ins (``from dse.testing import
check_evaluator, check_sampler``); the code lives in ``dse.model.testing`` (evaluators) and
``dse.search.testing`` (samplers)."""

from __future__ import annotations

from dse.model.testing import ConformanceError, check_evaluator
from dse.search.testing import check_sampler

__all__ = ["ConformanceError", "check_evaluator", "check_sampler"]
