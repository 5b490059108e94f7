"""The bad-spec corpus: every field of the spec, broken one way at a time, through the real CLI.

Each case is one mistake in an otherwise valid spec. Both ``dse validate`` and ``dse run`` must
answer with exactly one line ``FILE:LINE: field: problem``, exit 2, no traceback, and create
nothing (no study folder, no journal, no stray file). The expected line is computed from where
the mistake was written, independently of the tool.

Every case runs through the CLI's entry point in this process (tests/cli/inprocess.py), which
is cheap; a sample spread over the sections also runs as real ``dse`` processes, to show that a
fresh process answers the same way.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli.inprocess import run_in_process
from tests.conftest import ROOT

GOOD = textwrap.dedent(
    """\
    study: corpus
    description: every case breaks this spec in one place
    fixed:
      gpu: h100-sxm
      technology: n4
      cluster_size: 64
      workload: {model: llama3-70b, phase: serve, batch: 64}
    space:
      die_area_mm2: {type: float, low: 100, high: 858}
      hbm_stacks_per_die: {type: int, low: 1, high: 8}
      optics_per_link: {type: categorical, choices: [1, 2, 4, 8]}
    evaluators:
      mine: corpus_eval:f
    objectives:
      - {metric: cost.usd_per_mtok, direction: minimize}
      - {metric: perf.tokens_per_joule, direction: maximize, threshold: 1.0}
    constraints:
      - perf.model_fits
    search: {sampler: nsga2, trials: 10, seed: 0, options: {population_size: 4}}
    """
)

#: Files beside every case's spec: a user's evaluator modules (good and bad) and two files a
#: storage URL must not write into.
FILES = {
    "corpus_eval.py": (
        "def f(design):\n    return {'x': 1.0}\n\n"
        "f.params = ('weight',)  # declared, so a typo in space is an error\n\n"
        "def probe_fails(design):\n    raise RuntimeError('license server down')\n\n"
        "NOT_CALLABLE = 3\n"
    ),
    "sysexit_mod.py": "raise SystemExit(3)\n",
    "raising_mod.py": "import no_such_dependency_of_a_user_model\n",
    "notes.txt": "not a journal\n",
}
FOLDERS = ("afolder",)


@dataclass(frozen=True)
class Case:
    name: str
    text: str  # the whole broken spec
    line: int  # expected line
    field: str  # expected field path ("" for problems of the whole file)
    fragment: str  # expected part of the message


def _line_of(text: str, pos: int) -> int:
    return text[:pos].count("\n") + 1


def edit(
    name: str,
    old: str,
    new: str,
    field: str,
    fragment: str,
    *,
    line: int | None = None,
    at: str | None = None,
) -> Case:
    """``GOOD`` with ``old`` replaced by ``new``. The expected line is where the change starts
    (the first character of ``new`` that differs from ``old``, blanks skipped), or where ``at``
    first occurs in the result, or ``line``."""
    assert old in GOOD, old
    pos = GOOD.index(old)
    text = GOOD.replace(old, new, 1)
    if line is None:
        if at is not None:
            line = _line_of(text, text.index(at))
        else:
            same = len(os.path.commonprefix([old, new]))
            rest = new[same:]
            line = _line_of(text, pos + same + len(rest) - len(rest.lstrip()))
    return Case(name, text, line, field, fragment)


def add(name: str, extra: str, field: str, fragment: str) -> Case:
    """``GOOD`` with ``extra`` appended; the problem is on its first line."""
    return Case(name, GOOD + extra, _line_of(GOOD + extra, len(GOOD)), field, fragment)


def whole(name: str, text: str, line: int, field: str, fragment: str) -> Case:
    return Case(name, text, line, field, fragment)


def _search(new: str) -> str:
    return f"search: {{{new}}}"


SEARCH = "search: {sampler: nsga2, trials: 10, seed: 0, options: {population_size: 4}}"
BOMB = "\n".join(
    ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    + ["study: *a9", ""]
)

CASES: list[Case] = [
    # --- study ----------------------------------------------------------------------------------
    edit("study_escapes", "study: corpus", "study: ../evil", "study", "pattern"),
    edit("study_empty", "study: corpus", "study: ''", "study", "pattern"),
    edit("study_number", "study: corpus", "study: 5", "study", "valid string"),
    edit("study_list", "study: corpus", "study: [a, b]", "study", "valid string"),
    edit("study_too_long", "study: corpus", "study: " + "s" * 101, "study", "pattern"),
    edit("study_space", "study: corpus", "study: my study", "study", "pattern"),
    edit("study_missing", "study: corpus\n", "", "study", "required field is missing", line=1),
    # --- description ----------------------------------------------------------------------------
    edit(
        "description_list",
        "description: every",
        "description: [1, 2]\n#",
        "description",
        "valid string",
    ),
    edit(
        "description_mapping",
        "description: every",
        "description: {a: 1}\n#",
        "description",
        "valid string",
    ),
    # --- fixed: presets -------------------------------------------------------------------------
    edit(
        "fixed_not_mapping",
        "fixed:\n  gpu: h100-sxm\n  technology: n4\n  cluster_size: 64\n"
        "  workload: {model: llama3-70b, phase: serve, batch: 64}\n",
        "fixed: [1, 2]\n",
        "fixed",
        "valid dictionary",
    ),
    edit("gpu_typo", "gpu: h100-sxm", "gpu: h100-sxn", "fixed.gpu", "did you mean 'h100-sxm'"),
    edit("gpu_number", "gpu: h100-sxm", "gpu: 5", "fixed.gpu", "expected a GPU preset name"),
    edit(
        "gpu_unknown_field",
        "gpu: h100-sxm",
        "gpu: {preset: h100-sxm, die_aera_mm2: 800}",
        "fixed.gpu.die_aera_mm2",
        "did you mean 'die_area_mm2'",
    ),
    edit(
        "technology_unknown",
        "technology: n4",
        "technology: n5x",
        "fixed.technology",
        "valid choices",
    ),
    edit(
        "defect_density_negative",
        "technology: n4",
        "technology: {preset: n4, defect_density_per_cm2: -0.1}",
        "fixed.technology.defect_density_per_cm2",
        "greater than or equal to 0",
    ),
    edit(
        "technology_typo",
        "technology: n4",
        "technology: {preset: n4, defect_densty_per_cm2: 0.1}",
        "fixed.technology.defect_densty_per_cm2",
        "did you mean 'defect_density_per_cm2'",
    ),
    edit(
        "wafer_sort_cost_negative",
        "technology: n4",
        "technology: {preset: n4, wafer_sort_cost_usd: -5}",
        "fixed.technology.wafer_sort_cost_usd",
        "greater than or equal to 0",
    ),
    edit(
        "critical_area_fraction_above_1",
        "technology: n4",
        "technology: {preset: n4, die_critical_area_fraction: 1.5}",
        "fixed.technology.die_critical_area_fraction",
        "less than or equal to 1",
    ),
    edit(
        "hbm_price_text",
        "technology: n4",
        "technology: {preset: n4, hbm3_usd_per_gb: cheap}",
        "fixed.technology.hbm3_usd_per_gb",
        "valid number",
    ),
    edit(
        "yield_model_unknown",
        "technology: n4",
        "technology: {preset: n4, yield_model: optimistic}",
        "fixed.technology.yield_model",
        "negative_binomial",
    ),
    # --- fixed: design parameters ---------------------------------------------------------------
    edit("cluster_zero", "cluster_size: 64", "cluster_size: 0", "fixed.cluster_size", "whole"),
    edit(
        "cluster_negative", "cluster_size: 64", "cluster_size: -8", "fixed.cluster_size", "whole"
    ),
    edit(
        "cluster_fraction", "cluster_size: 64", "cluster_size: 2.5", "fixed.cluster_size", "whole"
    ),
    edit(
        "cluster_bool",
        "cluster_size: 64",
        "cluster_size: true",
        "fixed.cluster_size",
        "whole number",
    ),
    edit("cluster_text", "cluster_size: 64", "cluster_size: abc", "fixed.cluster_size", "abc"),
    edit(
        "spare_fraction_negative",
        "cluster_size: 64",
        "cluster_size: 64\n  spare_fraction: -0.5",
        "fixed.spare_fraction",
        "greater than or equal to 0",
    ),
    edit(
        "links_negative",
        "cluster_size: 64",
        "cluster_size: 64\n  links_per_gpu: -1",
        "fixed.links_per_gpu",
        "greater than or equal to 0",
    ),
    edit(
        "aspect_below_1",
        "cluster_size: 64",
        "cluster_size: 64\n  die_aspect_ratio: 0.5",
        "fixed.die_aspect_ratio",
        "greater than or equal to 1",
    ),
    edit(
        "link_type_unknown",
        "cluster_size: 64",
        "cluster_size: 64\n  link_type: fibre",
        "fixed.link_type",
        "cpo",
    ),
    edit(
        "cooling_unknown",
        "cluster_size: 64",
        "cluster_size: 64\n  cooling: water",
        "fixed.cooling",
        "liquid",
    ),
    edit(
        "clock_negative",
        "cluster_size: 64",
        "cluster_size: 64\n  clock_ghz: -1",
        "fixed.clock_ghz",
        "greater than 0",
    ),
    edit(
        "lane_rate_zero",
        "cluster_size: 64",
        "cluster_size: 64\n  lane_gbps: 0",
        "fixed.lane_gbps",
        "greater than 0",
    ),
    edit(
        "dies_zero",
        "cluster_size: 64",
        "cluster_size: 64\n  dies_per_gpu: 0",
        "fixed.dies_per_gpu",
        "greater than or equal to 1",
    ),
    edit(
        "disaggregated_two",
        "cluster_size: 64",
        "cluster_size: 64\n  disaggregated: 2",
        "fixed.disaggregated",
        "0 or 1",
    ),
    edit(
        "fabric_unknown",
        "cluster_size: 64",
        "cluster_size: 64\n  scaleup_fabric: token-ring",
        "fixed.scaleup_fabric",
        "switched",
    ),
    edit(
        "hbm_capacity_negative",
        "cluster_size: 64",
        "cluster_size: 64\n  hbm_gb_per_stack: -24",
        "fixed.hbm_gb_per_stack",
        "greater than or equal to 0",
    ),
    edit(
        "hbm_bandwidth_negative",
        "cluster_size: 64",
        "cluster_size: 64\n  hbm_tbps_per_stack: -1",
        "fixed.hbm_tbps_per_stack",
        "greater than or equal to 0",
    ),
    edit(
        "clock_infinite",
        "cluster_size: 64",
        "cluster_size: 64\n  clock_ghz: .inf",
        "fixed.clock_ghz",
        "finite",
    ),
    edit(
        "fixed_typo",
        "cluster_size: 64",
        "clustr_size: 64",
        "fixed.clustr_size",
        "did you mean 'cluster_size'",
    ),
    # --- fixed: workload ------------------------------------------------------------------------
    edit(
        "model_typo",
        "model: llama3-70b",
        "model: llama3-70x",
        "fixed.workload.model",
        "did you mean 'llama3-70b'",
    ),
    edit(
        "batch_negative",
        "batch: 64}",
        "batch: -4}",
        "fixed.workload.batch",
        "greater than or equal to 1",
    ),
    edit("phase_unknown", "phase: serve", "phase: infer", "fixed.workload.phase", "decode"),
    edit(
        "precision_unknown",
        "batch: 64}",
        "batch: 64, precision: fp4}",
        "fixed.workload.precision",
        "bf16",
    ),
    edit(
        "input_tokens_zero",
        "batch: 64}",
        "batch: 64, input_tokens: 0}",
        "fixed.workload.input_tokens",
        "greater than or equal to 1",
    ),
    edit(
        "output_tokens_negative",
        "batch: 64}",
        "batch: 64, output_tokens: -1}",
        "fixed.workload.output_tokens",
        "greater than or equal to 1",
    ),
    edit(
        "scheduler_unknown",
        "batch: 64}",
        "batch: 64, scheduler: dynamic}",
        "fixed.workload.scheduler",
        "continuous",
    ),
    edit(
        "kv_precision_unknown",
        "batch: 64}",
        "batch: 64, kv_precision: int4}",
        "fixed.workload.kv_precision",
        "fp8",
    ),
    edit(
        "max_batch_zero",
        "batch: 64}",
        "batch: 64, max_batch: 0}",
        "fixed.workload.max_batch",
        "greater than or equal to 1",
    ),
    edit(
        "ttft_slo_negative",
        "batch: 64}",
        "batch: 64, ttft_slo_s: -1}",
        "fixed.workload.ttft_slo_s",
        "greater than",
    ),
    edit(
        "latency_statistic_unknown",
        "batch: 64}",
        "batch: 64, latency_statistic: p50}",
        "fixed.workload.latency_statistic",
        "valid choices: percentile, mean",
    ),
    edit(
        "arrival_rate_zero",
        "batch: 64}",
        "batch: 64, arrival_rate_per_s: 0}",
        "fixed.workload.arrival_rate_per_s",
        "greater than",
    ),
    edit(
        "workload_typo",
        "batch: 64}",
        "batch: 64, batchsize: 3}",
        "fixed.workload.batchsize",
        "did you mean",
    ),
    edit("batch_text", "batch: 64}", "batch: lots}", "fixed.workload.batch", "whole number"),
    # --- space ----------------------------------------------------------------------------------
    edit(
        "space_not_mapping",
        "space:\n  die_area_mm2: {type: float, low: 100, high: 858}\n"
        "  hbm_stacks_per_die: {type: int, low: 1, high: 8}\n"
        "  optics_per_link: {type: categorical, choices: [1, 2, 4, 8]}\n",
        "space: [a, b]\n",
        "space",
        "valid dictionary",
    ),
    edit(
        "param_type_unknown",
        "{type: int, low: 1, high: 8}",
        "{type: integer, low: 1, high: 8}",
        "space.hbm_stacks_per_die",
        "categorical, float, int",
        at="hbm_stacks",
    ),
    edit(
        "param_type_missing",
        "{type: int, low: 1, high: 8}",
        "{low: 1, high: 8}",
        "space.hbm_stacks_per_die",
        "categorical, float, int",
        at="hbm_stacks",
    ),
    edit(
        "param_not_mapping",
        "{type: int, low: 1, high: 8}",
        "8",
        "space.hbm_stacks_per_die",
        "valid dictionary",
        at="hbm_stacks",
    ),
    edit(
        "float_low_above_high",
        "low: 100, high: 858",
        "low: 900, high: 858",
        "space.die_area_mm2.low",
        "must be below high",
        at="die_area",
    ),
    edit(
        "float_low_equals_high",
        "low: 100, high: 858",
        "low: 858, high: 858",
        "space.die_area_mm2.low",
        "must be below high",
        at="die_area",
    ),
    edit(
        "float_low_infinite",
        "low: 100, high: 858",
        "low: -.inf, high: 858",
        "space.die_area_mm2.low",
        "finite",
        at="die_area",
    ),
    edit(
        "float_high_nan",
        "low: 100, high: 858",
        "low: 100, high: .nan",
        "space.die_area_mm2.low",
        "finite",
        at="die_area",
    ),
    edit(
        "float_low_bool",
        "low: 100, high: 858",
        "low: true, high: 858",
        "space.die_area_mm2.low",
        "boolean",
        at="die_area",
    ),
    edit(
        "float_low_text",
        "low: 100, high: 858",
        "low: small, high: 858",
        "space.die_area_mm2.low",
        "valid number",
        at="die_area",
    ),
    edit(
        "float_step_zero",
        "low: 100, high: 858}",
        "low: 100, high: 858, step: 0}",
        "space.die_area_mm2.step",
        "greater than 0",
        at="die_area",
    ),
    edit(
        "float_step_negative",
        "low: 100, high: 858}",
        "low: 100, high: 858, step: -2}",
        "space.die_area_mm2.step",
        "greater than 0",
        at="die_area",
    ),
    edit(
        "float_step_too_big",
        "low: 100, high: 858}",
        "low: 100, high: 858, step: 1000}",
        "space.die_area_mm2.step",
        "larger than high - low",
        at="die_area",
    ),
    edit(
        "float_step_with_log",
        "low: 100, high: 858}",
        "low: 100, high: 858, step: 2, log: true}",
        "space.die_area_mm2.step",
        "log",
        at="die_area",
    ),
    edit(
        "float_log_not_bool",
        "low: 100, high: 858}",
        "low: 100, high: 858, log: maybe}",
        "space.die_area_mm2.log",
        "valid boolean",
        at="die_area",
    ),
    edit(
        "float_unknown_key",
        "low: 100, high: 858}",
        "low: 100, high: 858, lg: true}",
        "space.die_area_mm2.lg",
        "did you mean 'log'",
        at="die_area",
    ),
    edit(
        "float_high_missing",
        "low: 100, high: 858}",
        "low: 100}",
        "space.die_area_mm2.high",
        "required",
        at="die_area",
    ),
    edit(
        "float_low_impossible",
        "low: 100, high: 858",
        "low: -100, high: 858",
        "space.die_area_mm2.low",
        "not a possible die_area_mm2",
        at="die_area",
    ),
    edit(
        "int_low_fraction",
        "{type: int, low: 1, high: 8}",
        "{type: int, low: 1.5, high: 8}",
        "space.hbm_stacks_per_die.low",
        "integer",
        at="hbm_stacks",
    ),
    edit(
        "int_step_zero",
        "{type: int, low: 1, high: 8}",
        "{type: int, low: 1, high: 8, step: 0}",
        "space.hbm_stacks_per_die.step",
        "greater than or equal to 1",
        at="hbm_stacks",
    ),
    edit(
        "int_step_bool",
        "{type: int, low: 1, high: 8}",
        "{type: int, low: 1, high: 8, step: true}",
        "space.hbm_stacks_per_die.step",
        "boolean",
        at="hbm_stacks",
    ),
    edit(
        "int_log_low_zero",
        "{type: int, low: 1, high: 8}",
        "{type: int, low: 0, high: 8, log: true}",
        "space.hbm_stacks_per_die.log",
        "low > 0",
        at="hbm_stacks",
    ),
    edit(
        "int_log_with_step",
        "{type: int, low: 1, high: 8}",
        "{type: int, low: 1, high: 8, step: 2, log: true}",
        "space.hbm_stacks_per_die.step",
        "step must be 1",
        at="hbm_stacks",
    ),
    edit(
        "int_unknown_key",
        "{type: int, low: 1, high: 8}",
        "{type: int, low: 1, high: 8, stepp: 1}",
        "space.hbm_stacks_per_die.stepp",
        "did you mean 'step'",
        at="hbm_stacks",
    ),
    edit(
        "int_low_impossible",
        "{type: int, low: 1, high: 8}",
        "{type: int, low: -1, high: 8}",
        "space.hbm_stacks_per_die.low",
        "not a possible hbm_stacks_per_die",
        at="hbm_stacks",
    ),
    edit(
        "categorical_empty",
        "choices: [1, 2, 4, 8]",
        "choices: []",
        "space.optics_per_link.choices",
        "at least 1",
        at="optics",
    ),
    edit(
        "categorical_not_distinct",
        "choices: [1, 2, 4, 8]",
        "choices: [1, 1.0, 2]",
        "space.optics_per_link.choices",
        "distinct",
        at="optics",
    ),
    edit(
        "categorical_same_strings",
        "choices: [1, 2, 4, 8]}",
        "choices: [1, 2, 4, 8]}\n  link_type: {type: categorical, choices: [cpo, cpo]}",
        "space.link_type.choices",
        "distinct",
    ),
    edit(
        "categorical_mapping_choice",
        "choices: [1, 2, 4, 8]",
        "choices: [1, {a: 1}]",
        "space.optics_per_link.choices.1",
        "a choice must be a number, a string or true/false",
        at="optics",
    ),
    edit(
        "categorical_impossible_choice",
        "choices: [1, 2, 4, 8]",
        "choices: [0, 2, 4]",
        "space.optics_per_link.choices",
        "greater than or equal to 1",
        at="optics",
    ),
    edit(
        "categorical_not_list",
        "choices: [1, 2, 4, 8]",
        "choices: 4",
        "space.optics_per_link.choices",
        "valid list",
        at="optics",
    ),
    edit(
        "categorical_with_low",
        "choices: [1, 2, 4, 8]",
        "choices: [1, 2], low: 1",
        "space.optics_per_link.low",
        "valid fields: choices, type",
        at="optics",
    ),
    edit(
        "link_type_choice_impossible",
        "choices: [1, 2, 4, 8]}",
        "choices: [1, 2, 4, 8]}\n  link_type: {type: categorical, choices: [cpo, fibre]}",
        "space.link_type.choices",
        "choice 'fibre'",
        at="link_type",
    ),
    edit(
        "spare_fraction_range_impossible",
        "choices: [1, 2, 4, 8]}",
        "choices: [1, 2, 4, 8]}\n  spare_fraction: {type: float, low: -0.5, high: 0.5}",
        "space.spare_fraction.low",
        "greater than or equal to 0",
        at="spare_fraction",
    ),
    edit(
        "whole_number_searched_as_float",
        "choices: [1, 2, 4, 8]}",
        "choices: [1, 2, 4, 8]}\n  dies_per_gpu: {type: float, low: 1, high: 4}",
        "space.dies_per_gpu.type",
        "search it as type: int",
        at="dies_per_gpu",
    ),
    edit(
        "cluster_range_impossible",
        "choices: [1, 2, 4, 8]}",
        "choices: [1, 2, 4, 8]}\n  cluster_size: {type: int, low: 0, high: 64}",
        "space.cluster_size.low",
        "not a possible cluster_size",
        at="cluster_size: {",
    ),
    edit(
        "param_name_typo",
        "die_area_mm2: {",
        "die_aera_mm2: {",
        "space.die_aera_mm2",
        "did you mean 'die_area_mm2'",
    ),
    # --- evaluators -----------------------------------------------------------------------------
    edit(
        "evaluator_module_missing",
        "mine: corpus_eval:f",
        "mine: no_such_mod:f",
        "evaluators.mine",
        "cannot import module 'no_such_mod'",
    ),
    edit(
        "evaluator_not_a_path",
        "mine: corpus_eval:f",
        "mine: justamodule",
        "evaluators.mine",
        "module:function",
    ),
    edit(
        "evaluator_attribute_missing",
        "mine: corpus_eval:f",
        "mine: corpus_eval:ff",
        "evaluators.mine",
        "did you mean 'f'",
    ),
    edit(
        "evaluator_system_exit",
        "mine: corpus_eval:f",
        "mine: sysexit_mod:f",
        "evaluators.mine",
        "raised SystemExit",
    ),
    edit(
        "evaluator_import_fails",
        "mine: corpus_eval:f",
        "mine: raising_mod:f",
        "evaluators.mine",
        "no_such_dependency_of_a_user_model",
    ),
    edit(
        "evaluator_shadows_builtin",
        "mine: corpus_eval:f",
        "cost: corpus_eval:f",
        "evaluators.cost",
        "taken by an installed evaluator",
    ),
    edit(
        "evaluator_not_callable",
        "mine: corpus_eval:f",
        "mine: corpus_eval:NOT_CALLABLE",
        "evaluators.mine",
        "not callable",
    ),
    edit(
        "evaluator_probe_raises",
        "mine: corpus_eval:f",
        "mine: corpus_eval:probe_fails",
        "evaluators.mine",
        "license server down",
    ),
    edit(
        "evaluator_path_number",
        "mine: corpus_eval:f",
        "mine: 5",
        "evaluators.mine",
        "valid string",
    ),
    edit(
        "evaluators_unknown_name",
        "evaluators:\n  mine: corpus_eval:f\n",
        "evaluators: [nosuch]\n",
        "evaluators.nosuch",
        "no installed evaluator 'nosuch'",
    ),
    # --- objectives -----------------------------------------------------------------------------
    edit(
        "objectives_empty",
        "objectives:\n  - {metric: cost.usd_per_mtok, direction: minimize}\n"
        "  - {metric: perf.tokens_per_joule, direction: maximize, threshold: 1.0}\n",
        "objectives: []\n",
        "objectives",
        "at least 1",
    ),
    edit(
        "objectives_not_list",
        "objectives:\n  - {metric: cost.usd_per_mtok, direction: minimize}"
        "\n  - {metric: perf.tokens_per_joule, direction: maximize, threshold: 1.0}\n",
        "objectives: {metric: cost.usd_per_mtok}\n",
        "objectives",
        "valid list",
    ),
    edit(
        "metric_typo",
        "cost.usd_per_mtok,",
        "cost.usd_per_mtk,",
        "objectives.0.metric",
        "did you mean 'cost.usd_per_mtok'",
    ),
    edit(
        "metric_of_unknown_evaluator",
        "cost.usd_per_mtok,",
        "costs.usd_per_mtok,",
        "objectives.0.metric",
        "unknown metric",
    ),
    edit(
        "direction_typo",
        "direction: minimize",
        "direction: minimise",
        "objectives.0.direction",
        "'minimize' or 'maximize'",
    ),
    edit("direction_missing", ", direction: minimize}", "}", "objectives.0.direction", "required"),
    edit("threshold_nan", "threshold: 1.0", "threshold: .nan", "objectives.1.threshold", "finite"),
    edit(
        "threshold_infinite",
        "threshold: 1.0",
        "threshold: -.inf",
        "objectives.1.threshold",
        "finite",
    ),
    edit(
        "threshold_text",
        "threshold: 1.0",
        "threshold: high",
        "objectives.1.threshold",
        "valid number",
    ),
    edit(
        "threshold_bool", "threshold: 1.0", "threshold: true", "objectives.1.threshold", "boolean"
    ),
    edit(
        "objective_duplicate",
        "perf.tokens_per_joule, direction: maximize",
        "cost.usd_per_mtok, direction: maximize",
        "objectives.1.metric",
        "duplicate objective",
    ),
    edit(
        "objective_unknown_key",
        "direction: minimize}",
        "direction: minimize, treshold: 3}",
        "objectives.0.treshold",
        "did you mean 'threshold'",
    ),
    # --- constraints ----------------------------------------------------------------------------
    edit(
        "constraint_unknown_name",
        "  - perf.model_fits",
        "  - perf.model_fit",
        "constraints.0",
        "did you mean 'perf.model_fits'",
    ),
    edit(
        "constraint_call",
        "  - perf.model_fits",
        "  - __import__('os')",
        "constraints.0",
        "function call is not allowed",
    ),
    edit(
        "constraint_power_tower",
        "  - perf.model_fits",
        "  - 9 ** 9 ** 9 ** 9 <= 1",
        "constraints.0",
        "exponent",
    ),
    edit(
        "constraint_too_long",
        "  - perf.model_fits",
        "  - " + " + ".join(["perf.model_fits"] * 3000) + " >= 1",
        "constraints.0",
        "characters long",
    ),
    edit(
        "constraint_too_many_terms",
        "  - perf.model_fits",
        "  - " + " + ".join(["x"] * 400) + " >= 1",
        "constraints.0",
        "more than 500 terms",
    ),
    edit(
        "constraint_too_deep",
        "  - perf.model_fits",
        "  - " + "-" * 150 + "perf.model_fits",
        "constraints.0",
        "nested too deeply",
    ),
    edit(
        "constraint_syntax",
        "  - perf.model_fits",
        "  - perf.model_fits and",
        "constraints.0",
        "cannot parse",
    ),
    edit(
        "constraint_string_constant",
        "  - perf.model_fits",
        "  - perf.model_fits == 'yes'",
        "constraints.0",
        "only numbers",
    ),
    edit(
        "constraint_subscript",
        "  - perf.model_fits",
        "  - perf.model_fits[0]",
        "constraints.0",
        "subscript is not allowed",
    ),
    edit(
        "constraint_not_string",
        "  - perf.model_fits",
        "  - [perf.model_fits]",
        "constraints.0",
        "valid string",
    ),
    edit(
        "constraints_not_list",
        "constraints:\n  - perf.model_fits\n",
        "constraints: perf.model_fits\n",
        "constraints",
        "valid list",
    ),
    edit(
        "constraints_too_many",
        "constraints:\n  - perf.model_fits\n",
        "constraints: [" + ", ".join(["perf.model_fits"] * 101) + "]\n",
        "constraints",
        "at most 100",
    ),
    # --- search ---------------------------------------------------------------------------------
    edit("sampler_unknown", "sampler: nsga2", "sampler: nsga4", "search.sampler", "nsga2"),
    edit("trials_text", "trials: 10", "trials: ten", "search.trials", "integer"),
    edit("trials_bool", "trials: 10", "trials: true", "search.trials", "boolean"),
    edit("trials_zero", "trials: 10", "trials: 0", "search.trials", "greater than or equal to 1"),
    edit("trials_negative", "trials: 10", "trials: -5", "search.trials", "greater than or equal"),
    edit("trials_fraction", "trials: 10", "trials: 1.5", "search.trials", "integer"),
    edit(
        "trials_huge", "trials: 10", "trials: 10000000000", "search.trials", "less than or equal"
    ),
    edit("seed_negative", "seed: 0", "seed: -1", "search.seed", "greater than or equal to 0"),
    edit("seed_too_big", "seed: 0", "seed: 4294967296", "search.seed", "less than or equal"),
    edit("seed_bool", "seed: 0", "seed: false", "search.seed", "boolean"),
    edit("seed_text", "seed: 0", "seed: lucky", "search.seed", "integer"),
    edit(
        "option_typo",
        "population_size: 4",
        "populaton_size: 4",
        "search.options.populaton_size",
        "population_size",
    ),
    edit(
        "option_wrong_type",
        "population_size: 4",
        "population_size: four",
        "search.options.population_size",
        "expected an integer, got 'four'",
    ),
    edit(
        "option_bool_for_int",
        "population_size: 4",
        "population_size: true",
        "search.options.population_size",
        "expected an integer, got True",
    ),
    edit(
        "option_rejected_by_optuna",
        "population_size: 4",
        "population_size: 1",
        "search.options",
        "population_size",
    ),
    edit(
        "option_float_text",
        "population_size: 4",
        "population_size: 4, crossover_prob: high",
        "search.options.crossover_prob",
        "expected a number",
    ),
    edit(
        "option_seed",
        "population_size: 4",
        "population_size: 4, seed: 3",
        "search.options.seed",
        "unknown option 'seed'",
    ),
    edit(
        "option_python_object",
        "population_size: 4",
        "population_size: 4, elite_population_selection_strategy: fast",
        "search.options.elite_population_selection_strategy",
        "Python object",
    ),
    edit(
        "tpe_startup_text",
        SEARCH,
        _search("sampler: tpe, options: {n_startup_trials: ten}"),
        "search.options.n_startup_trials",
        "expected an integer, got 'ten'",
    ),
    edit(
        "tpe_gamma_number",
        SEARCH,
        _search("sampler: tpe, options: {gamma: 3}"),
        "search.options.gamma",
        "Python object",
    ),
    edit(
        "tpe_bool_text",
        SEARCH,
        _search("sampler: tpe, options: {multivariate: 'yes'}"),
        "search.options.multivariate",
        "expected true or false",
    ),
    edit(
        "options_not_mapping",
        "options: {population_size: 4}",
        "options: [4]",
        "search.options",
        "valid dictionary",
    ),
    edit(
        "warm_start_negative",
        "seed: 0,",
        "seed: 0, warm_start: -1,",
        "search.warm_start",
        "greater than or equal to 0",
    ),
    edit(
        "warm_start_bool", "seed: 0,", "seed: 0, warm_start: true,", "search.warm_start", "boolean"
    ),
    edit(
        "warm_start_huge",
        "seed: 0,",
        "seed: 0, warm_start: 1000000000,",
        "search.warm_start",
        "less than or equal",
    ),
    edit(
        "timeout_negative",
        "seed: 0,",
        "seed: 0, trial_timeout_s: -1,",
        "search.trial_timeout_s",
        "greater than 0",
    ),
    edit(
        "timeout_nan",
        "seed: 0,",
        "seed: 0, trial_timeout_s: .nan,",
        "search.trial_timeout_s",
        "finite",
    ),
    edit(
        "search_typo", SEARCH, "search: {samplr: nsga2}", "search.samplr", "did you mean 'sampler'"
    ),
    edit(
        "grid_needs_steps",
        SEARCH,
        "search: {sampler: grid, trials: 10, seed: 0}",
        "space.die_area_mm2",
        "needs a 'step'",
        at="die_area",
    ),
    edit("search_not_mapping", SEARCH, "search: nsga2", "search", "valid dictionary"),
    # --- robust ---------------------------------------------------------------------------------
    add(
        "robust_one_sample",
        "robust: {samples: 1}\n",
        "robust.samples",
        "greater than or equal to 2",
    ),
    add("robust_samples_bool", "robust: {samples: true}\n", "robust.samples", "boolean"),
    add(
        "robust_samples_huge",
        "robust: {samples: 10000000}\n",
        "robust.samples",
        "less than or equal",
    ),
    add(
        "robust_statistic_unknown",
        "robust: {samples: 8, statistic: median}\n",
        "robust.statistic",
        "p10",
    ),
    add("robust_not_mapping", "robust: 8\n", "robust", "valid dictionary"),
    # --- default_constraints ---------------------------------------------------------------------
    add(
        "default_constraints_drop_unknown",
        "default_constraints: {drop: [cost.reticle_fit]}\n",
        "default_constraints.drop.0",
        "did you mean 'cost.reticle_fits'",
    ),
    add(
        "default_constraints_drop_empty",
        "default_constraints: {drop: []}\n",
        "default_constraints.drop",
        "at least 1",
    ),
    add(
        "default_constraints_not_bool",
        "default_constraints: sometimes\n",
        "default_constraints",
        "bool",
    ),
    add(
        "default_constraints_unknown_key",
        "default_constraints: {drop: [perf.slo_met], keep: [perf.model_fits]}\n",
        "default_constraints.keep",
        "drop",
    ),
    # --- storage --------------------------------------------------------------------------------
    add("journal_without_path", 'storage: "journal:"\n', "storage", "needs a file path"),
    add(
        "journal_outside_studies",
        "storage: journal:/etc/passwd\n",
        "storage",
        "outside the studies folder",
    ),
    add(
        "journal_into_other_file",
        "storage: journal:notes.txt\njournal_outside_studies: true\n",
        "storage",
        "not an Optuna journal",
    ),
    add(
        "journal_into_folder",
        "storage: journal:afolder\njournal_outside_studies: true\n",
        "storage",
        "is a folder",
    ),
    add(
        "journal_under_a_file",
        "storage: journal:notes.txt/j.log\njournal_outside_studies: true\n",
        "storage",
        "is not a folder",
    ),
    add("storage_scheme_unknown", "storage: foo://x\n", "storage", "unknown scheme 'foo'"),
    add("storage_not_url", "storage: nonsense\n", "storage", "not a storage URL"),
    add("storage_malformed", "storage: 'postgresql://u@h:port/db'\n", "storage", "malformed"),
    add(
        "sqlite_into_other_file", "storage: sqlite:///notes.txt\n", "storage", "not an SQLite file"
    ),
    add("sqlite_in_memory", "storage: 'sqlite://'\n", "storage", "in-memory"),
    add("storage_number", "storage: 5\n", "storage", "valid string"),
    add(
        "journal_flag_not_bool",
        "journal_outside_studies: perhaps\n",
        "journal_outside_studies",
        "valid boolean",
    ),
    # --- derived -------------------------------------------------------------------------------
    add("derived_not_mapping", "derived: 5\n", "derived", "valid dictionary"),
    whole(
        "derived_unknown_name",
        GOOD + "derived:\n  dd: '1 +'\n",
        GOOD.count("\n") + 2,
        "derived.dd",
        "unknown design parameter",
    ),
    whole(
        "derived_also_searched",
        GOOD + "derived:\n  die_area_mm2: '2 * hbm_stacks_per_die'\n",
        GOOD.count("\n") + 2,
        "derived.die_area_mm2",
        "cannot also be searched",
    ),
    # --- the file as a whole --------------------------------------------------------------------
    add("unknown_top_field", "serch: {}\n", "serch", "did you mean 'search'"),
    add("duplicate_key", "study: again\n", "study", "duplicate key"),
    whole("empty_file", "", 1, "", "expected a mapping"),
    whole("top_level_list", "- a\n- b\n", 1, "", "expected a mapping"),
    edit("yaml_syntax", "space:\n", "space:\n  bad: [1, 2\n", "", "invalid YAML", line=10),
    edit(
        "python_tag",
        "study: corpus",
        "study: !!python/object/apply:os.system ['true']",
        "",
        "invalid YAML",
    ),
    whole("billion_laughs", BOMB, 6, "", "once aliases are expanded"),
    whole("deep_nesting", "study: " + "[" * 5000 + "]" * 5000 + "\n", 1, "", "nested deeper"),
    whole("recursive_alias", "study: &a [1, *a]\n", 1, "", "recursive alias"),
    edit("tab_indent", "  gpu: h100-sxm", "\tgpu: h100-sxm", "", "invalid YAML"),
]


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stderr: str
    created: list[str]


def _case_folder(case: Case, base: Path) -> Path:
    folder = base / case.name
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text)
    for name in FOLDERS:
        (folder / name).mkdir()
    (folder / "spec.yaml").write_text(case.text)
    return folder


def _listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if "__pycache__" not in p.parts}


def _env(folder: Path) -> dict[str, str | None]:
    return {"DSE_STUDIES_DIR": str(folder / "studies"), "DSE_PRESETS": None}


def _run_process_env(
    folder: Path, extra: dict[str, str | None], *args: str
) -> subprocess.CompletedProcess[str]:
    """``dse ARGS`` as a real process in ``folder``, ``extra`` set (None: unset) in its
    environment."""
    env = {k: v for k, v in {**os.environ, **extra}.items() if v is not None}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    exe = str(Path(sys.executable).parent / "dse")
    return subprocess.run(
        [exe, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=300
    )


def _run_process(case: Case, folder: Path, *args: str) -> Outcome:
    """``dse ARGS`` as a real process in the case's folder."""
    before = _listing(folder)
    res = _run_process_env(folder, _env(folder), *args)
    return Outcome(res.returncode, res.stderr, sorted(_listing(folder) - before))


def _run_in_process(case: Case, folder: Path, *args: str) -> Outcome:
    """``dse ARGS`` through the console script's entry point in this process."""
    before = _listing(folder)
    res = run_in_process(*args, cwd=folder, env=_env(folder))
    return Outcome(res.returncode, res.stderr, sorted(_listing(folder) - before))


def sample(cases: list[Case], n: int) -> list[Case]:
    """``n`` cases spread evenly over ``cases`` (sections follow each other in the list)."""
    step = max(1, len(cases) // n)
    return cases[::step][:n]


#: The cases also run as real processes: the entry point behaves the same in a fresh one.
PROCESS_SAMPLE = sample(CASES, 8)


@pytest.fixture(scope="module")
def run_outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """``dse run`` on every case through the entry point, one after another (each is refused
    in parsing and checking, well under a second)."""
    base = tmp_path_factory.mktemp("corpus-run")
    return {
        c.name: _run_in_process(c, _case_folder(c, base), "run", "spec.yaml", "--no-progress")
        for c in CASES
    }


def _assert_refused(case: Case, out: Outcome) -> None:
    shown = out.stderr[-3000:]
    assert out.returncode == 2, (out.returncode, shown)
    assert "Traceback" not in out.stderr, shown
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, shown
    where = f"spec.yaml:{case.line}:" + (f" {case.field}:" if case.field else "")
    assert lines[0].startswith(where), (where, shown)
    assert case.fragment in lines[0], (case.fragment, shown)
    assert len(lines[0]) < 1000, len(lines[0])
    assert out.created == [], out.created


def test_the_corpus_is_large_and_covers_every_spec_field() -> None:
    from dse.spec.schema import (
        CategoricalParam,
        FloatParam,
        IntParam,
        ObjectiveSpec,
        SearchSpec,
        StudySpec,
    )

    assert len(CASES) >= 100
    assert len({c.name for c in CASES}) == len(CASES)
    fields = {c.field for c in CASES}
    tops = {f.split(".")[0] for f in fields}
    assert set(StudySpec.model_fields) <= tops, set(StudySpec.model_fields) - tops
    search = {f.split(".")[1] for f in fields if f.startswith("search.")}
    assert set(SearchSpec.model_fields) <= search, set(SearchSpec.model_fields) - search
    objective = {f.split(".")[2] for f in fields if f.startswith("objectives.") and f.count(".")}
    assert set(ObjectiveSpec.model_fields) <= objective, set(ObjectiveSpec.model_fields)
    param_keys = {f.split(".")[2] for f in fields if f.startswith("space.") and f.count(".") >= 2}
    for model in (FloatParam, IntParam, CategoricalParam):
        missing = set(model.model_fields) - param_keys - {"type"}
        assert not missing, (model.__name__, missing)
    assert any(f.startswith("space.") and f.count(".") == 1 for f in fields)  # 'type' itself
    assert any(c.field == "" for c in CASES)  # problems of the YAML itself


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_dse_run_refuses_in_one_line_and_creates_nothing(
    run_outcomes: dict[str, Outcome], case: Case
) -> None:
    _assert_refused(case, run_outcomes[case.name])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_dse_validate_refuses_in_one_line_and_creates_nothing(tmp_path: Path, case: Case) -> None:
    folder = _case_folder(case, tmp_path)
    _assert_refused(case, _run_in_process(case, folder, "validate", "spec.yaml"))


@pytest.mark.parametrize("case", PROCESS_SAMPLE, ids=lambda c: c.name)
@pytest.mark.parametrize("command", ["run", "validate"])
def test_a_real_process_refuses_the_same_way(tmp_path: Path, case: Case, command: str) -> None:
    folder = _case_folder(case, tmp_path)
    _assert_refused(case, _run_process(case, folder, command, "spec.yaml"))


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("journal:", "needs a file path"),
        ("journal:/etc/passwd", "outside the studies folder"),
        ("journal:notes.txt", "outside the studies folder"),
        ("foo://x", "unknown scheme"),
        ("sqlite:///notes.txt", "not an SQLite file"),
        ("nonsense", "not a storage URL"),
    ],
)
def test_bad_storage_option_is_refused_before_anything_is_created(
    tmp_path: Path, url: str, fragment: str
) -> None:
    case = Case("storage-option", GOOD, 0, "", "")
    folder = _case_folder(case, tmp_path)
    runner = _run_process if url == "journal:/etc/passwd" else _run_in_process  # one real one
    out = runner(case, folder, "run", "spec.yaml", "--no-progress", "--storage", url)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("error: --storage") and fragment in line, line
    assert out.created == [], out.created
