"""Public home of the conformance checks for plug-ins (``from dse.testing import
check_evaluator, check_sampler, check_storage``); the code lives in ``dse.model.testing``
(evaluators), ``dse.search.testing`` (samplers) and ``dse.search.storage.testing`` (storages)."""

from __future__ import annotations

from dse.model.testing import ConformanceError, check_evaluator
from dse.search.storage.testing import check_storage
from dse.search.testing import check_sampler

__all__ = ["ConformanceError", "check_evaluator", "check_sampler", "check_storage"]
