"""The tests of tests/dse/inspect/test_global_sensitivity.py that run the ``dse`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import SPACES, run_dse

ROBUST_DESIGN = [
    "--set",
    "die_area_mm2=200",
    "--set",
    "hbm_stacks_per_die=2",
    "--set",
    "optics_per_link=2",
    "--set",
    "link_type=cpo",
    "--set",
    "scaleup_fabric=switched",
]


@pytest.mark.slow
def test_sobol_on_the_paper_robust_spec_reaches_the_report(tmp_path: Path) -> None:
    env = {"DSE_STUDIES_DIR": str(tmp_path / "studies")}
    spec = yaml.safe_load((SPACES / "paper" / "robust.yaml").read_text())
    spec["search"] = {"sampler": "random", "trials": 6, "seed": 0}
    path = tmp_path / "robust.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert run_dse("run", str(path), "--no-progress", env=env).returncode == 0

    res = run_dse(
        "sensitivity", str(path), *ROBUST_DESIGN, "--method", "sobol", "--samples", "256",
        "--json", env=env,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    cost = {r["assumption"]: r for r in data["metrics"]["cost.usd_per_mtok"]}
    assert set(cost) == {
        "technology.defect_density_per_cm2",
        "technology.wafer_cost_usd",
        "technology.cpo_usd_per_gbps",
        "technology.electricity_usd_per_kwh",
    }
    # Cost per token is nearly additive in these assumptions: sum S1 ~ 1, ST >= S1 - conf.
    assert sum(r["S1"] for r in cost.values()) == pytest.approx(1.0, abs=0.25)
    for r in cost.values():
        assert r["ST"] >= r["S1"] - r["S1_conf"] - r["ST_conf"]
    # The assumptions are technology costs: they do not move tokens per joule at all.
    assert all(r["ST"] == 0 for r in data["metrics"]["perf.tokens_per_joule"])

    table = run_dse("sensitivity", str(path), *ROBUST_DESIGN, "--method", "sobol",
                    "--samples", "64", env=env)  # fmt: skip
    assert "cost.usd_per_mtok [USD/Mtok]: Sobol indices" in table.stdout, table.stderr
    assert run_dse("report", spec["study"], env=env).returncode == 0
    html = (tmp_path / "studies" / spec["study"] / "report.html").read_text()
    assert "Global sensitivity: Sobol indices" in html
    assert "technology.cpo_usd_per_gbps" in html.split("Global sensitivity")[1]
