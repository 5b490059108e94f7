"""Public home of the conformance checks for plug-ins (``from dse.testing import
check_evaluator, check_sampler, check_storage``); the code lives in ``dse.model.testing``
(evaluators), ``dse.search.samplers.testing`` (samplers) and ``dse.search.storage.testing``
(storages). They raise :class:`dse.errors.ConformanceError`."""

from __future__ import annotations

from dse.model.testing import check_evaluator
from dse.search.samplers.testing import check_sampler
from dse.search.storage.testing import check_storage

__all__ = ["check_evaluator", "check_sampler", "check_storage"]
