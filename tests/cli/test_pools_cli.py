"""Heterogeneous prefill/decode pools through the CLI: the shipped spec (prefill on H200, decode
on B200) evaluates, searches, and compares against other GPU mixes."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import ROOT, run_dse

SPEC = str(ROOT / "spaces" / "disagg-h200-b200.yaml")


@pytest.mark.slow
def test_the_mixed_spec_evaluates_at_the_balanced_split() -> None:
    r = run_dse("evaluate", SPEC, "--set", "prefill_gpus=0", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["feasible"] and out["violated"] == []  # on every default constraint
    m = out["metrics"]
    assert m["perf.prefill_gpus"] == 56  # seven 8-GPU H200 prefill replicas, one B200 decode
    req = min(m["perf.prefill_requests_per_s"], m["perf.decode_requests_per_s"],
              m["perf.kv_link_requests_per_s"])  # fmt: skip
    assert m["perf.tokens_per_s"] == pytest.approx(req * 256, rel=1e-12)
    assert m["perf.slo_met"] == 1 and m["cost.installed_gpus"] == 64


@pytest.mark.slow
def test_the_mixed_spec_searches(studies_dir: Path) -> None:
    r = run_dse("run", SPEC, "--trials", "8", "--no-progress",
                env={"DSE_STUDIES_DIR": str(studies_dir)})  # fmt: skip
    assert r.returncode == 0, r.stderr
    trials = pd.read_csv(studies_dir / "disagg-h200-b200" / "trials.csv")
    assert len(trials) == 8 and (trials["state"] == "COMPLETE").all()
    done = trials[trials["params.prefill_gpus"] > 0]
    assert (done["perf.prefill_gpus"] == done["params.prefill_gpus"]).all()


@pytest.mark.slow
def test_compare_mixes_gpu_types() -> None:
    """H200 -> B200 against all-B200 pools and one homogeneous B200 cluster of 64 GPUs."""
    r = run_dse(
        "compare",
        f"{SPEC}::prefill_gpus=16",
        f"{SPEC}::prefill_gpus=16,workload.prefill_pool.gpu=b200",
        f"{ROOT / 'spaces' / 'h100.yaml'}::gpu=b200,cluster_size=64,workload.output_tokens=256,"
        "workload.batch=auto,workload.tp=8",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    rows = {row["metric"]: row for row in json.loads(r.stdout)["rows"]}
    labels = [k for k in rows["perf.tokens_per_s"] if k not in ("metric", "unit") and "/" not in k]
    gpus = [rows["perf.prefill_gpus"][k] for k in labels]
    assert gpus == [16, 16, 0]
    cost = [rows["cost.usd_per_mtok"][k] for k in labels]
    assert all(c > 0 for c in cost) and cost[0] != cost[1]
    # both pools' B200s are twice the H200-prefill mix's rate here: its 16 H200s bound it
    tokens = [rows["perf.tokens_per_s"][k] for k in labels]
    assert tokens[1] > tokens[0]
