"""The tool as someone who only installed the wheel uses it: built from this source, installed
in a fresh virtual environment (its dependencies taken from the running interpreter, nothing
downloaded but the build backend), then walked from an empty folder: init, presets, evaluate a
preset by name, run, pareto, report, with no repository in reach."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "dse", "objectives")


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 600):
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A venv holding only the built wheel; the dependencies come from this interpreter's
    site-packages through a .pth line (the wheel's own files shadow any other copy)."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    for name in SOURCES:  # a copy: building writes build/ and *.egg-info beside the sources
        p = ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(p, src / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DSE_STUDIES_DIR")}
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(base / "dist"), "."],
        cwd=src,
        env=env,
    )
    if built.returncode != 0 and "No matching distribution" in built.stderr:
        pytest.skip("the build backend (setuptools>=77) cannot be fetched here")
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (base / "dist").glob("litegpu_dse-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    installed = _run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
         "--no-index", str(wheel)],
        cwd=base,
        env=env,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-2000:]
    deps = sysconfig.get_paths()["purelib"]
    (purelib / "zz_dependencies.pth").write_text(deps + "\n", encoding="utf-8")
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return venv, env


@pytest.mark.slow
def test_the_tour_works_from_the_wheel_in_an_empty_folder(
    wheel_env: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    venv, env = wheel_env
    dse = str(venv / "bin" / "dse")
    work = tmp_path / "empty"
    work.mkdir()

    def dse_ok(*args: str) -> str:
        res = _run([dse, *args], cwd=work, env=env)
        assert res.returncode == 0, f"dse {' '.join(args)}: {res.stderr[-1500:]}"
        return res.stdout

    where = _run(
        [str(venv / "bin" / "python"), "-c", "import dse, objectives; print(dse.__file__, "
         "objectives.__file__)"],
        cwd=work,
        env=env,
    ).stdout  # fmt: skip
    assert str(ROOT) not in where and str(venv) in where, where  # the wheel, not this source

    dse_ok("init", "--examples")
    assert {p.name for p in work.glob("*.yaml")} == {
        "litegpu.yaml",
        "h100.yaml",
        "disagg-h200-b200.yaml",
    }
    assert "h100-sxm" in dse_ok("presets", "gpus")
    assert "llama3-70b" in dse_ok("presets", "models")
    assert "die_area_mm2" in dse_ok("params")
    one = dse_ok("evaluate", "h100-sxm", "--json")
    assert '"cost.usd_per_mtok"' in one
    dse_ok("evaluate", "h100.yaml", "--metric", "cost.usd_per_mtok")
    dse_ok("run", "litegpu.yaml", "--trials", "20", "-q")
    assert (work / "studies" / "litegpu" / "pareto.csv").is_file()
    assert "number" in dse_ok("pareto", "litegpu.yaml", "--format", "csv").splitlines()[0]
    dse_ok("report", "litegpu")
    assert (work / "studies" / "litegpu" / "report.html").is_file()
