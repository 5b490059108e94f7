"""A user's own evaluator, named in spec.yaml by import path and reusing the built-ins.

It needs nothing from the engine: a function of the design mapping that returns metrics.
The optional attributes say what the metrics mean, that it broadcasts over arrays, and which
evaluators' metrics it consumes (``needs``): the engine runs those first, once per design, and
passes their metrics as keyword arguments named after them. Called from Python without them,
it computes them itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from objectives.cost import evaluate_cost
from objectives.perf import evaluate_perf

# Carbon intensity of grid electricity: 0.37 kg CO2e/kWh is the 2023 world average
# (Ember, Global Electricity Review 2024). Change it to your site's figure.
GRID_KG_CO2_PER_KWH = 0.37
J_PER_KWH = 3.6e6  # 1 kWh = 1000 W x 3600 s
TOKENS_PER_MTOK = 1e6


def kg_co2_per_mtok(facility_power_w: Any, tokens_per_s: Any) -> Any:
    """W / (tokens/s) is J per token; x 1e6 tokens / 3.6e6 J per kWh x kg CO2e per kWh."""
    joules_per_token = facility_power_w / np.maximum(tokens_per_s, 1e-9)
    return joules_per_token * TOKENS_PER_MTOK / J_PER_KWH * GRID_KG_CO2_PER_KWH


def carbon_per_mtok(
    design: dict[str, Any], *, perf: Any = None, cost: Any = None
) -> dict[str, np.ndarray]:
    """Operational carbon per million output tokens, and capex per token/s of capacity."""
    if perf is None:
        perf = evaluate_perf(design)
    if cost is None:
        cost = evaluate_cost(design, perf=perf)
    return {
        "kg_co2_per_mtok": kg_co2_per_mtok(perf["facility_power_w"], perf["tokens_per_s"]),
        "capex_usd_per_tok_s": cost["cluster_capex_usd"] / np.maximum(perf["tokens_per_s"], 1e-9),
    }


carbon_per_mtok.metrics = {  # type: ignore[attr-defined]
    "kg_co2_per_mtok": ("kg CO2e/Mtok", "Operational emissions per million output tokens"),
    "capex_usd_per_tok_s": ("USD/(tok/s)", "Cluster capex per output token/s of capacity"),
}
carbon_per_mtok.vectorized = True  # type: ignore[attr-defined]
carbon_per_mtok.needs = ("perf", "cost")  # type: ignore[attr-defined]
