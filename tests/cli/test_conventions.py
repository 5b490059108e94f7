"""The CLI's conventions, through real processes: what start-up imports, --version,
``python -m dse``, shell completion, -q, NO_COLOR, --json, typed choices, one --set syntax,
progress lines in logs, and no global side effects from the library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dse import __version__
from tests.conftest import ROOT, run_dse

SPACES = ROOT / "spaces"
HEAVY = ("numpy", "pandas", "pyarrow", "optuna", "plotly", "matplotlib", "sqlalchemy", "scipy")

_MODULES_AFTER = """
import json, sys
sys.argv = ["dse", *{args!r}]
from dse.cli import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def modules_after(*args: str) -> set[str]:
    """The modules a real ``dse ARGS`` process has imported when it ends."""
    res = subprocess.run(
        [sys.executable, "-c", _MODULES_AFTER.format(args=list(args))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = [x for x in res.stderr.splitlines() if x.startswith("MODULES ")][-1]
    return set(json.loads(line.removeprefix("MODULES ")))


def test_help_imports_no_numpy_pandas_arrow_or_optuna() -> None:
    mods = modules_after("--help")
    assert "typer" in mods and "dse.cli.app" in mods
    assert not {m for m in HEAVY if m in mods}
    # every command's help is as cheap: the command modules import their work lazily
    for cmd in ("run", "sweep", "report", "dashboard", "sensitivity", "compare", "status"):
        assert not {m for m in HEAVY if m in modules_after(cmd, "--help")}, cmd


def test_evaluate_imports_neither_pandas_arrow_optuna_nor_scipy() -> None:
    mods = modules_after("evaluate", str(SPACES / "h100.yaml"), "--json")
    assert "objectives.cost" in mods  # it did evaluate
    heavy = ("pandas", "pyarrow", "optuna", "plotly", "sqlalchemy", "scipy")
    assert not {m for m in heavy if m in mods}


def test_version_and_python_m_dse() -> None:
    res = run_dse("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"dse (litegpu-dse) {__version__}"
    mod = subprocess.run(
        [sys.executable, "-m", "dse", "--version"], cwd=ROOT, capture_output=True, text=True
    )
    assert mod.returncode == 0 and mod.stdout == res.stdout


def test_shell_completion_offers_commands_and_closed_choices() -> None:
    def complete(words: str) -> list[str]:
        cword = len(words.split()) - (0 if words.endswith(" ") else 1)
        env = {"_DSE_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
        res = run_dse(env=env)
        assert res.returncode == 0, res.stderr
        return res.stdout.split()

    assert complete("dse pare") == ["pareto"]
    assert complete("dse pareto x --format ") == ["table", "csv", "json"]
    assert "pessimistic" in complete("dse run s.yaml --statistic ")


def test_closed_options_refuse_a_typo_with_the_choices() -> None:
    res = run_dse("pareto", "nosuchstudy", "--format", "xml")
    assert res.returncode == 2
    assert "xml" in res.stderr and "table" in res.stderr and "json" in res.stderr
    res = run_dse("sensitivity", str(SPACES / "h100.yaml"), "--method", "sobel")
    assert res.returncode == 2 and "morris" in res.stderr


def test_enums_match_the_engines_lists() -> None:
    from dse.cli.options import SensitivityMethod, Statistic
    from dse.cli.sweep import DEFAULT_CHUNK
    from dse.inspect.global_sensitivity import METHODS
    from dse.model.robust import STATISTICS
    from dse.search.sweep import sweep

    assert [s.value for s in Statistic] == list(STATISTICS)
    assert {m.value for m in SensitivityMethod} == {*METHODS, "tornado"}
    assert DEFAULT_CHUNK == sweep.DEFAULT_CHUNK


def test_no_color_is_honoured() -> None:
    spec = str(SPACES / "h100.yaml")
    coloured = run_dse("validate", spec, env={"FORCE_COLOR": "1"})
    plain = run_dse("validate", spec, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b[32m" in coloured.stdout  # green "ok" on a forced terminal
    assert "\x1b[3" not in plain.stdout and plain.stdout.startswith("ok ")


def test_validate_json_ok_and_problems(tmp_path: Path) -> None:
    ok = run_dse("validate", str(SPACES / "litegpu.yaml"), "--json")
    payload = json.loads(ok.stdout)
    assert ok.returncode == 0 and payload["ok"] is True and payload["problems"] == []
    assert payload["study"] == "litegpu" and "die_area_mm2" in payload["parameters"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("study: x\nspace:\n  a: {type: float, low: 1, high: 0}\nobjectives: []\n")
    res = run_dse("validate", str(bad), "--json")
    payload = json.loads(res.stdout)
    assert res.returncode == 2 and payload["ok"] is False and payload["problems"]
    assert all({"line", "field", "message"} <= set(p) for p in payload["problems"])


def test_evaluate_metric_filter_and_feasibility_first() -> None:
    lite = str(SPACES / "litegpu.yaml")
    design = ["--set", "die_area_mm2=816", "--set", "hbm_stacks_per_die=6",
              "--set", "optics_per_link=1", "--set", "cluster_size=16"]  # fmt: skip
    res = run_dse("evaluate", lite, *design, "--metric", "cost.", "--json")
    view = json.loads(res.stdout)
    assert res.returncode == 0, res.stderr
    assert view["metrics"] and all(m.startswith("cost.") for m in view["metrics"])
    assert list(view["objectives"]) == ["cost.usd_per_mtok"]
    text = run_dse("evaluate", lite, *design).stdout.splitlines()
    assert text[0].startswith("prices at cost")  # the price basis, then the design
    assert text[2].startswith(("feasible", "infeasible"))  # the verdict leads
    if not view["feasible"]:  # each violated constraint is named in that line
        assert all(v in text[2] for v in view["violated"])
    typo = run_dse("evaluate", lite, *design, "--metric", "cost.usd_per_mtk")
    assert typo.returncode == 2 and "cost.usd_per_mtok" in typo.stderr


def test_compare_leads_with_feasibility_and_takes_set_and_json() -> None:
    h100, lite = str(SPACES / "h100.yaml"), str(SPACES / "litegpu.yaml")
    lite_design = f"{lite}::die_area_mm2=816,hbm_stacks_per_die=6,optics_per_link=1"
    res = run_dse("compare", h100, lite_design, "--set", "cluster_size=16", "--json")
    assert res.returncode == 0, res.stderr
    payload = json.loads(res.stdout)
    assert [d["label"] for d in payload["designs"]] == ["h100", "litegpu"]
    assert "cluster_size=16" in payload["designs"][1]["sets"]
    assert [r["metric"] for r in payload["rows"][:3]] == [
        "cost.usd_per_mtok",
        "perf.tokens_per_joule",
        "availability.capacity_availability",
    ]
    csv = run_dse("compare", h100, lite_design, "--set", "cluster_size=16", "--csv", "-")
    assert csv.stdout.splitlines()[1].startswith("feasible,")
    assert csv.stdout.splitlines()[2].startswith("violated constraints,")


def test_sensitivity_old_design_form_still_works_with_a_deprecation_line() -> None:
    lite = str(SPACES / "litegpu.yaml")
    sets = "die_area_mm2=816,hbm_stacks_per_die=6,optics_per_link=1,cluster_size=16"
    old = run_dse("sensitivity", lite, "--design", sets, "--top", "2", "--json")
    assert old.returncode == 0, old.stderr and "deprecated" in old.stderr
    new_args = [a for s in sets.split(",") for a in ("--set", s)]
    new = run_dse("sensitivity", lite, *new_args, "--top", "2", "--json")
    assert json.loads(new.stdout) == json.loads(old.stdout)
    assert "deprecated" in old.stderr and "deprecated" not in new.stderr


def test_sweep_prints_its_size_first_and_progress_lines_when_redirected(tmp_path: Path) -> None:
    env = {"DSE_STUDIES_DIR": str(tmp_path), "DSE_PROGRESS_EVERY_S": "0"}
    spec = str(SPACES / "zdt1" / "spec.yaml")
    res = run_dse("sweep", spec, "--samples", "3000", "--chunk", "1000", env=env)
    assert res.returncode == 0, res.stderr
    lines = res.stderr.splitlines()
    assert "3,000 designs (samples) in 3 chunks of 1,000" in lines[0]
    progress = [x for x in lines if " done" in x and "elapsed" in x]
    assert len(progress) >= 3 and "3,000/3,000 done" in progress[-1]  # the last: final front
    quiet = run_dse("-q", "sweep", spec, "--samples", "3000", "--chunk", "1000",
                    "--no-resume", env=env)  # fmt: skip
    assert quiet.returncode == 0 and quiet.stderr == ""


_NO_GLOBALS = """
import logging, optuna, sys
before = optuna.logging.get_verbosity()
from dse import api
api.run({spec!r}, trials=3)
assert optuna.logging.get_verbosity() == before, (before, optuna.logging.get_verbosity())
print("ok")
"""


def test_api_run_leaves_optuna_logging_alone(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-c", _NO_GLOBALS.format(spec=str(SPACES / "zdt1" / "spec.yaml"))],
        cwd=ROOT,
        env={**os.environ, "DSE_STUDIES_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr


@pytest.mark.parametrize("flag", ["-q", "--quiet"])
def test_quiet_run_prints_results_only(tmp_path: Path, flag: str) -> None:
    env = {"DSE_STUDIES_DIR": str(tmp_path)}
    spec = str(SPACES / "zdt1" / "spec.yaml")
    loud = run_dse("run", spec, "--trials", "4", env=env)
    assert loud.returncode == 0 and "trials to run" in loud.stderr
    quiet = run_dse(flag, "run", spec, "--trials", "8", env=env)
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert "8 trials finished" in quiet.stdout


_WITHOUT = """
import importlib.abc, sys
class Missing(importlib.abc.MetaPathFinder):  # as if the extra were not installed
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == {module!r}:
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, Missing())
sys.argv = ["dse", *{args!r}]
from dse.cli import main
main()
"""


@pytest.mark.parametrize(
    ("module", "extra", "args"),
    [
        ("SALib", "sensitivity", ["sensitivity", "spaces/h100.yaml", "--method", "sobol"]),
        ("plotly", "dashboard", ["report", "nosuchstudy"]),
        ("optuna_dashboard", "dashboard", ["dashboard", "nosuchstudy"]),
        ("distributed", "dask", ["sweep", "spaces/zdt1/spec.yaml", "--scheduler", "tcp://x:1"]),
        ("psycopg", "postgres", ["run", "spaces/zdt1/spec.yaml", "--storage", "postgresql://x/y"]),
    ],
)
def test_a_missing_extra_is_named_with_its_install_command(
    module: str, extra: str, args: list[str]
) -> None:
    res = subprocess.run(
        [sys.executable, "-c", _WITHOUT.format(module=module, args=args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and f"pip install 'litegpu-dse[{extra}]'" in lines[0], lines


def test_status_counts_add_up(tmp_path: Path) -> None:
    env = {"DSE_STUDIES_DIR": str(tmp_path)}
    assert (
        run_dse("run", str(SPACES / "zdt1" / "spec.yaml"), "--trials", "6", env=env).returncode
        == 0
    )
    info = json.loads(run_dse("status", "zdt1", "--json", env=env).stdout)
    text = run_dse("status", "zdt1", env=env).stdout
    s = info["states"]
    finished = s.get("COMPLETE", 0) + s.get("FAIL", 0) + s.get("PRUNED", 0)
    assert finished == info["finished"] == 6
    assert f"{finished} trials finished ({s.get('COMPLETE', 0)} complete, " in text
    if s.get("WAITING"):
        assert f"{s['WAITING']} waiting" in text  # queued designs said apart, not as trials run


def test_json_on_pareto_and_report(tmp_path: Path) -> None:
    env = {"DSE_STUDIES_DIR": str(tmp_path)}
    spec = str(SPACES / "zdt1" / "spec.yaml")
    assert run_dse("run", spec, "--trials", "12", env=env).returncode == 0
    as_json = run_dse("pareto", "zdt1", "--json", env=env)
    as_format = run_dse("pareto", "zdt1", "--format", "json", env=env)
    assert as_json.returncode == 0 and as_format.returncode == 0
    rows = json.loads(as_json.stdout)
    assert rows == json.loads(as_format.stdout) and rows
    assert {"number", "zdt1.f1", "zdt1.f2"} <= set(rows[0])
    res = run_dse("report", "zdt1", "--json", env=env)
    assert res.returncode == 0, res.stderr
    stages = [x for x in res.stderr.splitlines() if x.startswith("report zdt1: ")]
    # progress in a redirected log: each stage as it starts, with the time so far
    assert [x.split(": ", 1)[1].split(" (")[0] for x in stages[1:4]] == [
        "reading the study",
        "12 trials read; importances and the HTML figures",
        "report.html written; the PNG figures",
    ]
    summary = json.loads(res.stdout)
    assert summary["front_size"] == len(rows)
    assert sum(v for k, v in summary["counts"].items() if k != "total") >= 12
    assert Path(summary["html"]).is_file()
    names = {Path(p).name for p in summary["figures"]}
    assert {"pareto_pairs.png", "front_by_parameter.png"} <= names
    quiet = run_dse("-q", "report", "zdt1", env=env)  # importances on 12 trials: Optuna logs
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


def test_verbose_shows_optunas_info_log(tmp_path: Path) -> None:
    spec = str(SPACES / "zdt1" / "spec.yaml")
    plain = run_dse("run", spec, "--trials", "3", env={"DSE_STUDIES_DIR": str(tmp_path / "a")})
    loud = run_dse(
        "-v", "run", spec, "--trials", "3", env={"DSE_STUDIES_DIR": str(tmp_path / "b")}
    )
    assert plain.returncode == 0 and loud.returncode == 0
    assert "A new study created" not in plain.stderr
    assert "A new study created" in loud.stderr


def test_status_counts_add_up_with_queued_warm_start_designs(tmp_path: Path) -> None:
    """litegpu.yaml's warm start queues its best sweep designs (WAITING): after 30 trials the
    status says 30 finished and the rest waiting, and every count adds up."""
    env = {"DSE_STUDIES_DIR": str(tmp_path)}
    spec = str(SPACES / "litegpu.yaml")
    assert run_dse("run", spec, "--trials", "30", "--no-progress", env=env).returncode == 0
    info = json.loads(run_dse("status", "litegpu", "--json", env=env).stdout)
    s = info["states"]
    assert info["finished"] == 30 == s["COMPLETE"] + s.get("FAIL", 0) + s.get("PRUNED", 0)
    assert s.get("WAITING", 0) > 0 and "RUNNING" not in s
    assert 0 <= info["feasible"] <= s["COMPLETE"] and 0 < info["front_size"] <= info["feasible"]
    text = run_dse("status", "litegpu", env=env).stdout
    assert text.startswith(f"litegpu: 30 trials finished ({s['COMPLETE']} complete, ")
    assert f"; {s['WAITING']} waiting (queued designs" in text
    assert f"{info['feasible']} feasible" in text and f"front {info['front_size']}" in text
