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
HBM_GENERATIONS = ("auto", "hbm2e", "hbm3", "hbm3e", "hbm3e-12hi", "hbm4")
"""HBM generations a design may declare (objectives/presets/technology/package.yaml)."""
HBM_KEY_PREFIX = {
    "hbm2e": "hbm2e",
    "hbm3": "hbm3",
    "hbm3e": "hbm3e",
    "hbm3e-12hi": "hbm3e12",
    "hbm4": "hbm4",
}
"""Key prefix of each HBM generation's constants in the technology table."""
HBM_AUTO_ORDER = ("hbm3", "hbm3e", "hbm3e-12hi", "hbm4")
"""What ``hbm_generation: auto`` picks from, in order: the first whose max_tbps_per_stack and
max_gb_per_stack both cover the stack (a 36 GB stack at 1.2 TB/s is 12-high HBM3e)."""
PACKAGINGS = ("cowos-s", "cowos-l", "organic")
"""2.5D packaging technologies (objectives/presets/technology/package.yaml)."""
VENDORS = ("nvidia", "nvidia-hopper", "amd", "google")
"""GPU vendors, or a vendor's product line that analysts put at its own margin (NVIDIA's Hopper
parts), each with a cited gross margin (objectives/presets/technology/market.yaml)."""
PRICE_BASES = ("cost", "market")
MEMORY_POOLS = ("none", "weights", "kv", "both")
"""What a design keeps in a DRAM pool reached over optics (objectives/perf/pool.py)."""
"""What a buyer pays for hardware: manufacturing cost, or each vendor's margin on top."""


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
    "hbm_generation": Param(
        "-",
        "HBM generation of the stacks: auto | hbm2e | hbm3 | hbm3e | hbm3e-12hi | hbm4 (prices, "
        "footprint and PHY beachfront; auto: technology.hbm_generation, by stack bandwidth)",
        "auto",
    ),
    "packaging": Param(
        "-",
        "2.5D packaging technology: cowos-s (silicon interposer) | cowos-l (RDL interposer "
        "with silicon bridges) | organic (no interposer, no HBM)",
        "cowos-s",
    ),
    "base_dies_per_gpu": Param(
        "dies", "Base (IO) dies the compute dies are 3D-stacked on (SoIC); 0 = none", 0
    ),
    "base_die_area_mm2": Param("mm2", "Area of one base (IO) die", 0.0),
    "d2d_tbps": Param(
        "TB/s", "Die-to-die bandwidth between the compute dies of one package, both ways", 0.0
    ),
    "links_per_gpu": Param("links", "Scale-up links leaving one GPU"),
    "optics_per_link": Param("lanes", "Lanes (optical channels or SerDes) per link"),
    "lane_gbps": Param("Gb/s", "Per-direction data rate of one lane"),
    "link_type": Param("-", "Scale-up link technology: electrical | pluggable | cpo"),
    "clock_ghz": Param("GHz", "Sustained tensor-core clock"),
    "tensor_density_factor": Param(
        "1",
        "Dense BF16 tensor FLOPs per mm2 per clock of the architecture, relative to "
        "technology.tensor_tflops_per_mm2_ghz_bf16 (calibrated on H100)",
        1.0,
    ),
    "fp4_flops_multiplier": Param(
        "1", "Dense FP4 (NVFP4/MXFP4) tensor FLOPs / dense BF16; 0 = no FP4 tensor cores", 0.0
    ),
    "compute_power_factor": Param(
        "1",
        "Logic power per mm2 at a given voltage and clock, relative to the technology node's "
        "(compute_dynamic/static_w_per_mm2, calibrated on H100)",
        1.0,
    ),
    "cooling": Param(
        "-", "Cooling of the GPU package: air | liquid (bounds W/mm2 via DVFS)", "air"
    ),
    "power_limit_w": Param(
        "W",
        "Package power limit an operator sets (nvidia-smi -pl, rocm-smi --setpoweroverdrive): "
        "DVFS lowers the clock until full-load package power fits it; 0 = none (the TDP the "
        "cooling allows)",
        0.0,
    ),
    "scaleup_fabric": Param(
        "-",
        "Scale-up fabric: auto | switched | packet | ocs | direct | rack | mesh (auto: switched "
        "for electrical links, technology.optical_fabric for optics; rack: switched, its copper "
        "domain one liquid-cooled rack of technology.rack_silicon_mm2; mesh: switched, its "
        "GPUs linked to each other with no switch to buy, as AMD Infinity Fabric)",
        "auto",
    ),
    "scaleup_domain_gpus": Param(
        "GPUs",
        "GPUs one switched copper scale-up domain holds (HGX 8, NVL72 72); 0 = as many as "
        "technology.switched_domain_silicon_mm2 of compute silicon and the switch radix allow",
        0,
    ),
    "cluster_size": Param("GPUs", "GPUs in the cluster", 8),
    "disaggregated": Param(
        "0/1",
        "Serving with separate prefill and decode pools (1) or both on every replica (0); "
        "overrides workload.disaggregated, so a study can search it",
    ),
    "prefill_gpus": Param(
        "GPUs",
        "With workload.prefill_pool/decode_pool: GPUs of the prefill pool, the rest of "
        "cluster_size decoding; overrides the pools' gpus, so a study can search the ratio "
        "(0: as the workload says, auto = balanced)",
    ),
    "spare_fraction": Param("1", "Hot-spare GPUs as a fraction of the serving GPUs", 0.0),
    "test_insertions": Param(
        "insertions",
        "Passes of the package through final and system-level test (tester time = insertions x "
        "minutes per insertion and cm2 of logic); 0 = technology.test_insertions, the count "
        "of today's leading-edge parts",
        0.0,
    ),
    "host_usd_per_gpu": Param(
        "USD",
        "Host share of one GPU as its platform is built (CPUs, DRAM, storage, NICs, chassis, "
        "PSUs of its node, per GPU): a shipped product's own bill; 0 = sized by the GPU's power "
        "at technology.host_usd_per_gpu_kw, as a designed GPU is",
        0.0,
    ),
    "spare_silicon_fraction": Param(
        "1",
        "More hot spares, as a share of the serving GPUs' compute silicon: floor(share x "
        "cluster_size) GPUs, so a spare never adds silicon beyond the share and a small die buys "
        "more, smaller spares with it (objectives/availability/spares.py)",
        0.0,
    ),
    "memory_pool": Param(
        "-",
        "What a shared DRAM pool reached over CPO holds: none | weights (one copy for every "
        "replica, streamed each step) | kv (the KV cache) | both (objectives/perf/pool.py)",
        "none",
    ),
    "memory_pool_gb_per_gpu": Param(
        "GB", "DRAM of the memory pool per serving GPU (the cluster's pool over its GPUs)", 0.0
    ),
    "memory_pool_tbps_per_gpu": Param(
        "TB/s",
        "Optical bandwidth from one GPU to the memory pool, per direction (its CPO engines "
        "take die edge: shoreline_used_fraction)",
        0.0,
    ),
    "vendor": Param(
        "-",
        "Vendor (or vendor's product line) whose gross margin prices the GPU at "
        "price_basis=market: nvidia | nvidia-hopper | amd | google "
        "(technology.gpu_gross_margin_<vendor>, '-' read as '_')",
        "nvidia",
    ),
    "price_basis": Param(
        "-",
        "What a buyer pays for hardware: cost (manufacturing cost, no vendor margin) | market "
        "(the GPU vendor's cited gross margin, and each class of network gear's)",
        "cost",
    ),
}
