"""The GPU module around the package, and test by tester time, as functions of numpy arrays.

A GPU is sold as a module (SXM, OAM): the package on a board that carries its power delivery
(multiphase regulators, one smart power stage per phase), and a cold plate or heat sink on top.
Power delivery scales with the package's current, not its watts: a lower core voltage needs
more phases. The board holds the regulators and the package's substrate footprint; its price
follows area and layer count. The cold plate or heat sink follows the heat it removes, so a
quarter-power package takes a quarter of the plate. Test is tester time: insertions x minutes
per insertion, which grow with the silicon tested, at a tester's hourly rate.
Constants: objectives/presets/technology/module.yaml.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from objectives.cost.silicon import MM2_PER_CM2

__all__ = ["ModuleCost", "module_cost", "cost_of_test_time"]

MM2_PER_M2 = 1.0e6


def cost_of_test_time(
    logic_area_mm2: ArrayLike,
    *,
    insertions: ArrayLike,
    minutes_per_insertion_cm2: ArrayLike,
    usd_per_hour: ArrayLike,
) -> tuple[np.ndarray, np.ndarray]:
    """(tester minutes, USD) of final and system-level test of one package: every insertion
    exercises all the logic silicon (compute and base dies), so time scales with its area."""
    minutes = (
        np.asarray(insertions, float)
        * np.asarray(minutes_per_insertion_cm2, float)
        * np.asarray(logic_area_mm2, float)
        / MM2_PER_CM2
    )
    return minutes, minutes / 60.0 * np.asarray(usd_per_hour, float)


@dataclass(frozen=True)
class ModuleCost:
    """Per-GPU module lines (USD) with the quantities they are priced from."""

    power_stages: np.ndarray
    power_delivery_usd: np.ndarray
    pcb_mm2: np.ndarray
    pcb_usd: np.ndarray
    thermal_usd: np.ndarray

    @property
    def total_usd(self) -> np.ndarray:
        return self.power_delivery_usd + self.pcb_usd + self.thermal_usd


def module_cost(
    *,
    package_power_w: ArrayLike,
    substrate_mm2: ArrayLike,
    is_liquid: ArrayLike,
    module_core_voltage_v: ArrayLike,
    module_amps_per_power_stage: ArrayLike,
    module_usd_per_power_stage: ArrayLike,
    module_pcb_mm2_per_amp: ArrayLike,
    module_pcb_layers: ArrayLike,
    module_pcb_usd_per_m2_layer: ArrayLike,
    thermal_liquid_usd_per_kw: ArrayLike,
    thermal_air_usd_per_kw: ArrayLike,
) -> ModuleCost:
    """Power delivery, board and cold plate/heat sink of one GPU module at its peak power.

    stages = ceil(current / amps per stage), current = peak power / core voltage;
    board area = current x mm2 per ampere (regulators, inductors, capacitors) + the package's
    substrate footprint, priced per m2 and layer; thermal = peak kW x the cooling type's rate.
    """
    watts = np.asarray(package_power_w, float)
    amps = watts / np.asarray(module_core_voltage_v, float)
    stages = np.ceil(amps / np.asarray(module_amps_per_power_stage, float) - 1e-9)
    power = stages * np.asarray(module_usd_per_power_stage, float)
    pcb_mm2 = amps * np.asarray(module_pcb_mm2_per_amp, float) + np.asarray(substrate_mm2, float)
    pcb = (
        pcb_mm2
        / MM2_PER_M2
        * np.asarray(module_pcb_layers, float)
        * np.asarray(module_pcb_usd_per_m2_layer, float)
    )
    rate = np.where(
        np.asarray(is_liquid, bool),
        np.asarray(thermal_liquid_usd_per_kw, float),
        np.asarray(thermal_air_usd_per_kw, float),
    )
    thermal = watts / 1000.0 * rate
    return ModuleCost(stages, power, pcb_mm2, pcb, thermal)
