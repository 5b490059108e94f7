"""``dse dashboard`` and ``dse report`` in a real browser: Debian's headless Chromium loads the
pages served by a real ``dse dashboard`` process, and we assert on the rendered DOM.

The central check: for a constrained study, the front in the dashboard's figure and note,
``pareto.csv`` and ``dse pareto --format json`` are the same trials.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from dse.inspect.dashboard import FRONT_FIGURE_ID, NOTE_MARKER, PARAMETER_FIGURE_ID, annotate
from dse.inspect.study_view import load_view
from tests.cdp import Browser
from tests.cli.test_report_compare import assert_png_nontrivial, run_small
from tests.components import chromium_path
from tests.conftest import run_dse


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def chromium(url: str, tmp: Path, *, screenshot: Path | None = None) -> str:
    """Load ``url`` in a fresh headless Chromium; the DOM after scripts ran (or a PNG)."""
    profile = tmp / f"chrome-profile-{time.monotonic_ns()}"
    args = [
        str(chromium_path()),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=20000",
    ]
    if screenshot is not None:
        args += ["--window-size=1400,2200", f"--screenshot={screenshot}"]
    else:
        args += ["--dump-dom"]
    res = subprocess.run(args + [url], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout


def text_of(dom: str) -> str:
    """Visible text, roughly: tags stripped, whitespace squeezed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))


@dataclass
class Served:
    name: str
    url: str
    port: int
    studies: Path
    tmp: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One constrained 30-trial study served by a real ``dse dashboard`` for the whole module
    (a private studies root, like the ``studies_dir`` fixture, shared to keep the tests short).
    """
    tmp = tmp_path_factory.mktemp("dashboard")
    studies = tmp / "studies"
    studies.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DSE_STUDIES_DIR", str(studies))
        name = run_small(tmp)
        port = free_port()
        exe = Path(sys.executable).parent / "dse"
        proc = subprocess.Popen(
            [str(exe), "dashboard", name, "--port", str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            url = ""
            assert proc.stdout is not None
            for line in proc.stdout:  # the URL is printed before serving starts
                if line.startswith("optuna-dashboard: "):
                    url = line.split()[1]
                    break
            assert url.startswith(f"http://127.0.0.1:{port}/dashboard/studies/"), url
            for _ in range(300):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies", timeout=5):
                        break
                except OSError:
                    assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                    time.sleep(0.1)
            yield Served(name=name, url=url, port=port, studies=studies, tmp=tmp)
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def test_dashboard_shows_feasible_front_consistently(served: Served, tmp_path: Path) -> None:
    name, url, studies_dir = served.name, served.url, served.studies
    pareto_csv = pd.read_csv(studies_dir / name / "pareto.csv")["number"].tolist()
    cli = json.loads(run_dse("pareto", name, "--format", "json").stdout)
    assert [r["number"] for r in cli] == pareto_csv
    trials = pd.read_csv(studies_dir / name / "trials.csv")
    infeasible = trials.loc[~trials["feasible"].astype(bool), "number"].tolist()
    assert infeasible, "the test study must have infeasible trials"

    # Study page: the study and our front figure, rendered by plotly in the page.
    dom = chromium(url, tmp_path)
    text = text_of(dom)
    assert f"{name} (id=" in text
    assert f'id="user-defined-plot:{FRONT_FIGURE_ID}"' in dom
    m = re.search(rf"Feasible Pareto front of {name}, (\d+) trials: ([\d, ]+)", text)
    assert m, "front figure title not rendered"
    figure_front = [int(n) for n in m.group(2).replace(",", " ").split()]
    assert int(m.group(1)) == len(figure_front)
    # Our figures carry axis titles with units, and show the spec's searched parameters.
    assert f'id="user-defined-plot:{PARAMETER_FIGURE_ID}"' in dom
    assert re.search(r'class="g-xtitle".*?usd_per_mtok', dom)
    assert re.search(r'class="g-ytitle".*?tokens_per_joule', dom)
    assert "[USD/Mtok]" in text and "front filled by " in text

    # Study note page: our note, with the same trial numbers.
    note = text_of(chromium(f"{url}/note", tmp_path))
    assert NOTE_MARKER in note and "feasible" in note
    m = re.search(r"Trial numbers: ([\d, ]+)\.", note)
    assert m, "front list missing from the note"
    note_front = [int(n) for n in m.group(1).replace(",", " ").split()]

    assert figure_front == note_front == pareto_csv
    assert not set(note_front) & set(infeasible)

    # A trial's own note says it is infeasible and which constraint it violates.
    trial_page = text_of(chromium(f"{url}/trials?numbers={infeasible[0]}", tmp_path))
    assert "dse: INFEASIBLE" in trial_page and "violated:" in trial_page

    shot = tmp_path / "dashboard.png"
    chromium(url, tmp_path, screenshot=shot)
    assert_png_nontrivial(shot, min_w=1000, min_h=1000)


def test_serving_again_rewrites_nothing(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSE_STUDIES_DIR", str(served.studies))
    pareto_csv = pd.read_csv(served.studies / served.name / "pareto.csv")["number"].tolist()
    again = annotate(load_view(served.name))
    assert again.front_numbers == pareto_csv
    assert not again.figure_written and not again.note_written
    assert again.trial_notes_written == 0


def test_report_renders_in_browser(served: Served, tmp_path: Path) -> None:
    name = served.name
    res = run_dse("report", name, env={"DSE_STUDIES_DIR": str(served.studies)})
    assert res.returncode == 0, res.stderr
    report = served.studies / name / "report.html"
    dom = chromium(report.as_uri(), tmp_path)
    # plotly drew the figures (SVG roots) from the inline library, offline.
    assert dom.count('class="main-svg"') >= 4
    text = text_of(dom)
    assert f"Feasible Pareto front of {name}" in text
    assert "Hypervolume of the feasible front" in text
    shot = tmp_path / "report.png"
    chromium(report.as_uri(), tmp_path, screenshot=shot)
    assert_png_nontrivial(shot, min_w=1000, min_h=1000)


def test_dashboard_refuses_busy_port(served: Served) -> None:
    res = run_dse(
        "dashboard",
        served.name,
        "--port",
        str(served.port),
        env={"DSE_STUDIES_DIR": str(served.studies)},
        timeout=60,
    )
    assert res.returncode == 2 and "choose another --port" in res.stderr


# What the dashboard's own panels show, read from the page its scripts built: the trial numbers
# listed under "Best Trials", and the plotly traces of its Pareto-front plot (optuna-dashboard
# 0.21 draws infeasible trials in a trace hovering "Infeasible Trial" and the front of the
# feasible ones in a trace hovering "Best Trial"; each point's text is the trial as JSON).
BEST_TRIALS_JS = """(() => {
  const head = [...document.querySelectorAll('h6')].find(h => /^Best Trials?/.test(h.textContent));
  if (!head) return null;
  const card = head.closest('.MuiCard-root') || head.parentElement;
  return [...card.querySelectorAll('h5')].map(h => h.textContent);
})()"""
PARETO_JS = """(() => {
  const gd = document.getElementById('graph-pareto-front');
  if (!gd || !gd.data || gd.data.length < 4) return null;
  const nums = t => (t.text || []).map(s => Number(/"number":\\s*(\\d+)/.exec(s)[1]));
  const pick = label => gd.data.filter(t => String(t.hovertemplate).includes(label));
  return {front: pick('>Best Trial<').flatMap(nums),
          infeasible: pick('>Infeasible Trial<').flatMap(nums)};
})()"""


def test_dashboard_panels_show_the_feasible_front(served: Served, tmp_path: Path) -> None:
    """optuna-dashboard's own "Best Trials" list and Pareto-front plot show pareto.csv."""
    name, studies = served.name, served.studies
    pareto_csv = sorted(pd.read_csv(studies / name / "pareto.csv")["number"].tolist())
    trials = pd.read_csv(studies / name / "trials.csv")
    complete = trials[trials["state"] == "COMPLETE"]
    infeasible = sorted(complete.loc[~complete["feasible"].astype(bool), "number"].tolist())
    assert infeasible and pareto_csv

    browser = Browser(tmp_path / "profile")
    try:
        browser.open(served.url)
        best = browser.wait_for(BEST_TRIALS_JS)
        plot = browser.wait_for(PARETO_JS)
    finally:
        browser.close()

    shown = sorted(int(t.removeprefix("Trial ")) for t in best)
    assert shown == pareto_csv
    # The plot's front: pareto.csv, plus any later trial of the very same design (pareto.csv
    # lists a design once, by its first trial; the plot draws both points).
    params = [c for c in trials.columns if c.startswith("params.")]
    on_front = complete[complete["number"].isin(pareto_csv)][params]
    same_design = complete.merge(on_front, on=params)["number"].tolist()
    assert set(pareto_csv) <= set(plot["front"]) <= set(same_design)
    assert sorted(set(plot["front"])) == sorted(set(same_design) & set(plot["front"]))
    assert sorted(plot["infeasible"]) == infeasible


def test_dashboard_takes_the_study_folder(served: Served, tmp_path: Path) -> None:
    """``dse dashboard studies/NAME`` (what tab completion gives) finds the study; here the
    port is taken, so reaching the port check proves the folder resolved to the study."""
    folder = served.studies / served.name
    for arg in (str(folder), f"{folder}/"):
        res = run_dse("dashboard", arg, "--port", str(served.port), cwd=tmp_path, timeout=60)
        assert res.returncode == 2 and "choose another --port" in res.stderr, res.stderr


def test_startup_line_is_short_for_a_large_front() -> None:
    from dse.inspect.dashboard import Annotation, startup_line

    line = startup_line("litegpu", Annotation(list(range(1000, 1107)), False, False, 0))
    assert "107 trials (1000, 1001, 1002, 1003, 1004, ...;" in line
    assert "1050" not in line and len(line) < 200
