"""The cost waterfall of one design: where the money goes, line by line, with subtotals.

Engine-agnostic: ``dse evaluate --breakdown`` prints what this returns for any evaluator that
carries a ``waterfall`` attribute.
"""

from __future__ import annotations

from collections.abc import Mapping

Line = tuple[str, str, float]  # (section, label, USD); a label starting with "=" is a subtotal


def cost_waterfall(m: Mapping[str, float]) -> list[Line]:
    """Lines of the per-GPU bill, the cluster capex and the TCO from unprefixed cost metrics."""
    n = m["installed_gpus"]
    gpu = "per GPU (manufacturing)"
    pkg = "per GPU (package detail)"
    mod = "per GPU (module)"
    cap = f"cluster capex ({n:,.0f} installed GPUs)"
    tco = "lifetime TCO"
    return [
        (gpu, "compute dies (known good)", m["silicon_cost_usd"]),
        (gpu, "HBM stacks", m["hbm_cost_usd"]),
        (gpu, "scale-up optics", m["optics_cost_usd"]),
        (gpu, "package", m["package_cost_usd"]),
        (gpu, "= GPU manufacturing cost", m["gpu_cost_usd"]),
        (pkg, "interposer", m["interposer_cost_usd"]),
        (pkg, "substrate", m["substrate_cost_usd"]),
        (pkg, "assembly", m["assembly_cost_usd"]),
        (pkg, "final test", m["final_test_cost_usd"]),
        (pkg, "assembly scrap", m["assembly_scrap_usd"]),
        (pkg, "= package", m["package_cost_usd"]),
        (mod, "GPU package", m["gpu_cost_usd"]),
        (mod, "power delivery", m["power_delivery_cost_usd"]),
        (mod, "module board", m["module_board_cost_usd"]),
        (mod, "cold plate / heat sink", m["thermal_cost_usd"]),
        (mod, "= GPU module", m["gpu_module_cost_usd"]),
        (cap, "GPUs at manufacturing cost", n * m["gpu_module_cost_usd"]),
        (cap, "vendor margin", n * m["gpu_margin_usd"]),
        (cap, "host and facility share", n * m["system_share_usd"]),
        (cap, "network", m["network_cost_usd"]),
        # a memory pool over optics (objectives/perf/pool.py), listed only where there is one
        *(
            [(cap, "memory pool", m["memory_pool_cost_usd"])]
            if m.get("memory_pool_cost_usd")
            else []
        ),
        (cap, "= cluster capex", m["cluster_capex_usd"]),
        (tco, "capex", m["cluster_capex_usd"]),
        (tco, "energy", m["energy_cost_usd"]),
        (tco, "maintenance", m["maintenance_cost_usd"]),
        (tco, "= TCO", m["tco_usd"]),
    ]
