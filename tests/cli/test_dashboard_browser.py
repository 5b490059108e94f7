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

from dse.inspect.dashboard import FRONT_FIGURE_ID, NOTE_MARKER, annotate
from dse.inspect.study_view import load_view
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

    # Study note page: our note, with the same trial numbers.
    note = text_of(chromium(f"{url}/note", tmp_path))
    assert NOTE_MARKER in note and "ignores feasibility" in note
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
