"""The GPU package as one object read from the design once (objectives.package.Package): its
parts equal the per-question functions, by hand for a bridged two-die package, and the cost
lines given a package are the ones that read it themselves."""

from __future__ import annotations

import numpy as np
import pytest

from objectives.cost.gpu import gpu_lines, silicon_lines
from objectives.package import (
    COWOS_L,
    Package,
    base_die_w,
    bridges,
    d2d_edge_mm,
    d2d_w,
    hbm_spec,
    hbm_stack_fits,
    interposer_tech,
)
from objectives.presets import resolve_context


def _batch() -> dict:
    d = resolve_context({"gpu": "h100-sxm", "cluster_size": 64})
    d.update(
        dies_per_gpu=np.array([1.0, 2.0, 2.0, 4.0]),
        hbm_stacks_per_die=np.array([5.0, 4.0, 4.0, 2.0]),
        packaging=np.array(["cowos-s", "cowos-l", "cowos-l", "organic"]),
        hbm_generation=np.array(["hbm3", "hbm3e", "auto", "hbm4"]),
        base_dies_per_gpu=np.array([0.0, 0.0, 1.0, 2.0]),
        base_die_area_mm2=np.array([0.0, 0.0, 400.0, 300.0]),
        d2d_tbps=np.array([0.0, 10.0, 5.0, 2.5]),
    )
    return d


def test_parts_equal_the_functions_of_one_question() -> None:
    d = _batch()
    p = Package.of(d)
    stacks = d["dies_per_gpu"] * d["hbm_stacks_per_die"]
    np.testing.assert_array_equal(p.stacks, stacks)
    for k, v in hbm_spec(d, tuple(p.hbm)).items():
        np.testing.assert_array_equal(p.hbm[k], v)
    np.testing.assert_array_equal(p.hbm_fits, hbm_stack_fits(d, p.hbm))
    ip = interposer_tech(d)
    for f in ("code", "max_mm2", "wafer_cost_usd", "bridge_usd", "bridge_bond_yield"):
        np.testing.assert_array_equal(getattr(p.interposer, f), getattr(ip, f))
    np.testing.assert_array_equal(p.bridges, bridges(d, stacks))
    np.testing.assert_array_equal(p.d2d_w, d2d_w(d))
    np.testing.assert_array_equal(p.d2d_edge_mm, d2d_edge_mm(d))
    np.testing.assert_array_equal(p.base_die_w, base_die_w(d))
    assert p.stacked


def test_a_bridged_two_die_package_by_hand() -> None:
    # CoWoS-L, two compute dies with four stacks each: one bridge under each of the 8 stacks
    # and one between the two dies; 10 TB/s of die-to-die links at the node's pJ/bit.
    p = Package.of(_batch())
    assert int(p.interposer.code[1]) == COWOS_L
    assert p.bridges[1] == 8 + 1
    # stacked on one base die: the bridges join stacks and base dies (one: none between)
    assert p.bridges[2] == 8 + 0
    pj = float(resolve_context({"gpu": "h100-sxm"})["technology"]["d2d_pj_per_bit"])
    assert p.d2d_w[1] == pytest.approx(10.0 * 8e12 * pj * 1e-12, rel=1e-15)


def test_cost_lines_given_the_package_are_the_ones_read_alone() -> None:
    d = _batch()
    si = silicon_lines(d)
    alone = gpu_lines(d, si)
    given = gpu_lines(d, si, Package.of(d))
    for k, v in alone.items():
        np.testing.assert_array_equal(given[k], v)
