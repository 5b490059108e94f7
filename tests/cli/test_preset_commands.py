"""``dse evaluate`` on the domain's presets, end to end: a serving case from the command line,
every new GPU preset at its datasheet throughput, a misspelt preset, and a user's presets folder
with a bad value (moved here from the domain's unit tests: these run the command)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, SPACES, run_dse
from tests.objectives.perf.test_perf_continuous import perf
from tests.objectives.presets.test_gpu_presets import DATASHEET, NEW, NODE
from tests.objectives.presets.test_presets import H100_FIELDS, MODEL_FIELDS, _spec, _write


def test_issue_cli_command_end_to_end():
    res = run_dse("evaluate", str(SPACES / "h100.yaml"), "--json", "--set", "gpu=h200",
                  "--set", "cluster_size=1", "--set", "workload.model=llama3-70b",
                  "--set", "workload.precision=fp8", "--set", "workload.phase=serve",
                  "--set", "workload.input_tokens=1000", "--set", "workload.output_tokens=1000",
                  "--set", "workload.batch=auto", "--set", "workload.tp=1",
                  "--set", "workload.pp=1")  # fmt: skip
    m = json.loads(res.stdout)["metrics"]
    assert m["perf.model_fits"] == 1 and m["perf.batch"] > 1
    assert m["perf.tokens_per_s"] == pytest.approx(
        perf(
            "h200",
            model="llama3-70b",
            precision="fp8",
            tp=1,
            pp=1,
            input_tokens=1000,
            output_tokens=1000,
        )["tokens_per_s"]
    )


@pytest.mark.parametrize("gpu", NEW)
def test_cli_evaluates_every_new_preset(gpu):
    """``dse evaluate spaces/h100.yaml --set gpu=<preset> --set workload.precision=fp4`` through
    a real process for every new preset (fp8 where the GPU has no FP4), on its own node: the
    datasheet's tensor throughput holds there too; FP4 on a GPU without it is one line."""
    spec = str(ROOT / "spaces" / "h100.yaml")
    fp4 = DATASHEET[gpu][2]
    prec = "fp4" if fp4 is not None else "fp8"
    r = run_dse(
        "evaluate", spec, "--set", f"gpu={gpu}", "--set", f"technology={NODE[gpu]}",
        "--set", f"workload.precision={prec}", "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    metrics = json.loads(r.stdout)["metrics"]
    want = fp4 if fp4 is not None else DATASHEET[gpu][1]
    assert metrics["perf.tflops_per_gpu"] == pytest.approx(want, rel=5e-3)
    assert metrics["perf.tokens_per_s"] > 0 and metrics["cost.usd_per_mtok"] > 0
    if fp4 is None:
        r = run_dse("evaluate", spec, "--set", f"gpu={gpu}", "--set", "workload.precision=fp4")
        assert r.returncode == 2
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "workload.precision" in lines[0], r.stderr
        assert "fp4_flops_multiplier" in lines[0] and gpu in lines[0]


def test_cli_unknown_preset_points_at_the_presets_doc():
    r = run_dse("evaluate", str(ROOT / "spaces" / "h100.yaml"), "--set", "gpu=b2000")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1
    assert "docs/presets.md" in lines[0] and "'b200'" in lines[0]


def test_cli_uses_user_presets_and_reports_their_errors(tmp_path: Path) -> None:
    folder = tmp_path / "study"
    _write(folder / "presets", "gpus.yaml", {"my-lite": H100_FIELDS})
    _write(folder / "presets", "models.yaml", {"tiny-1b": MODEL_FIELDS})
    spec = _spec(folder, "my-lite", "tiny-1b")
    res = run_dse("evaluate", str(spec), "--json", "--set", "die_area_mm2=204")
    assert res.returncode == 0, res.stderr
    metrics = json.loads(res.stdout)["metrics"]
    assert metrics["perf.tokens_per_s"] > 0
    # The same spec with a bad user preset: one line FILE:LINE: field: problem, exit 2.
    bad = _write(folder / "presets", "gpus.yaml", {"my-lite": {**H100_FIELDS, "lane_gbps": -1}})
    res = run_dse("evaluate", str(spec), "--json", "--set", "die_area_mm2=204")
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    line = next(i for i, t in enumerate(bad.read_text().splitlines(), 1) if "lane_gbps" in t)
    assert res.stderr.strip() == (
        f"{bad}:{line}: my-lite.lane_gbps: input should be greater than 0, got -1"
    )
