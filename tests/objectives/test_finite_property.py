"""A randomized property test of the built-in evaluators over every GPU preset, model, phase and
precision (issue 39, finite by construction): every metric of perf, availability and cost (and
of the fleet, on one draw per phase) is finite, with no numpy RuntimeWarning; fractions stay in
[0, 1] and flags in {0, 1}; a design that cannot run is flagged (perf.runnable 0) with the
figures docs/evaluators.md promises; a design with no replica interrupts nothing.

Fixed seed and size (~4 s on one core): every (model, phase) pair once, each with a GPU preset,
a precision and a serving mode (``VARIANTS``) drawn so that every preset, precision and mode
appears, on a batch of random designs
that span what the schema accepts (zero HBM bandwidth, zero links, tiny and huge dies, clocks no
cooler sustains).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from objectives import ContextError, resolve_context
from objectives.availability import METRICS as AVAILABILITY
from objectives.availability import evaluate_availability
from objectives.cost import METRICS as COST
from objectives.cost import evaluate_cost
from objectives.fleet import METRICS as FLEET
from objectives.fleet import evaluate_fleet
from objectives.perf import METRICS as PERF
from objectives.perf import evaluate_perf
from objectives.presets import catalog, search_dirs

SEED = 39
DESIGNS = 24
PHASES = ("serve", "prefill", "decode", "train")
PRECISIONS = ("bf16", "fp8", "fp4")
#: Serving modes, drawn in turn per phase: the default (continuous, batch solved), a pinned
#: batch, the static scheduler, SLOs, poisson arrivals (SLO-solved rate, given rate),
#: disaggregated prefill, and ``disaggregated`` as a design parameter that varies per design.
VARIANTS: dict[str, tuple[tuple[str, dict[str, Any]], ...]] = {
    "serve": (
        ("default", {}),
        ("pinned batch", {"batch": 32}),
        ("static", {"scheduler": "static", "batch": 16}),
        ("slos", {"ttft_slo_s": 1.0, "tpot_slo_s": 0.05}),
        ("poisson", {"arrivals": "poisson", "ttft_slo_s": 2.0}),
        ("poisson at a rate", {"arrivals": "poisson", "arrival_rate_per_s": 1.0, "batch": "auto"}),
        ("disaggregated", {"disaggregated": True}),
        ("disaggregated per design", {}),
    ),
    "prefill": (("default", {}), ("static", {"scheduler": "static", "batch": 16})),
    "decode": (("default", {}), ("pinned batch", {"batch": 32})),
    "train": (("default", {}),),
}
DECLARED = {"perf": PERF, "availability": AVAILABILITY, "cost": COST, "fleet": FLEET}
#: ``memory_used_fraction`` and ``shoreline_used_fraction`` are need / supply ratios whose
#: excess over 1 is what their constraints refuse: dimensionless, but not fractions of a whole.
NEED_OVER_SUPPLY = {"perf.memory_used_fraction", "perf.shoreline_used_fraction"}
#: Every declared metric of unit 1 (utilizations, availabilities, yields, *_fraction) but those.
FRACTIONS = tuple(
    f"{ev}.{k}"
    for ev, metrics in DECLARED.items()
    for k, (unit, _) in metrics.items()
    if unit == "1" and f"{ev}.{k}" not in NEED_OVER_SUPPLY
)
FLAGS = tuple(
    f"{ev}.{k}"
    for ev, metrics in DECLARED.items()
    for k, (unit, _) in metrics.items()
    if unit == "0/1"
)
EVALUATORS = (
    ("perf", evaluate_perf),
    ("availability", evaluate_availability),
    ("cost", evaluate_cost),
)


def _combos() -> Iterator[tuple[str, str, str, str]]:
    """Every (model, phase) pair with a drawn GPU preset and precision; every preset and
    precision appears (a precision a GPU or phase refuses is drawn again)."""
    cat = catalog(search_dirs(None))
    rng = np.random.default_rng(SEED)
    gpus = sorted(cat.gpus)
    pairs = list(itertools.product(sorted(cat.models), PHASES))
    for k, (model, phase) in enumerate(pairs):
        gpu = gpus[k % len(gpus)] if k < len(gpus) else gpus[int(rng.integers(len(gpus)))]
        yield gpu, model, phase, PRECISIONS[k % len(PRECISIONS)]


def _designs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = DESIGNS
    return {
        "die_area_mm2": rng.uniform(20.0, 1700.0, n),
        "hbm_stacks_per_die": rng.integers(0, 13, n),
        "hbm_tbps_per_stack": rng.choice([0.0, 0.5, 1.2, 3.0], n),
        "links_per_gpu": rng.integers(0, 40, n),
        "optics_per_link": rng.integers(1, 9, n),
        "cluster_size": rng.integers(1, 100_000, n),
        "clock_ghz": rng.uniform(0.05, 4.0, n),
        "spare_fraction": rng.uniform(0.0, 0.5, n),
        "dies_per_gpu": rng.integers(1, 5, n),
        "lane_gbps": rng.uniform(1.0, 400.0, n),
    }


Results = list[tuple[tuple[str, ...], dict[str, np.ndarray]]]


def _evaluate(
    design: dict[str, Any], evaluators: tuple[tuple[str, Callable[..., Any]], ...]
) -> dict[str, np.ndarray]:
    """Every metric of ``design``, prefixed; a numpy RuntimeWarning fails the test."""
    out: dict[str, np.ndarray] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for name, fn in evaluators:
            for key, v in fn(dict(design, _memo={})).items():
                out[f"{name}.{key}"] = np.broadcast_to(np.asarray(v, float), DESIGNS)
    return out


def _metrics() -> Iterator[tuple[tuple[str, ...], dict[str, np.ndarray]]]:
    rng = np.random.default_rng(SEED)
    for k, (gpu, model, phase, precision) in enumerate(_combos()):
        variant, options = VARIANTS[phase][k // len(PHASES) % len(VARIANTS[phase])]
        for prec in (precision, "fp8"):  # fp4 refused (no FP4 cores, or training): fp8
            try:
                workload = {"model": model, "phase": phase, "precision": prec, **options}
                context = resolve_context({"gpu": gpu, "workload": workload})
                design = {**context, **_designs(rng)}
                if variant == "disaggregated per design":
                    design["disaggregated"] = rng.integers(0, 2, DESIGNS).astype(float)
                out = _evaluate(design, EVALUATORS)
            except ContextError:
                continue
            yield (gpu, model, phase, prec, variant), out
            break


@pytest.fixture(scope="module")
def results() -> Results:
    found = list(_metrics())
    assert len(found) == len(list(_combos()))
    return found


@pytest.fixture(scope="module")
def fleet_results() -> Results:
    """The fleet (three models of its own mix) on one random batch per phase and GPU preset."""
    gpus = sorted(catalog(search_dirs(None)).gpus)
    rng = np.random.default_rng(SEED + 1)
    found: Results = []
    for k, phase in enumerate(PHASES):
        gpu = gpus[k * 5 % len(gpus)]
        workload = {"model": "llama3-70b", "phase": phase, "precision": "fp8"}
        context = resolve_context({"gpu": gpu, "workload": workload})
        found.append(
            ((gpu, phase), _evaluate({**context, **_designs(rng)}, (("fleet", evaluate_fleet),)))
        )
    return found


def test_the_sample_covers_every_preset_model_phase_and_precision(results: Results) -> None:
    cat = catalog(search_dirs(None))
    seen = [set(x) for x in zip(*(combo for combo, _ in results), strict=True)]
    assert seen[0] == set(cat.gpus) and seen[1] == set(cat.models)
    assert seen[2] == set(PHASES) and seen[3] == set(PRECISIONS)
    assert seen[4] == {name for modes in VARIANTS.values() for name, _ in modes}


def test_the_sample_holds_designs_that_cannot_run(results: Results) -> None:
    """The batch reaches every reason a design cannot run, and designs that do."""
    out = {k: np.concatenate([o[k] for _, o in results]) for k in results[0][1]}
    assert np.any(out["perf.coolable"] == 0)  # no clock cools it
    assert np.any((out["perf.hbm_tbps_per_gpu"] == 0) & (out["perf.model_fits"] == 1))
    assert np.any(out["perf.model_fits"] == 0)  # no replica
    assert np.any(out["perf.runnable"] == 1)


def test_every_metric_is_finite(results: Results, fleet_results: Results) -> None:
    bad = {
        key: combo
        for combo, out in results + fleet_results
        for key, v in out.items()
        if not np.all(np.isfinite(v))
    }
    assert not bad, bad


def test_every_declared_metric_is_returned(results: Results, fleet_results: Results) -> None:
    for combo, out in results[:1] + fleet_results[:1]:
        names = {key.split(".")[0] for key in out}
        declared = {f"{ev}.{k}" for ev in names for k in DECLARED[ev]}
        assert declared == set(out), combo


def test_fractions_stay_between_0_and_1_and_flags_are_0_or_1(
    results: Results, fleet_results: Results
) -> None:
    assert {"perf.hbm_utilization", "fleet.stranded_hbm_fraction", "cost.die_yield"} <= set(
        FRACTIONS
    )
    for combo, out in results + fleet_results:
        for key in FRACTIONS:
            if key in out:
                v = out[key]
                assert np.all((v >= 0.0) & (v <= 1.0)), (combo, key, v.min(), v.max())
        for key in FLAGS:
            if key in out:
                assert np.all((out[key] == 0.0) | (out[key] == 1.0)), (combo, key)


def test_a_design_that_cannot_run_follows_the_convention(results: Results) -> None:
    """docs/evaluators.md: no replica serves, rates and utilizations are 0, a time that never
    ends is the lifetime, per-token costs are priced on one token per lifetime; a design that
    runs serves tokens."""
    for combo, out in results:
        stalled = out["perf.runnable"] == 0
        for key in ("tokens_per_s", "tokens_per_joule", "mfu", "compute_utilization"):
            assert np.all(out[f"perf.{key}"][stalled] == 0.0), (combo, key)
        assert np.all(out["availability.delivered_tokens_per_joule"][stalled] == 0.0), combo
        assert np.all(out["perf.replicas"][stalled] == 0.0), combo
        assert np.all(out["perf.runnable"] <= out["perf.coolable"] * out["perf.model_fits"])
        no_clock = out["perf.coolable"] == 0
        assert np.all(out["perf.clock_eff_ghz"][no_clock] == 0.0), combo
        tco = out["cost.tco_usd"][stalled]
        assert np.all(out["cost.usd_per_mtok"][stalled] >= tco * 1e6 * (1 - 1e-12)), combo
        runs = ~stalled
        assert np.all(out["perf.tokens_per_s"][runs] > 0.0), combo
        assert np.all(out["perf.step_s"][runs] > 0.0), combo


def test_a_design_with_no_replica_interrupts_nothing(results: Results) -> None:
    for combo, out in results:
        none = out["perf.replicas"] == 0
        assert np.all(out["availability.interruptions_per_day"][none] == 0.0), combo
