"""An evaluator's ``print`` never reaches stdout: machine output stays parseable.

A user's model that prints at import and on every call (to ``print``, to ``sys.stdout``, to
``sys.__stdout__`` and with ``os.write(1, ...)`` below Python) runs beside the built-ins; every
command with machine output is run as a real process, and its stdout must parse whole while
the model's text arrives on stderr.
"""

from __future__ import annotations

import csv
import io
import json
import textwrap
from pathlib import Path

import pytest

from tests.conftest import run_dse

NOISY = textwrap.dedent(
    """\
    import os
    import sys

    print("NOISY import")
    os.write(1, b"NOISY descriptor import\\n")


    def f(design):
        print("NOISY call")
        sys.stdout.write("NOISY write\\n")
        os.write(1, b"NOISY descriptor\\n")  # below Python's sys.stdout
        sys.__stdout__.write("NOISY dunder\\n")  # the interpreter's own stream
        return {"y": 1.0}
    """
)
SPEC = textwrap.dedent(
    """\
    study: noisy
    fixed:
      gpu: h100-sxm
      technology: n4
      cluster_size: 64
      workload: {model: llama3-70b, phase: serve, batch: 64}
    space:
      hbm_stacks_per_die: {type: int, low: 4, high: 5}
      optics_per_link: {type: categorical, choices: [1, 2]}
    evaluators:
      noisy: noisy_mod:f
    objectives:
      - {metric: cost.usd_per_mtok, direction: minimize}
      - {metric: noisy.y, direction: maximize}
    search: {sampler: random, trials: 4, seed: 0}
    """
)
DESIGN = ["--set", "hbm_stacks_per_die=5", "--set", "optics_per_link=2"]
A, B = "spec.yaml::hbm_stacks_per_die=4,optics_per_link=1", "spec.yaml::hbm_stacks_per_die=5"


def _json(text: str) -> object:
    return json.loads(text)


def _csv(text: str) -> object:
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:2] == ["metric", "unit"] and all(len(r) == len(rows[0]) for r in rows)
    return rows


@pytest.mark.parametrize(
    ("args", "parse"),
    [
        (["evaluate", "spec.yaml", *DESIGN, "--json"], _json),
        (["run", "spec.yaml", "--json", "--no-progress"], _json),
        (["sweep", "spec.yaml", "--json", "--no-progress"], _json),
        (["compare", A, f"{B},optics_per_link=2", "--csv", "-"], _csv),
        (["sensitivity", "spec.yaml", *DESIGN, "--json"], _json),
    ],
    ids=["evaluate", "run", "sweep", "compare", "sensitivity"],
)
def test_machine_output_is_only_the_tools(tmp_path: Path, args: list[str], parse) -> None:
    (tmp_path / "noisy_mod.py").write_text(NOISY)
    (tmp_path / "spec.yaml").write_text(SPEC)
    env = {"DSE_STUDIES_DIR": str(tmp_path / "studies")}
    res = run_dse(*args, cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "NOISY" not in res.stdout, res.stdout[:500]
    parse(res.stdout)
    # The model's text is not lost: it is on stderr (import, and the calls).
    assert "NOISY import" in res.stderr and "NOISY call" in res.stderr, res.stderr[-2000:]
    assert "NOISY descriptor" in res.stderr and "NOISY dunder" in res.stderr, res.stderr[-2000:]
