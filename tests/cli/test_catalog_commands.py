"""``dse init``, ``dse presets``, ``dse params``, ``dse evaluate PRESET`` and a spec without
objectives: what a user of the installed package has without the repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from dse.cli.app import global_options_first
from dse.model import catalogs
from tests.cli.inprocess import run_in_process

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_examples_are_the_repository_specs() -> None:
    """objectives/examples/ is package data copied from spaces/: the two never drift."""
    shipped = catalogs.examples()
    assert set(shipped) == {"litegpu", "h100", "disagg-h200-b200"}
    for name, text in shipped.items():
        assert text == (ROOT / "spaces" / f"{name}.yaml").read_text(encoding="utf-8"), name


def test_init_writes_a_spec_that_validates_and_refuses_to_overwrite(tmp_path: Path) -> None:
    res = run_in_process("init", "mine", "--examples", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert {p.name for p in tmp_path.glob("*.yaml")} == {
        "mine.yaml",
        "litegpu.yaml",
        "h100.yaml",
        "disagg-h200-b200.yaml",
    }
    assert yaml.safe_load((tmp_path / "mine.yaml").read_text())["study"] == "mine"
    assert run_in_process("validate", "mine.yaml", cwd=tmp_path).returncode == 0
    before = (tmp_path / "h100.yaml").read_text()
    (tmp_path / "h100.yaml").write_text("# mine\n" + before)
    again = run_in_process("init", "other", "--examples", cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr
    assert not (tmp_path / "other.yaml").exists()  # nothing written unless everything can be
    assert (tmp_path / "h100.yaml").read_text().startswith("# mine")
    bad = run_in_process("init", "x", "--from", "litegpus", cwd=tmp_path)
    assert bad.returncode == 2 and "did you mean 'litegpu'" in bad.stderr


def test_presets_list_each_kind_and_one_preset_with_units_and_sources(tmp_path: Path) -> None:
    res = run_in_process("presets", "--json", cwd=tmp_path)
    listing = json.loads(res.stdout)
    assert set(listing) == {"gpus", "models", "nodes"}
    assert {"h100-sxm", "b200", "mi300x"} <= {r["name"] for r in listing["gpus"]}
    assert "llama3-70b" in {r["name"] for r in listing["models"]}
    assert {"n3", "n4", "n5", "n7"} == {r["name"] for r in listing["nodes"]}
    one = json.loads(run_in_process("presets", "GPU", "H100-SXM", "--json", cwd=tmp_path).stdout)
    area = next(r for r in one if r["field"] == "die_area_mm2")
    assert area["value"] == 814 and area["unit"] == "mm2" and "Hopper" in area["source"]
    node = json.loads(run_in_process("presets", "nodes", "n4", "--json", cwd=tmp_path).stdout)
    d0 = next(r for r in node if r["field"] == "defect_density_per_cm2")
    assert d0["value"] == 0.07 and d0["unit"] == "1/cm2" and d0["source"]
    bad = run_in_process("presets", "gpus", "h100", cwd=tmp_path)
    assert bad.returncode == 2 and "did you mean 'h100-sxm'" in bad.stderr


def test_params_lists_every_design_parameter_with_its_unit(tmp_path: Path) -> None:
    rows = json.loads(run_in_process("params", "--json", cwd=tmp_path).stdout)
    by_name = {r["name"]: r for r in rows}
    assert by_name["die_area_mm2"]["unit"] == "mm2"
    assert by_name["die_aspect_ratio"]["default"] == 1.0
    assert {"cluster_size", "optics_per_link", "link_type"} <= set(by_name)


def test_evaluate_a_preset_by_name_equals_its_spec(tmp_path: Path) -> None:
    """``dse evaluate h100-sxm`` is the 8-GPU H100 node of spaces/h100.yaml, workload aside."""
    spec = tmp_path / "node.yaml"
    spec.write_text("study: node\nfixed: {gpu: h100-sxm, technology: n4, cluster_size: 8}\n")
    by_name = json.loads(run_in_process("evaluate", "H100-SXM", "--json", cwd=tmp_path).stdout)
    by_file = json.loads(run_in_process("evaluate", str(spec), "--json", cwd=tmp_path).stdout)
    assert by_name["groups"] == by_file["groups"]
    assert by_name["objectives"] == {} and by_name["feasible"] is True
    miss = run_in_process("evaluate", "h100", cwd=tmp_path)
    assert miss.returncode == 2 and "did you mean 'h100-sxm'" in miss.stderr
    gone = run_in_process("evaluate", "nothere.yaml", cwd=tmp_path)
    assert gone.returncode == 2 and "nothere.yaml" in gone.stderr


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "s.yaml", "-q"], ["-q", "run", "s.yaml"]),
        (
            ["evaluate", "s.yaml", "--verbose", "--json"],
            ["--verbose", "evaluate", "s.yaml", "--json"],
        ),
        (["-q", "run", "s.yaml"], ["-q", "run", "s.yaml"]),
        (["run", "--", "-q"], ["run", "--", "-q"]),
    ],
)
def test_global_options_are_accepted_after_the_command(
    argv: list[str], expected: list[str]
) -> None:
    assert global_options_first(argv) == expected


@pytest.mark.slow
def test_a_spec_path_is_accepted_where_a_study_name_is(tmp_path: Path) -> None:
    from tests.conftest import run_dse

    spec = tmp_path / "tiny.yaml"
    spec.write_text(
        (ROOT / "spaces" / "litegpu.yaml").read_text().replace("study: litegpu", "study: tiny")
    )
    env = {"DSE_STUDIES_DIR": str(tmp_path / "studies")}
    ran = run_dse("run", str(spec), "--trials", "8", "-q", env=env, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    for cmd in ("status", "pareto"):
        res = run_dse(cmd, str(spec), env=env, cwd=tmp_path)
        assert res.returncode == 0 and "tiny" in res.stdout, (cmd, res.stderr)


def test_the_price_basis_is_said_above_the_numbers() -> None:
    """Once a design carries ``price_basis`` (cost or market), dse evaluate and dse run print
    which one their money figures rest on."""
    from objectives.catalog import headline

    assert headline({"price_basis": "cost"}).startswith("prices at cost")  # type: ignore[union-attr]
    assert "price_basis=market" in headline({"price_basis": "cost"})  # type: ignore[operator]
    assert headline({"price_basis": "market"}).startswith("prices at market")  # type: ignore[union-attr]
    assert headline({}) is None
    assert catalogs.headlines({"price_basis": "market"}) == [headline({"price_basis": "market"})]
