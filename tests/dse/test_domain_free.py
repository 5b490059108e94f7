"""``dse/`` is the generic engine and knows nothing about GPUs (issue 16): no domain word in
its code, strings, comments or docstrings. The domain's knowledge reaches the engine only
through the evaluator contract (e.g. the ``assumptions`` hook ``dse sensitivity`` swings)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from dse import api
from dse.inspect.sensitivity import assumptions_of, assumptions_source, sensitivity
from tests.conftest import ROOT

#: Words of the GPU-cluster domain (objectives/, spaces/), matched as whole words, any case.
DOMAIN_WORDS = [
    "gpu",
    "gpus",
    "lite-gpu",
    "hbm",
    "die_area_mm2",
    "technology",
    "wafer",
    "reticle",
    "interposer",
    "shoreline",
    "optics",
    "cpo",
    "h100",
    "h100-sxm",
    "b200",
    "llama3-70b",
    "n4",
    "n5",
    "tokens",
    "workload",
    "defect_density_per_cm2",
    "cluster_size",
    "usd",
    "litegpu",  # the example space; the distribution name litegpu-dse is not a whole word
]
_PATTERN = re.compile(
    r"(?<![\w-])(" + "|".join(re.escape(w) for w in DOMAIN_WORDS) + r")(?![\w-])",
    re.IGNORECASE,
)


def domain_words(text: str) -> list[str]:
    return [m.group(0) for m in _PATTERN.finditer(text)]


def test_the_checker_finds_domain_words_and_allows_the_distribution_name() -> None:
    assert domain_words("the GPU's HBM, technology.wafer_cost_usd; n4") == [
        "GPU",
        "HBM",
        "technology",
        "n4",
    ]
    assert domain_words("pip install 'litegpu-dse[gp]'; spaces/litegpu.yaml") == ["litegpu"]
    assert domain_words("dies, n45, diet, gpu_count, tokens_per_s") == []


def test_dse_contains_no_domain_word() -> None:
    found = {
        f"{path.relative_to(ROOT).as_posix()}:{n}": words
        for path in sorted((ROOT / "dse").rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if (words := domain_words(line))
    }
    assert found == {}


def test_default_sensitivity_swings_what_the_evaluators_assumptions_hook_lists(
    tmp_path: Path,
) -> None:
    (tmp_path / "lin.py").write_text(
        textwrap.dedent(
            """
            def lin(design):
                return {"y": design["scale"] * design["x"] + design["offset"]}

            lin.metrics = {"y": ("1", "scale * x + offset")}
            lin.params = ("x", "scale", "offset")
            lin.assumptions = lambda context: {"scale": context["scale"], "offset": 0.0}
            """
        )
    )
    (tmp_path / "spec.yaml").write_text(
        textwrap.dedent(
            """
            study: lin
            fixed: {scale: 2.0, offset: 0.0}
            space: {x: {type: float, low: 0, high: 1}}
            evaluators: {lin: "lin:lin"}
            objectives: [{metric: lin.y, direction: minimize}]
            search: {sampler: random, trials: 2, seed: 0}
            """
        )
    )
    model, params = api.load_for_evaluate(tmp_path / "spec.yaml", ["x=0.5"])
    rows = [(u.name, lo, hi) for u, lo, hi in assumptions_of(model)]
    assert rows == [("scale", pytest.approx(1.6), pytest.approx(2.4))]  # zero is not swung
    assert assumptions_source(model) == "scale +/-20 %"
    (swing,) = sensitivity(model, params)["lin.y"]
    assert (swing.metric_at_low, swing.nominal, swing.metric_at_high) == pytest.approx(
        (0.8, 1.0, 1.2)
    )


def test_an_evaluator_without_the_hook_has_no_default_assumptions() -> None:
    model = api.load(ROOT / "spaces" / "zdt1" / "spec.yaml")
    assert assumptions_of(model) == []
    assert assumptions_source(model) == "no constants +/-20 %"


def test_the_built_in_evaluators_list_the_technology_constants() -> None:
    model = api.load(ROOT / "spaces" / "h100.yaml")
    names = {u.name for u, _, _ in assumptions_of(model)}
    numeric = {
        f"technology.{k}"
        for k, v in model.context["technology"].items()
        if isinstance(v, int | float) and not isinstance(v, bool) and v != 0
    }
    # every swung name is a numeric constant; definitions (interface widths) are not swung
    assert names < numeric and "technology.defect_density_per_cm2" in names
    assert "technology.hbm3_interface_bits" not in names
    assert assumptions_source(model) == "technology +/-20 %"
