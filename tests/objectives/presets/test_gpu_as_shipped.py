"""`--set gpu=X` evaluates X as it ships, on every shipped spec; the preset check holds HBM
stacks to their generation.

A GPU preset carries its technology node; the shipped specs do not pin another one, so a GPU
swapped in keeps its own node (an MI355X is an N3 part: 5,033 dense FP8 TFLOPS, not the 3,691
it would be on the H100's N4). A spec that pins another node is evaluated on it, with a
warning naming both.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import yaml

from objectives.cost import evaluate_cost
from objectives.params import PARAMS
from objectives.perf import evaluate_perf
from objectives.presets import NodeMismatchWarning, PresetError, catalog, resolve_context
from tests.conftest import ROOT, run_dse
from tests.objectives.presets.test_gpu_presets import DATASHEET


def _shipped_specs() -> list[Path]:
    """The shipped example specs that fix a GPU (spaces/paper reproduces the paper's own
    N4 designs and pins its node on purpose)."""
    out = []
    for path in sorted((ROOT / "spaces").rglob("*.yaml")):
        if "paper" in path.parts or "presets" in path.parts:
            continue
        fixed = (yaml.safe_load(path.read_text()) or {}).get("fixed") or {}
        if "gpu" in fixed:
            out.append(path)
    return out


SPECS = _shipped_specs()


def test_the_shipped_specs_are_found():
    names = {p.name for p in SPECS}
    assert {"h100.yaml", "litegpu.yaml"} <= names


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: str(p.relative_to(ROOT)))
@pytest.mark.parametrize("gpu", list(DATASHEET))
def test_every_preset_through_every_shipped_spec_is_as_it_ships(spec, gpu):
    fixed = dict((yaml.safe_load(spec.read_text()) or {})["fixed"])
    fixed["gpu"] = gpu
    fixed["workload"] = {**(fixed.get("workload") or {}), "precision": "fp8"}
    with warnings.catch_warnings():
        warnings.simplefilter("error", NodeMismatchWarning)  # no shipped spec pins a node
        d = resolve_context(fixed, spec_dir=spec.parent)
    node = catalog().gpus[gpu].get("technology") or "n4"
    assert d["technology"]["name"] == node
    tflops = float(evaluate_perf(d)["tflops_per_gpu"])
    redesigned = [k for k in fixed if k in PARAMS and k != "cluster_size"]
    if not redesigned:  # the GPU as it ships: its datasheet
        assert tflops == pytest.approx(DATASHEET[gpu][1], rel=0.02)
    else:  # the spec changes the GPU (e.g. CPO links): that GPU, on the node it ships on
        own = resolve_context({**fixed, "technology": node}, spec_dir=spec.parent)
        assert tflops == float(evaluate_perf(own)["tflops_per_gpu"])


def test_a_spec_pinning_another_node_warns_naming_both():
    with pytest.warns(NodeMismatchWarning, match=r"'mi355x' ships on technology 'n3'.*'n4'"):
        d = resolve_context({"gpu": "mi355x", "technology": "n4"})
    assert d["technology"]["name"] == "n4"  # what the spec asked for
    with warnings.catch_warnings():
        warnings.simplefilter("error", NodeMismatchWarning)
        resolve_context({"gpu": "mi355x", "technology": "n3"})  # its own node: silent
        resolve_context({"gpu": "mi355x"})


@pytest.mark.slow
def test_cli_mi355x_on_the_h100_spec_gives_its_datasheet_fp8():
    r = run_dse(
        "evaluate",
        "spaces/h100.yaml",
        "--set",
        "gpu=mi355x",
        "--set",
        "workload.precision=fp8",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    tflops = json.loads(r.stdout)["metrics"]["perf.tflops_per_gpu"]
    assert tflops == pytest.approx(5033.2, rel=0.02)  # AMD MI355X datasheet, dense FP8
    assert "NodeMismatchWarning" not in r.stderr


def _user_gpu(tmp_path: Path, base: str = "h200", **fields: object) -> Path:
    """A folder beside a spec with one user GPU preset, ``base``'s fields with ``fields``."""
    preset = {k: v for k, v in catalog().gpus[base].items() if k not in ("description",)}
    preset.update(fields)
    lines = ["my-gpu:", "  description: a user's GPU", f"  technology: {preset.pop('technology')}"]
    lines += [f'  {k}: {{value: {v}, unit: "-", source: "test"}}' for k, v in preset.items()]
    (tmp_path / "presets").mkdir()
    (tmp_path / "presets" / "gpus.yaml").write_text("\n".join(lines) + "\n")
    return tmp_path


def _refused(tmp_path: Path, base: str = "h200", **fields: object) -> str:
    """The preset check's message for a user GPU preset it refuses."""
    with pytest.raises(PresetError) as err:
        resolve_context({"gpu": "my-gpu"}, spec_dir=_user_gpu(tmp_path, base, **fields))
    return str(err.value)


def test_preset_check_refuses_36_gb_hbm3e_stacks(tmp_path):
    text = _refused(tmp_path, hbm_gb_per_stack=36, hbm_generation="hbm3e")
    assert "gpus.yaml:" in text and "my-gpu.hbm_gb_per_stack" in text
    assert "exceeds hbm3e's 24 GB" in text and "hbm3e-12hi holds it" in text


def test_preset_check_takes_36_gb_as_12_high(tmp_path):
    spec_dir = _user_gpu(tmp_path, hbm_gb_per_stack=36, hbm_generation="hbm3e-12hi")
    assert resolve_context({"gpu": "my-gpu"}, spec_dir=spec_dir)["hbm_gb_per_stack"] == 36


def test_preset_check_refuses_a_stack_beyond_every_generation(tmp_path):
    text = _refused(tmp_path, hbm_gb_per_stack=96, hbm_generation="auto")
    assert "beyond every HBM generation" in text


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: str(p.relative_to(ROOT)))
@pytest.mark.parametrize("gpu", list(DATASHEET))
def test_every_preset_through_every_shipped_spec_passes_the_physical_checks(spec, gpu):
    """A GPU that ships can be made: its die fits one scanner field, its interposer its
    packaging, its stacks their generation. (Until 2026-12-04 every Blackwell preset's 800 mm2
    die at aspect 1.18 was 26.04 mm wide, so `--set gpu=b200` and the shipped H200 -> B200
    example were infeasible on the default constraints.)"""
    fixed = dict((yaml.safe_load(spec.read_text()) or {})["fixed"])
    fixed["gpu"] = gpu
    m = evaluate_cost(resolve_context(fixed, spec_dir=spec.parent))
    checks = ["reticle_fits", "hbm_fits_generation", "interposer_fits"]
    if [k for k in fixed if k in PARAMS and k != "cluster_size"]:
        # The spec redesigns the GPU (co-packaged optics on its interposer): the die and the
        # stacks are the preset's, the interposer may outgrow its packaging (an MI300X's is
        # at CoWoS-S's 2,700 mm2 already), which interposer_fits then reports.
        checks.pop()
    assert {k: float(m[k]) for k in checks} == dict.fromkeys(checks, 1.0)


def test_preset_check_refuses_a_die_off_the_scanner_field(tmp_path):
    # 800 mm2 at 1.18: sqrt(800 / 1.18) = 26.04 mm > 26; it fits for 800/26^2 = 1.1834 up to
    # 33^2/800 = 1.3612, printed inward (1.184-1.361) so both printed ends fit.
    text = _refused(tmp_path, "b200", die_area_mm2=800, die_aspect_ratio=1.18)
    assert "gpus.yaml:" in text and "my-gpu.die_aspect_ratio" in text
    assert "26.04 x 30.72 mm" in text and "fits at aspect 1.184-1.361" in text


def test_preset_check_refuses_a_die_larger_than_the_field(tmp_path):
    text = _refused(tmp_path, "b200", die_area_mm2=900, die_aspect_ratio=1.2)
    assert "my-gpu.die_area_mm2: 900 mm2 is larger than the 26 x 33 mm scanner field" in text


def test_every_builtin_preset_passes_the_generation_check():
    assert len(catalog().gpus) >= len(DATASHEET)  # the check runs as the catalog is read


def test_technology_auto_is_the_gpus_node_and_takes_overrides():
    d = resolve_context({"gpu": "mi300x", "technology": {"preset": "auto", "pue": 1.5}})
    assert d["technology"]["name"] == "n5" and d["technology"]["pue"] == 1.5
    assert resolve_context({"gpu": "mi355x", "technology": "auto"})["technology"]["name"] == "n3"


@pytest.mark.slow
def test_cli_pinned_node_warns_and_set_technology_still_works():
    r = run_dse(
        "evaluate", "spaces/h100.yaml", "--set", "gpu=mi355x", "--set", "technology=n4",
        "--set", "workload.precision=fp8", "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "'mi355x' ships on technology 'n3' but the spec pins 'n4'" in r.stderr
    assert json.loads(r.stdout)["metrics"]["perf.tflops_per_gpu"] < 0.8 * 5033.2
