"""Design parameters the built-in models understand: name, unit, meaning, default.

A design is a flat mapping of these names (each may be a numpy array) plus the nested fixed
context (``technology``, ``workload``). Defaults here are overridden, in order, by the GPU
preset named in ``fixed.gpu``, by explicit ``fixed`` values and by searched parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

LINK_TYPES = ("electrical", "pluggable", "cpo")
"""Scale-up link technologies (the one list; cost, perf, availability and the schemas use it)."""
COOLING = ("air", "liquid")


@dataclass(frozen=True)
class Param:
    unit: str
    description: str
    default: float | int | str | None = None  # None: must come from the GPU preset


PARAMS: dict[str, Param] = {
    "die_area_mm2": Param("mm2", "Area of one compute die"),
    "die_aspect_ratio": Param("1", "Die long edge / short edge (1 = square)", 1.0),
    "dies_per_gpu": Param("dies", "Compute dies in one GPU package", 1),
    "hbm_stacks_per_die": Param("stacks", "HBM stacks attached to each compute die"),
    "hbm_tbps_per_stack": Param("TB/s", "Peak bandwidth of one HBM stack"),
    "hbm_gb_per_stack": Param("GB", "Capacity of one HBM stack"),
    "links_per_gpu": Param("links", "Scale-up links leaving one GPU"),
    "optics_per_link": Param("lanes", "Lanes (optical channels or SerDes) per link"),
    "lane_gbps": Param("Gb/s", "Per-direction data rate of one lane"),
    "link_type": Param("-", "Scale-up link technology: electrical | pluggable | cpo"),
    "clock_ghz": Param("GHz", "Sustained tensor-core clock"),
    "cooling": Param(
        "-", "Cooling of the GPU package: air | liquid (bounds W/mm2 via DVFS)", "air"
    ),
    "scaleup_fabric": Param(
        "-",
        "Scale-up fabric: auto | switched | packet | ocs | direct (auto: switched for "
        "electrical links, technology.optical_fabric for optics)",
        "auto",
    ),
    "cluster_size": Param("GPUs", "GPUs in the cluster", 8),
    "disaggregated": Param(
        "0/1",
        "Serving with separate prefill and decode pools (1) or both on every replica (0); "
        "overrides workload.disaggregated, so a study can search it",
    ),
    "spare_fraction": Param("1", "Hot-spare GPUs as a fraction of the serving GPUs", 0.0),
}
