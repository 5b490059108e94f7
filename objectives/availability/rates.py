"""Per-GPU failure rates from the design's components, by the kind of fleet they run in.

Every rate is in FIT (failures per 1e9 hours) per GPU. Hardware failures need a repair (or a
hot-spare swap); software failures are cleared by restarting the replica. The component rates
of the preset describe a dedicated, burned-in training cluster (Llama 3's 16k-H100 run);
``technology.fleet_kind`` scales each component class to another kind of fleet, each kind's
scales from its own published study (preset comments): ``research`` a shared research cluster
(Meta RSC-1, Kokolis et al. 2025), ``cloud`` a shared academic/cloud GPU service (NCSA Delta,
Cui et al. 2025).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from objectives._evaluator import select, tech, value
from objectives.choices import check_in
from objectives.params import LINK_TYPES
from objectives.units import FIT_PER_HOUR

# Components that need a repair; "software" is the only restart-only class.
HARDWARE = ("die_logic", "sram", "system_processor", "hbm", "links", "package", "host", "network")
FLEET_KINDS = ("dedicated", "research", "cloud")
#: Component classes a fleet kind scales together: technology.fleet_<kind>_<class>_fit_scale.
FLEET_CLASSES = {
    "gpu": ("die_logic", "sram", "system_processor", "links", "package"),
    "hbm": ("hbm",),
    "host_network": ("host", "network"),
    "software": ("software",),
}


def fleet_scales(design: Mapping[str, Any]) -> dict[str, Any]:
    """Factor on each component's FIT for the design's ``technology.fleet_kind`` (1 for
    ``dedicated``, the kind the component rates were measured in)."""
    kind = np.asarray(design["technology"].get("fleet_kind", "dedicated"))
    check_in(kind, FLEET_KINDS, "technology.fleet_kind", "fleet kind")
    out: dict[str, Any] = {}
    for cls, members in FLEET_CLASSES.items():
        if kind.ndim == 0:
            k = str(kind)
            f = 1.0 if k == "dedicated" else tech(design, f"fleet_{k}_{cls}_fit_scale")
        else:
            others = [k for k in FLEET_KINDS if k != "dedicated"]
            f = select(
                [kind == k for k in others],
                [tech(design, f"fleet_{k}_{cls}_fit_scale") for k in others],
                1.0,
            )
        for m in members:
            out[m] = f
    return out


def lane_fit(design: Mapping[str, Any]) -> np.ndarray:
    """FIT of one scale-up lane, by link technology.

    Optical lanes carry their transmit laser (shared by several lanes in CPO), per-lane driver/
    TIA/photodiode and, for pluggables, a share of the retiming DSP; electrical lanes are SerDes
    plus the GPU's share of the copper fabric.
    """
    kind = np.asarray(design["link_type"])
    check_in(kind, LINK_TYPES, "link_type", "link type")
    laser = tech(design, "laser_fit")
    electronics = tech(design, "optical_lane_electronics_fit")
    pluggable = (
        laser / tech(design, "pluggable_lanes_per_laser")
        + electronics
        + tech(design, "pluggable_dsp_fit_per_lane")
    )
    cpo = laser / tech(design, "cpo_lanes_per_laser") + electronics
    return select(
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
    """FIT per GPU of each component class in the design's kind of fleet (see the preset for
    which Llama 3 row sets which, and which study scales them for the other kinds)."""
    scale = fleet_scales(design)
    fit = _dedicated_fit(design)
    if all(isinstance(f, float) and f == 1.0 for f in scale.values()):
        return fit  # a dedicated fleet: the rates as measured (each times 1, exactly)
    return {k: v * scale[k] for k, v in fit.items()}


def _dedicated_fit(design: Mapping[str, Any]) -> dict[str, np.ndarray]:
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
    hardware = np.zeros(())
    for k in HARDWARE:  # the components' shapes broadcast (some are per design, some not)
        hardware = hardware + fit[k]
    return hardware * FIT_PER_HOUR, fit["software"] * FIT_PER_HOUR
