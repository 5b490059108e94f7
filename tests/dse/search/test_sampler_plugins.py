"""Samplers plug in like evaluators: the built-ins pass the conformance check through the
``dse.samplers`` entry points, and a sampler from a package outside litegpu-dse (tests/plugins,
on PYTHONPATH) runs studies end to end, by name and by import path."""

from __future__ import annotations

import importlib.util

import optuna
import pytest

from dse.errors import ConformanceError
from dse.search.samplers.plugin import Sampler
from dse.spec.schema import installed_samplers
from dse.testing import check_sampler
from tests.conftest import ROOT

PLUGINS = ROOT / "tests" / "plugins"
BUILTINS = ("gp", "grid", "nsga2", "nsga3", "random", "tpe")


def test_the_built_ins_are_registered_as_entry_points() -> None:
    assert set(BUILTINS) <= set(installed_samplers())


@pytest.mark.parametrize("name", [n for n in BUILTINS if n != "gp"])
def test_every_built_in_passes_the_conformance_check(name: str) -> None:
    plugin = check_sampler(name)
    assert plugin.independent == (name in ("random", "grid"))


def test_gp_passes_or_names_what_to_install() -> None:
    if all(importlib.util.find_spec(m) for m in ("torch", "scipy")):
        check_sampler("gp", trials=12)
    else:
        with pytest.raises(ConformanceError, match=r"pip install 'litegpu-dse\[gp\]'"):
            check_sampler("gp")


def test_the_check_catches_a_sampler_that_breaks_the_contract() -> None:
    # TPE learns from results: claimed independent, its batch differs from one-at-a-time asks.
    with pytest.raises(ConformanceError, match="a batch must propose what one-at-a-time"):
        check_sampler(Sampler(build=optuna.samplers.TPESampler, independent=True))
    with pytest.raises(ConformanceError, match="gave the same proposals"):
        check_sampler(lambda *, seed: optuna.samplers.RandomSampler(seed=0))
    with pytest.raises(ConformanceError, match="not an Optuna sampler"):
        check_sampler(lambda *, seed: object())
    with pytest.raises(ConformanceError, match="unknown option 'populaton_size'"):
        check_sampler("nsga2", options={"populaton_size": 8})


def test_the_outside_sampler_passes_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(PLUGINS))
    from dse_outside import LHS, latin  # type: ignore[import-not-found]

    assert check_sampler(LHS, options={"round_size": 8}).independent
    check_sampler(latin)


ZDT1 = ROOT / "spaces" / "zdt1"


def test_the_pymoo_sampler_passes_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ZDT1))
    from pymoo_sampler import pymoo_sampler  # type: ignore[import-not-found]

    for algorithm in ("nsga2", "smsemoa"):
        check_sampler(pymoo_sampler, options={"algorithm": algorithm, "pop_size": 8})
    with pytest.raises(ConformanceError, match="unknown pymoo algorithm 'nsga4'"):
        check_sampler(pymoo_sampler, options={"algorithm": "nsga4"})
