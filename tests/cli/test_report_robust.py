"""A robust study's front appears in the nominal study's report, beside the nominal front."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import run_dse
from tests.dse.model.test_robust import SPEC


def test_report_shows_robust_front_beside_nominal(tmp_path: Path, studies_dir: Path) -> None:
    spec = tmp_path / "rob.yaml"
    spec.write_text(SPEC)
    env = {"DSE_STUDIES_DIR": str(studies_dir)}
    assert run_dse("run", str(spec), "--no-progress", env=env).returncode == 0
    res = run_dse(
        "run", str(spec), "--robust", "4", "--statistic", "pessimistic", "--no-progress", env=env
    )
    assert res.returncode == 0, res.stderr
    robust_name = "rob-robust-pessimistic-k4"
    assert (studies_dir / robust_name / "spec.lock.yaml").is_file()
    rep = run_dse("report", "rob", env=env)
    assert rep.returncode == 0, rep.stderr
    page = (studies_dir / "rob" / "report.html").read_text()
    assert f"Robust front: {robust_name}" in page
    assert "4 sampled scenarios, statistic pessimistic" in page
    # The robust table lists exactly the robust study's front, as `dse pareto` gives it.
    front = json.loads(run_dse("pareto", robust_name, "--format", "json", env=env).stdout)
    section = page[page.index(f"Robust front: {robust_name}") :]
    table = section[section.index("<table>") : section.index("</table>")]
    numbers = [int(n) for n in re.findall(r"<tr><td>(\d+)</td>", table)]
    assert sorted(numbers) == sorted(r["number"] for r in front)
    assert "nominal.cost.usd_per_mtok" in table
