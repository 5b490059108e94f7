"""The tests of tests/dse/inspect/test_sensitivity.py that run the ``dse`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_dse
from tests.dse.inspect.test_sensitivity import (
    DESIGN,
    spec,  # noqa: F401 (fixture)
)


@pytest.mark.slow
def test_cli_json_and_table(
    spec: Path,  # noqa: F811 (the fixture imported above)
) -> None:
    r = run_dse("sensitivity", str(spec), "--design", ",".join(DESIGN), "--json")
    assert r.returncode == 0, r.stderr
    payload = json.loads(r.stdout)
    assert payload["swings_from"].startswith("p10/p90")
    first = payload["metrics"]["cost.usd_per_mtok"][0]
    assert first["swing"] == pytest.approx(abs(first["metric_at_high"] - first["metric_at_low"]))
    r = run_dse("sensitivity", str(spec), "--set", DESIGN[0], "--set", DESIGN[1])
    assert r.returncode == 0, r.stderr
    assert "cost.usd_per_mtok" in r.stdout and "technology.wafer_cost_usd" in r.stdout
    bad = run_dse("sensitivity", str(spec), "--design", DESIGN[0])
    assert bad.returncode == 2 and "hbm_stacks_per_die" in bad.stderr
    bad = run_dse("sensitivity", str(spec), "--design", ",".join(DESIGN), "--metric", "cost.nope")
    assert bad.returncode == 2 and "unknown metric" in bad.stderr
