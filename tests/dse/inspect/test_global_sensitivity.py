"""Global sensitivity (``dse sensitivity --method sobol|morris``, SALib) against functions with
known indices, and on the paper's uncertain spec end to end, into the report."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from dse.inspect.global_sensitivity import indices
from dse.model.uncertain import Uncertain
from tests.conftest import SPACES, run_dse

# Ishigami (a = 7, b = 0.1), x_i ~ U(-pi, pi): analytic indices (Ishigami & Homma 1990;
# Sobol' & Levitan 1999). V = a^2/8 + b pi^4/5 + b^2 pi^8/18 + 1/2.
A, B = 7.0, 0.1
V = A**2 / 8 + B * math.pi**4 / 5 + B**2 * math.pi**8 / 18 + 0.5
V1 = 0.5 * (1 + B * math.pi**4 / 5) ** 2
V2 = A**2 / 8
V13 = B**2 * math.pi**8 * (1 / 18 - 1 / 50)
S1 = {"x1": V1 / V, "x2": V2 / V, "x3": 0.0}
ST = {"x1": (V1 + V13) / V, "x2": V2 / V, "x3": V13 / V}


def ishigami(v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    x1, x2, x3 = v["x1"], v["x2"], v["x3"]
    return {"y": np.sin(x1) + A * np.sin(x2) ** 2 + B * x3**4 * np.sin(x1)}


def _uniform(name: str, low: float, high: float) -> Uncertain:
    return Uncertain((name,), "uniform", {"low": low, "high": high})


def test_sobol_indices_of_ishigami_match_the_analytic_values() -> None:
    assert S1["x1"] == pytest.approx(0.3139, abs=1e-4) and ST["x3"] == pytest.approx(
        0.2437, abs=1e-4
    )
    us = [_uniform(n, -math.pi, math.pi) for n in ("x1", "x2", "x3")]
    rows = {r.assumption: r for r in indices(ishigami, us, samples=4096, seed=1)["y"]}
    for n in ("x1", "x2", "x3"):
        # Tolerance 0.04 absolute (N = 4096 Saltelli samples); the 95 % intervals are sane.
        assert rows[n].S1 == pytest.approx(S1[n], abs=0.04), n
        assert rows[n].ST == pytest.approx(ST[n], abs=0.04), n
        assert 0 < rows[n].S1_conf < 0.1 and 0 < rows[n].ST_conf < 0.1
    assert [r.assumption for r in indices(ishigami, us, samples=1024)["y"]] == ["x1", "x2", "x3"]


def test_morris_mu_star_of_a_linear_function_is_its_slope_times_range() -> None:
    us = [_uniform("a", 0, 1), _uniform("b", 0, 1), _uniform("c", 10, 20)]

    def linear(v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"y": 1.0 * v["a"] + 2.0 * v["b"] + 0.0 * v["c"]}

    rows = {r.assumption: r for r in indices(linear, us, method="morris", samples=50)["y"]}
    # Effects are per unit of the (0, 1) probability scale: slope x range, no spread.
    assert rows["a"].mu_star == pytest.approx(1.0, rel=1e-3)
    assert rows["b"].mu_star == pytest.approx(2.0, rel=1e-3)
    assert rows["c"].mu_star == pytest.approx(0.0, abs=1e-9)
    assert rows["a"].sigma == pytest.approx(0.0, abs=1e-6)


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
