"""``dse validate`` reports every problem of a spec in one run, sorted by line (issue 17): a
newcomer fixing a spec should not need one round per validation stage."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.conftest import run_dse

# Ten independent mistakes, one per validation stage and then some: schema (study name, unknown
# field, bad literal, bad import path), ranges, presets (GPU name, technology field), metric
# names, constraint syntax and names, and sampler options; plus a duplicate key.
BAD_SPEC = textwrap.dedent(
    """\
    study: bad seven
    fixed:
      gpu: h100-sxn
      technology: {preset: n4, defect_densty_per_cm2: 0.1}
      workload: {model: llama3-70b, phase: serve}
    space:
      die_area_mm2: {type: float, low: 900, high: 100}
      hbm_stacks_per_die: {type: int, low: 1, high: 8, stepp: 1}
      cluster_size: {type: int, low: 8, high: 4096}
    evaluators:
      mine: not_a_path
    objectives:
      - {metric: cost.usd_per_mtoken, direction: minimize}
      - {metric: perf.tokens_per_joule, direction: maximise}
    constraints:
      - perf.model_fits and
      - perf.pakage_power_w <= 1200
    search: {sampler: nsga2, trials: 50, options: {populaton_size: 10}}
    description: first
    description: second
    """
)

#: (line, field, fragment of the message) for every mistake above.
EXPECTED = [
    (1, "study", "should match pattern"),
    (3, "fixed.gpu", "did you mean 'h100-sxm'"),
    (4, "fixed.technology.defect_densty_per_cm2", "did you mean 'defect_density_per_cm2'"),
    (7, "space.die_area_mm2.low", "must be below high"),
    (8, "space.hbm_stacks_per_die.stepp", "did you mean 'step'"),
    (11, "evaluators.mine", "expected 'module:function'"),
    (13, "objectives.0.metric", "did you mean 'cost.usd_per_mtok'"),
    (14, "objectives.1.direction", "'maximise'"),
    (16, "constraints.0", "cannot parse"),
    (17, "constraints.1", "did you mean 'perf.package_power_w'"),
    (18, "search.options.populaton_size", "unknown option 'populaton_size'"),
    (20, "description", "duplicate key"),
]


def test_validate_reports_every_mistake_in_one_run_sorted_by_line(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(BAD_SPEC)
    res = run_dse("validate", str(spec))
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == len(EXPECTED), res.stderr
    for text, (line, field, fragment) in zip(lines, EXPECTED, strict=True):
        assert text.startswith(f"{spec}:{line}: {field}: "), (text, line, field)
        assert fragment in text, (text, fragment)
    assert not (tmp_path / "studies").exists()


def test_fixing_one_mistake_removes_exactly_its_line(tmp_path: Path) -> None:
    """Each reported problem is independent: fixing the GPU name leaves the other eleven."""
    spec = tmp_path / "bad.yaml"
    spec.write_text(BAD_SPEC.replace("h100-sxn", "h100-sxm"))
    lines = run_dse("validate", str(spec)).stderr.strip().splitlines()
    assert len(lines) == len(EXPECTED) - 1
    assert not any(": fixed.gpu:" in line for line in lines)


def test_no_follow_on_problems_from_a_broken_evaluator(tmp_path: Path) -> None:
    """A metric of an evaluator that failed to load is not reported again as unknown."""
    spec = tmp_path / "ev.yaml"
    spec.write_text(
        textwrap.dedent(
            """\
            study: ev
            evaluators: {mine: no_such_module_xyz:score}
            space: {cluster_size: {type: int, low: 8, high: 64}}
            objectives: [{metric: mine.score, direction: maximize}]
            constraints: [mine.score >= 0]
            """
        )
    )
    res = run_dse("validate", str(spec))
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and ":2: evaluators.mine:" in lines[0], res.stderr
