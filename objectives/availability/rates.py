"""Per-GPU failure rates from the design's components, calibrated on Llama 3 (preset comments).

Every rate is in FIT (failures per 1e9 hours) per GPU. Hardware failures need a repair (or a
hot-spare swap); software failures are cleared by restarting the replica.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import tech, value
from objectives.errors import unknown_name
from objectives.params import LINK_TYPES
from objectives.units import FIT_PER_HOUR

# Components that need a repair; "software" is the only restart-only class.
HARDWARE = ("die_logic", "sram", "system_processor", "hbm", "links", "package", "host", "network")


def lane_fit(design: Mapping[str, Any]) -> np.ndarray:
    """FIT of one scale-up lane, by link technology.

    Optical lanes carry their transmit laser (shared by several lanes in CPO), per-lane driver/
    TIA/photodiode and, for pluggables, a share of the retiming DSP; electrical lanes are SerDes
    plus the GPU's share of the copper fabric.
    """
    kind = np.asarray(design["link_type"])
    bad = ~np.isin(kind, LINK_TYPES)
    if bad.any():
        raise unknown_name("link_type", kind[bad].ravel()[0], LINK_TYPES, what="link type")
    laser = tech(design, "laser_fit")
    electronics = tech(design, "optical_lane_electronics_fit")
    pluggable = (
        laser / tech(design, "pluggable_lanes_per_laser")
        + electronics
        + tech(design, "pluggable_dsp_fit_per_lane")
    )
    cpo = laser / tech(design, "cpo_lanes_per_laser") + electronics
    return np.select(
        [kind == "electrical", kind == "pluggable"],
        [tech(design, "electrical_lane_fit"), pluggable],
        cpo,
    )


def links_fit(design: Mapping[str, Any]) -> np.ndarray:
    """FIT of a GPU's scale-up links, with optional lane sparing.

    Without spares (``spare_lanes_per_link`` s = 0) any lane failure interrupts: links x m x
    lambda for m active lanes per link. With s spares a link interrupts only when s + 1 of its
    m + s lanes are down at once, i.e. s more fail within the repair time of the first:
    rate ~= C(m+s, s+1) lambda^(s+1) MTTR^s per link (independent failures, MTTR << 1/lambda).
    """
    m = value(design, "optics_per_link")
    s = np.round(tech(design, "spare_lanes_per_link"))
    links = value(design, "links_per_gpu")
    one = lane_fit(design)
    if not np.any(s > 0):
        return links * m * one
    lam = one * FIT_PER_HOUR  # per lane-hour
    mttr = tech(design, "repair_mttr_h")
    k = s + 1
    ways = np.ones(np.broadcast(m, s).shape)
    for i in range(1, int(np.max(k)) + 1):  # C(m+s, k) = prod (m+s-k+i)/i, i <= k
        ways = ways * np.where(i <= k, (m + s - k + i) / i, 1.0)
    spared = ways * lam ** (s + 1) * mttr**s / FIT_PER_HOUR
    return links * np.where(s > 0, spared, m * one)


def component_fit(design: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """FIT per GPU of each component class (see the preset for which Llama 3 row sets which)."""
    area = value(design, "die_area_mm2")
    dies = value(design, "dies_per_gpu")
    silicon = area * dies
    # Host and scale-out network are provisioned per unit of compute, so a GPU carries the
    # share of an H100's host/network in proportion to its compute silicon.
    compute_share = silicon / tech(design, "reliability_reference_die_area_mm2")
    return {
        "die_logic": tech(design, "die_logic_fit_per_mm2") * silicon,
        "sram": tech(design, "sram_fit_per_mm2") * silicon,
        "system_processor": tech(design, "gpu_system_processor_fit_per_die") * dies,
        "hbm": tech(design, "hbm_fit_per_stack") * value(design, "hbm_stacks_per_die") * dies,
        "links": links_fit(design) * np.ones_like(silicon),
        "package": tech(design, "package_fit_per_gpu") * np.ones_like(silicon),
        "host": tech(design, "host_fit_per_reference_gpu") * compute_share,
        "network": tech(design, "network_fit_per_reference_gpu") * compute_share,
        # Software faults hit a host's processes (driver, runtime, collective library); hosts
        # are provisioned per unit of compute, like the host hardware.
        "software": tech(design, "software_fit_per_reference_gpu") * compute_share,
    }


def gpu_rates_per_hour(design: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(hardware, software) failure rates of one GPU, per hour."""
    fit = component_fit(design)
    hardware = sum(fit[k] for k in HARDWARE)
    return hardware * FIT_PER_HOUR, fit["software"] * FIT_PER_HOUR
