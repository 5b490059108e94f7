"""``dse report`` and ``dse compare`` through the real console script, plus the definitions
(reference point, hypervolume, knee) they rest on, on real journal-file studies."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from PIL import Image

from dse.inspect.study_view import (
    knee_index,
    load_view,
    normalised_hypervolume_history,
    view_reference_point,
)
from tests.conftest import SPACES, run_dse


def small_spec(tmp_path: Path, *, name: str = "small", thresholds: bool = False) -> Path:
    """litegpu.yaml cut to 30 NSGA-II trials (population 8): seconds, with a real front."""
    data = yaml.safe_load((SPACES / "litegpu.yaml").read_text())
    data["study"] = name
    data["search"] = {
        "sampler": "nsga2",
        "trials": 30,
        "seed": 3,
        "options": {"population_size": 8},
    }
    if thresholds:
        for obj, t in zip(data["objectives"], [5.0, 0.05, 0.9], strict=True):
            obj["threshold"] = t
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def run_small(tmp_path: Path, **kw: object) -> str:
    spec = small_spec(tmp_path, **kw)  # type: ignore[arg-type]
    res = run_dse("run", str(spec), "--no-progress")
    assert res.returncode == 0, res.stderr
    return yaml.safe_load(spec.read_text())["study"]


def assert_png_nontrivial(path: Path, *, min_w: int = 300, min_h: int = 200) -> None:
    img = Image.open(path).convert("RGB")
    assert img.width >= min_w and img.height >= min_h, img.size
    colours = img.getcolors(maxcolors=1_000_000)
    assert colours is not None and len(colours) > 20, "image is (nearly) a single colour"


def test_report_is_self_contained_with_front_knee_and_assumptions(
    studies_dir: Path, tmp_path: Path
) -> None:
    name = run_small(tmp_path)
    res = run_dse("report", name)
    assert res.returncode == 0, res.stderr
    html = (studies_dir / name / "report.html").read_text()
    # Offline: plotly.js inline, no external script or stylesheet.
    assert "plotly.js v" in html or "Plotly" in html
    assert not re.search(r"<script[^>]+src=", html)
    assert not re.search(r"<link[^>]+href=['\"]https?:", html)
    for section in (
        "Pareto scatter matrix",
        "Parallel coordinates of the front",
        "Hypervolume history",
        "Parameter importances",
        "Resolved assumptions (spec.lock.yaml)",
        "defect_density_per_cm2",  # a preset value spelled out in the lock
    ):
        assert section in html, section
    # The front table lists exactly pareto.csv's trials and marks one knee.
    table = html[html.index("id='front'") :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr( class='knee')?><td>(\d+)</td>", table)
    pareto = pd.read_csv(studies_dir / name / "pareto.csv")
    assert [int(n) for _, n in rows] == pareto["number"].tolist()
    assert sum(1 for k, _ in rows if k) == 1
    # Infeasible trials exist in this constrained study, and the scatter matrix shows them.
    trials = pd.read_csv(studies_dir / name / "trials.csv")
    assert (~trials["feasible"]).sum() > 0
    assert "infeasible (" in html and "front (" in html
    for png in ("pareto_pairs.png", "hypervolume.png", "importances.png"):
        assert_png_nontrivial(studies_dir / name / "figures" / png)


def test_reference_point_hypervolume_and_knee_definitions(
    studies_dir: Path, tmp_path: Path
) -> None:
    plain = load_view(run_small(tmp_path, name="plain"))
    ref, src = view_reference_point(plain)
    front = plain.front  # the reference set: the study's feasible front (no sweep recorded)
    for r, obj, mx, s in zip(ref, plain.objectives, plain.maximize, src, strict=True):
        vals = front[obj].to_numpy(float)
        span = vals.max() - vals.min()
        expect = vals.min() - 0.1 * span if mx else vals.max() + 0.1 * span
        assert r == pytest.approx(expect) and s == "study front nadir + 10% range"
    hv = normalised_hypervolume_history(plain)["hypervolume"].to_numpy()
    assert len(hv) == len(plain.trials)
    assert np.all(np.diff(hv) >= -1e-12) and 0 < hv[-1] <= 1
    # The knee is the front point nearest the ideal after min-max normalisation.
    pts = plain.front[plain.objectives].to_numpy(float) * np.where(plain.maximize, -1, 1)
    norm = (pts - pts.min(0)) / np.where(np.ptp(pts, 0) == 0, 1, np.ptp(pts, 0))
    assert knee_index(plain) == int(np.argmin(np.linalg.norm(norm, axis=1)))

    capped = load_view(run_small(tmp_path, name="capped", thresholds=True))
    ref, src = view_reference_point(capped)
    assert ref == [5.0, 0.05, 0.9] and src == ["threshold"] * 3


def test_compare_table_csv_and_ratios(tmp_path: Path) -> None:
    settings = "die_area_mm2=200,hbm_stacks_per_die=2,optics_per_link=4,cluster_size=64"
    lite = f"{SPACES / 'litegpu.yaml'}::{settings}"
    out_csv = tmp_path / "cmp.csv"
    res = run_dse(
        "compare",
        str(SPACES / "h100.yaml"),
        lite,
        "--label",
        "H100",
        "--label",
        "Lite",
        "--csv",
        str(out_csv),
    )
    assert res.returncode == 0, res.stderr
    assert "Lite/H100" in res.stdout and "cost.usd_per_mtok" in res.stdout
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text())))
    assert list(rows[0]) == ["metric", "unit", "H100", "Lite", "Lite/H100"]
    by = {r["metric"]: r for r in rows}
    # Same numbers as `dse evaluate` of each design, and ratio = Lite / H100.
    for m in ("cost.usd_per_mtok", "perf.tokens_per_joule", "cost.die_yield"):
        r = by[m]
        assert r["unit"]
        assert float(r["Lite/H100"]) == pytest.approx(float(r["Lite"]) / float(r["H100"]))
    assert float(by["cost.die_yield"]["Lite"]) > float(by["cost.die_yield"]["H100"])  # 200 mm2
    ev = json.loads(
        run_dse(
            "evaluate",
            str(SPACES / "litegpu.yaml"),
            "--json",
            "--set",
            "die_area_mm2=200",
            "--set",
            "hbm_stacks_per_die=2",
            "--set",
            "cluster_size=64",
            "--set",
            "optics_per_link=4",
        ).stdout
    )
    assert float(by["cost.tco_usd"]["Lite"]) == pytest.approx(ev["metrics"]["cost.tco_usd"])

    bad = run_dse("compare", f"{SPACES / 'h100.yaml'}::die_area_mm2")
    assert bad.returncode == 2 and "SPEC::name=value" in bad.stderr
    typo = run_dse("compare", f"{SPACES / 'h100.yaml'}::die_area=3")
    assert typo.returncode == 2 and "die_area_mm2" in typo.stderr


def test_one_hypervolume_in_pareto_quality_report_and_dashboard_note(
    studies_dir: Path, tmp_path: Path
) -> None:
    """dse pareto --quality, quality.json, the report's history and the dashboard note give
    one number: the volume dominated by the front, divided by the box between the ideal and
    the reference point (both printed)."""
    from dse.inspect.dashboard import study_note
    from dse.model.pareto import hypervolume

    name = run_small(tmp_path, name="onehv")
    res = run_dse("pareto", name, "--quality")
    assert res.returncode == 0, res.stderr
    q = json.loads((studies_dir / name / "quality.json").read_text())
    view = load_view(name)
    # by hand: raw moocore hypervolume of the front, over the ideal-to-reference box
    pts = view.front[view.objectives].to_numpy(float)
    ref = np.asarray(q["reference_point"])
    ideal = np.where(view.maximize, pts.max(0), pts.min(0))
    raw = hypervolume(pts, ref, view.maximize)
    assert q["ideal_point"] == pytest.approx(list(ideal))
    assert q["hypervolume"] == pytest.approx(raw / np.prod(np.abs(ref - ideal)), rel=1e-12)
    assert 0 < q["hypervolume"] <= 1
    assert f"hypervolume {q['hypervolume']:.6g}" in res.stdout
    assert all(f"{v:.6g}" in res.stdout for v in q["reference_point"])  # reference printed
    hist = normalised_hypervolume_history(view)
    assert hist["hypervolume"].iloc[-1] == pytest.approx(q["hypervolume"], rel=1e-12)
    assert view_reference_point(view)[0] == pytest.approx(q["reference_point"])
    assert f"{q['hypervolume']:.4f}" in study_note(view)
