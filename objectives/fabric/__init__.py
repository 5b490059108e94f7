"""Scale-up fabrics as first-class design choices: topology, cost and power of each.

A design picks ``scaleup_fabric`` (``auto`` follows the link type and
``technology.optical_fabric``):

- ``switched``: a one-tier NVSwitch-like domain; its size is the switch radix at the link rate,
  and for copper links the reach of one baseboard; groups beyond it use the scale-out NICs.
- ``packet``: a rail-optimised non-blocking fat tree; tiers from the switch radix.
- ``ocs``: TPU v4 style: blocks of GPUs wired directly as a torus, optical circuit switches
  only between blocks (wraparound and block-to-block links); rate-agnostic ports, WDM fibres.
- ``direct``: a torus/mesh with no switch at all.

``topology`` gives what the performance model needs per candidate group (bandwidth, latency,
torus dimensions, feasibility), ``cost`` the cluster network bill, ``power`` the per-GPU link
and switch power.
"""

from __future__ import annotations

from objectives.fabric.topology import (
    FABRICS,
    clos_tiers,
    fabric_hw,
    group_links,
    packet_radix,
    resolve_fabric,
    torus_steps,
)

__all__ = [
    "FABRICS",
    "clos_tiers",
    "fabric_hw",
    "group_links",
    "packet_radix",
    "resolve_fabric",
    "torus_steps",
]
