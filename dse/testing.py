"""Public home of the evaluator conformance check (``from dse.testing import check_evaluator``);
the code lives in ``dse.model.testing``."""

from __future__ import annotations

from dse.model.testing import ConformanceError, check_evaluator

__all__ = ["ConformanceError", "check_evaluator"]
