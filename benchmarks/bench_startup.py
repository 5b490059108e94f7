"""Start-up cost of the ``dse`` command, as CPU-time ratios measured in one run.

Each command runs as a fresh subprocess ``--repeat`` times; its CPU time (user + system, from
``getrusage(RUSAGE_CHILDREN)``) is taken per run and the median kept, so a busy machine slows
every row alike. Rows:

- ``python -c pass``: the interpreter alone;
- ``import typer, rich``: the floor of any typer + rich CLI (the reference of the ratios);
- ``minimal typer app --help``: one command, rich help: what typer's own help formatting
  (``typer.rich_utils``, which imports rich.markdown) costs any app;
- ``dse --help``: target <= 2.5x the reference;
- ``dse evaluate SPEC --json``: one design end to end; its *start-up* is that minus the
  evaluation itself, measured as the CPU of the same evaluation repeated inside one warm
  process (``dse.api.evaluate`` after a first call).

Bytecode is cached as in an installed package (pip compiles ``.pyc`` files at install): the
runs share one ``PYTHONPYCACHEPREFIX`` folder, ``PYTHONDONTWRITEBYTECODE`` is unset, and each
row runs once unmeasured first. (A source tree run with ``PYTHONDONTWRITEBYTECODE=1``, as on the
development VM, compiles every ``dse``/``objectives`` module on every start; measured on
``dse evaluate`` that stayed within the noise, 1.06 s against 1.10 s cached.)

``--against REV`` runs the same rows on a git revision (checked out to a temporary worktree,
imported through ``PYTHONPATH`` with this interpreter's packages) so old and new start-up are
compared in the same run::

    python benchmarks/bench_startup.py --repeat 7 --against c655ac8
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = "spaces/h100.yaml"

MINIMAL_APP = """
import typer
app = typer.Typer()
@app.command()
def hello(name: str = "x") -> None:
    print(name)
@app.command()
def bye() -> None:
    pass
app()
"""

WARM_EVAL = """
import time
from dse import api
model, params = api.load_for_evaluate({spec!r}, [])
api.evaluate(model, params)
t0 = time.process_time()
for _ in range(5):
    api.evaluate(model, params)
print((time.process_time() - t0) / 5)
"""


def cpu_s(argv: list[str], *, env: dict[str, str], cwd: Path) -> float:
    """CPU seconds (user + system) of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def dse_argv(*args: str) -> list[str]:
    # The console script is `dse.cli:main`; `-c` runs the same import path without depending
    # on where the script was installed (and works for an --against worktree).
    return [sys.executable, "-c", "from dse.cli import main; main()", *args]


ROWS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import typer, rich": [sys.executable, "-c", "import typer, rich.console"],
    "minimal typer app --help": [sys.executable, "-c", MINIMAL_APP, "--help"],
    "dse --help": dse_argv("--help"),
    # a bare name keeps the study folder (none is written) and output paths identical
    "dse evaluate": dse_argv("evaluate", SPEC, "--json"),
}


def tree_env(tree: Path, pycache: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "NO_COLOR": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache / tree.name)
    return env


def measure(trees: list[Path], repeat: int, pycache: Path) -> list[dict[str, float]]:
    """Per tree, the median CPU of each row. The runs are interleaved (each repetition runs
    every row of every tree once), so a change of load mid-run moves every tree alike."""
    envs = [tree_env(t, pycache) for t in trees]
    for tree, env in zip(trees, envs, strict=True):  # writes the bytecode caches; not measured
        for argv in ROWS.values():
            cpu_s(argv, env=env, cwd=tree)
    samples: list[dict[str, list[float]]] = [{n: [] for n in ROWS} for _ in trees]
    for _ in range(repeat):
        for tree, env, got in zip(trees, envs, samples, strict=True):
            for n, argv in ROWS.items():
                got[n].append(cpu_s(argv, env=env, cwd=tree))
    out = []
    for tree, env, got in zip(trees, envs, samples, strict=True):
        rows = {n: statistics.median(v) for n, v in got.items()}
        warm = subprocess.run(
            [sys.executable, "-c", WARM_EVAL.format(spec=SPEC)],
            env=env,
            cwd=tree,
            check=True,
            capture_output=True,
            text=True,
        )
        rows["evaluation itself (warm)"] = float(warm.stdout.split()[-1])
        rows["dse evaluate start-up"] = rows["dse evaluate"] - rows["evaluation itself (warm)"]
        out.append(rows)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=7, help="runs per row (median kept)")
    ap.add_argument("--against", help="also measure this git revision (e.g. main~3)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if not args.against:
            results = {"this tree": measure([ROOT], args.repeat, Path(tmp))[0]}
        else:
            old = Path(tmp) / "old"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), args.against],
                check=True,
                capture_output=True,
            )
            try:
                new_rows, old_rows = measure([ROOT, old], args.repeat, Path(tmp))
            finally:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                    check=True,
                    capture_output=True,
                )
            results = {"this tree": new_rows, args.against: old_rows}
    ref = results["this tree"]["import typer, rich"]
    names = list(results["this tree"])
    print(f"median CPU s of {args.repeat} runs; ratio to 'import typer, rich' of this tree")
    print(f"{'':28}" + "".join(f"{k:>26}" for k in results))
    for n in names:
        cells = "".join(f"{r[n]:>16.3f} ({r[n] / ref:5.2f}x)" for r in results.values())
        print(f"{n:28}{cells}")
    if args.against:
        new, old = results["this tree"], results[args.against]
        for n in ("dse --help", "dse evaluate", "dse evaluate start-up"):
            print(f"{n}: this tree / {args.against} = {new[n] / old[n]:.2f}")


if __name__ == "__main__":
    main()
