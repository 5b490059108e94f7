"""Records survive kills: trials.csv, trials.parquet, pareto.csv and spec.lock.yaml are each
either the previous complete file or the new complete one, never a truncated one."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

from tests.conftest import ROOT, run_dse

WIDE = '''
def wide(design):
    """Many metrics per design, so the records take a while to write."""
    a, b = float(design["a"]), float(design["b"])
    out = {f"m{i:02d}": a * i + b for i in range(40)}
    out["f1"], out["f2"] = a, 1.0 - a + b
    return out
'''

DRIVER = """
import sys
from pathlib import Path
from dse.results.records import write_records
from dse.search.stored import open_study
rec = open_study("wide")
directory = Path(sys.argv[1])
print("ready", flush=True)
while True:
    write_records(directory, rec.study, objectives=rec.objectives, maximize=rec.maximize)
"""


def wide_study(tmp_path: Path, studies_dir: Path, trials: int) -> Path:
    (tmp_path / "widemod.py").write_text(WIDE)
    spec = tmp_path / "wide.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "study": "wide",
                "space": {
                    "a": {"type": "float", "low": 0.0, "high": 1.0},
                    "b": {"type": "float", "low": 0.0, "high": 1.0},
                },
                "evaluators": {"w": "widemod:wide"},
                "objectives": [
                    {"metric": "w.f1", "direction": "minimize"},
                    {"metric": "w.f2", "direction": "minimize"},
                ],
                "search": {"sampler": "random", "trials": trials, "seed": 0},
            }
        )
    )
    res = run_dse("run", str(spec), "--no-progress", env={"DSE_STUDIES_DIR": str(studies_dir)})
    assert res.returncode == 0, res.stderr
    return spec


def _check_complete(directory: Path, trials: int, front: int) -> None:
    t = pd.read_csv(directory / "trials.csv")
    assert len(t) == trials and t["w.m39"].notna().all()
    assert len(pd.read_parquet(directory / "trials.parquet")) == trials
    assert len(pd.read_csv(directory / "pareto.csv")) == front
    assert yaml.safe_load((directory / "spec.lock.yaml").read_text())["study"] == "wide"


def test_kill_during_records_loop_never_leaves_a_torn_file(
    tmp_path: Path, studies_dir: Path
) -> None:
    trials = 400
    wide_study(tmp_path, studies_dir, trials)
    directory = studies_dir / "wide"
    front = len(pd.read_csv(directory / "pareto.csv"))
    rng = random.Random(0)
    env = {"DSE_STUDIES_DIR": str(studies_dir), "PYTHONPATH": str(ROOT)}
    for _ in range(30):
        proc = subprocess.Popen(
            [sys.executable, "-c", DRIVER, str(directory)],
            stdout=subprocess.PIPE,
            env={**os.environ, **env},
            cwd=ROOT,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.0, 0.6))
        proc.kill()
        proc.wait()
        _check_complete(directory, trials, front)
    # Dead writers' temporary files are cleaned by the next writer (here a real resume).
    res = run_dse("run", str(directory.parent.parent / "wide.yaml"), "--no-progress", env=env)
    assert res.returncode == 0, res.stderr
    _check_complete(directory, trials, front)
    assert not [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]
