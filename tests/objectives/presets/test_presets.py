"""Preset files are validated data: schemas, ranges, node completeness and the user preset path."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from objectives.errors import ContextError
from objectives.fabric.topology import CHOICES
from objectives.params import PARAMS
from objectives.presets import (
    catalog,
    check_technology_fragments,
    resolve_context,
)
from objectives.presets.files import ENV_VAR, parse, search_dirs
from objectives.presets.schema import PARAM_TYPES, PresetError
from tests.conftest import ROOT

H100_FIELDS = {
    "description": "my test GPU",
    "technology": "n4",
    "die_area_mm2": 204,
    "die_aspect_ratio": 1.0,
    "dies_per_gpu": 1,
    "hbm_stacks_per_die": 2,
    "hbm_tbps_per_stack": 0.8,
    "hbm_gb_per_stack": 24,
    "links_per_gpu": 8,
    "optics_per_link": 2,
    "lane_gbps": 200,
    "link_type": "cpo",
    "clock_ghz": 1.83,
    "cooling": "air",
}
MODEL_FIELDS = {
    "description": "a small dense model",
    "params_b": 1.24,
    "layers": 16,
    "hidden": 2048,
    "heads": 32,
    "kv_heads": 8,
    "ffn": 8192,
    "vocab": 128256,
    "ffn_matrices": 3,
    "experts": 1,
    "experts_per_token": 1,
}


def _write(folder: Path, name: str, data: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _problems(folder: Path) -> list[str]:
    with pytest.raises(PresetError) as err:
        catalog((str(folder),))
    return [str(p) for p in err.value.problems]


def test_builtin_presets_pass_their_schemas() -> None:
    cat = catalog()
    assert {"n3", "n4", "n5", "n7"} <= set(cat.technology)
    assert {"h100-sxm", "h200"} <= set(cat.gpus)
    assert "llama3-70b" in cat.models
    # Every technology node has the same keys (complete in every fragment).
    keys = {node: set(t) for node, t in cat.technology.items()}
    assert len({frozenset(k) for k in keys.values()}) == 1


def test_every_design_parameter_has_a_range() -> None:
    missing = sorted(set(PARAMS) - set(PARAM_TYPES))
    assert not missing, f"add the physical range of {missing} to PARAM_TYPES"
    assert PARAM_TYPES["scaleup_fabric"].__args__ == CHOICES


def test_unknown_gpu_key_is_an_error_with_its_line_and_a_did_you_mean(tmp_path: Path) -> None:
    path = _write(tmp_path, "gpus.yaml", {"lite": {**H100_FIELDS, "die_area_mm": 204}})
    (msg,) = _problems(tmp_path)
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "die_area_mm:" in t)
    assert msg.startswith(f"{path}:{line}: lite.die_area_mm: unknown GPU field 'die_area_mm'")
    assert "did you mean 'die_area_mm2'?" in msg


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("die_area_mm2", 0, "greater than 0"),
        ("hbm_stacks_per_die", -1, "greater than or equal to 0"),
        ("hbm_stacks_per_die", 2.5, "whole number"),
        ("links_per_gpu", True, "whole number"),
        ("lane_gbps", "fast", "valid number"),
        ("link_type", "optical", "valid choices: electrical, pluggable, cpo"),
        ("cooling", "liquidd", "did you mean 'liquid'?"),
        ("technology", "n2", "unknown technology node 'n2'"),
    ],
)
def test_gpu_field_types_and_ranges(tmp_path: Path, field: str, value: object, fragment: str):
    _write(tmp_path, "gpus.yaml", {"lite": {**H100_FIELDS, field: value}})
    (msg,) = _problems(tmp_path)
    assert f"lite.{field}:" in msg and fragment in msg, msg


def test_gpu_preset_must_set_every_parameter_without_a_default(tmp_path: Path) -> None:
    body = {k: v for k, v in H100_FIELDS.items() if k != "clock_ghz"}
    _write(tmp_path, "gpus.yaml", {"lite": body})
    (msg,) = _problems(tmp_path)
    assert "lite.clock_ghz: missing" in msg


def test_entry_keys_are_checked(tmp_path: Path) -> None:
    body = {**H100_FIELDS, "clock_ghz": {"value": 1.8, "units": "GHz"}}
    _write(tmp_path, "gpus.yaml", {"lite": body})
    (msg,) = _problems(tmp_path)
    assert "lite.clock_ghz: unknown entry key 'units' (did you mean 'unit'?" in msg


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"kv_heads": 7}, "kv_heads (7) must divide heads (32)"),
        ({"experts_per_token": 2}, "experts_per_token (2) must be <= experts (1)"),
        ({"layers": 0}, "greater than or equal to 1"),
        ({"ffn_matrices": 4}, "valid choices: 2, 3"),
        ({"vocab_size": 10}, "did you mean 'vocab'?"),
    ],
)
def test_model_schema(tmp_path: Path, change: dict[str, object], fragment: str) -> None:
    _write(tmp_path, "models.yaml", {"tiny": {**MODEL_FIELDS, **change}})
    (msg,) = _problems(tmp_path)
    assert msg.startswith(str(tmp_path / "models.yaml")) and fragment in msg, msg


def _node(**change: object) -> dict[str, object]:
    n4 = catalog().technology["n4"]
    per_node = {"wafer_cost_usd", "defect_density_per_cm2", "tensor_tflops_per_mm2_ghz_bf16"}
    per_node |= {"compute_dynamic_w_per_mm2", "compute_static_w_per_mm2"}
    return {**{k: n4[k] for k in per_node}, **change}


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"wafer_cost_usd": -1}, "n2.wafer_cost_usd: input should be greater than or equal to 0"),
        ({"tensor_tflops_per_mm2_ghz_bf16": 0}, "greater than 0"),  # a density
        ({"hbm_usable_fraction": 1.5}, "n2.hbm_usable_fraction: input should be less than"),
        ({"yield_model": "murphey"}, "did you mean 'murphy'?"),
        ({"wafer_cost_us": 1}, "unknown technology field 'wafer_cost_us'"),
        ({"pue": float("nan")}, "n2.pue: input should be a finite number"),
    ],
)
def test_user_technology_node_ranges(tmp_path: Path, change: dict, fragment: str) -> None:
    _write(tmp_path, "technology.yaml", {"nodes": {"n2": _node(**change)}})
    problems = _problems(tmp_path)
    assert any(fragment in p for p in problems), problems


def test_user_technology_node_must_be_complete(tmp_path: Path) -> None:
    body = _node()
    del body["wafer_cost_usd"]
    _write(tmp_path, "technology.yaml", {"nodes": {"n2": body}})
    (msg,) = _problems(tmp_path)
    assert "node 'n2' lacks 'wafer_cost_usd'" in msg


def _fragment(tmp_path: Path, name: str, text: str):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return parse(path.read_text(), str(path))


def test_a_node_must_be_complete_in_every_technology_fragment(tmp_path: Path) -> None:
    silicon = _fragment(
        tmp_path,
        "silicon.yaml",
        """\
        common: {wafer_diameter_mm: {value: 300, unit: mm, source: SEMI M1}}
        nodes:
          n4: {wafer_cost_usd: 17000, defect_density_per_cm2: 0.07}
          n2: {wafer_cost_usd: 30000, defect_density_per_cm2: 0.1}
        """,
    )
    perf = _fragment(
        tmp_path,
        "performance.yaml",
        """\
        common: {pue: 1.2}
        nodes:
          n4: {tensor_tflops_per_mm2_ghz_bf16: 0.66}
        """,
    )
    with pytest.raises(PresetError) as err:
        check_technology_fragments([silicon, perf])
    (msg,) = [str(p) for p in err.value.problems]
    assert msg.startswith(f"{tmp_path / 'performance.yaml'}:2: nodes: node 'n2' is missing here")
    # A key owned by two fragments is refused too.
    perf2 = _fragment(tmp_path, "p2.yaml", "common: {wafer_diameter_mm: 200}\n")
    with pytest.raises(PresetError, match="also defined in"):
        check_technology_fragments([silicon, perf2])


def test_spec_overrides_obey_the_schema() -> None:
    with pytest.raises(ContextError) as err:
        resolve_context({"technology": {"preset": "n4", "defect_density_per_cm2": -0.1}})
    assert err.value.path == "technology.defect_density_per_cm2"
    with pytest.raises(ContextError) as err:
        resolve_context({"gpu": {"preset": "h100-sxm", "link_type": "copper"}})
    assert err.value.path == "gpu.link_type" and "valid choices" in err.value.message
    with pytest.raises(ContextError) as err:
        resolve_context({"workload": {"phase": "serving"}})
    assert err.value.path == "workload.phase" and "did you mean 'serve'?" in err.value.message


def test_user_presets_beside_the_spec_and_in_env(tmp_path: Path, monkeypatch) -> None:
    beside, env = tmp_path / "spec" / "presets", tmp_path / "env"
    _write(beside, "gpus.yaml", {"my-lite": H100_FIELDS})
    _write(env, "models.yaml", {"tiny-1b": MODEL_FIELDS})
    _write(env, "gpus.yaml", {"my-lite": {**H100_FIELDS, "die_area_mm2": 600}})
    monkeypatch.setenv(ENV_VAR, str(env))
    assert search_dirs(tmp_path / "spec") == (str(beside.resolve()), str(env.resolve()))
    ctx = resolve_context(
        {"gpu": "my-lite", "workload": {"model": "tiny-1b"}}, spec_dir=tmp_path / "spec"
    )
    assert ctx["die_area_mm2"] == 204  # the folder beside the spec wins over $DSE_PRESETS
    assert ctx["workload"]["model"]["layers"] == 16
    assert ctx["technology"]["name"] == "n4"
    # Without the spec's folder, $DSE_PRESETS alone.
    assert resolve_context({"gpu": "my-lite"})["die_area_mm2"] == 600
    monkeypatch.delenv(ENV_VAR)
    with pytest.raises(ContextError, match="unknown GPU preset 'my-lite'"):
        resolve_context({"gpu": "my-lite"})


def _spec(folder: Path, gpu: str, model: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "spec.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "study": "mine",
                "fixed": {"gpu": gpu, "workload": {"model": model}, "cluster_size": 64},
                "space": {"die_area_mm2": {"type": "float", "low": 150, "high": 800}},
                "objectives": [
                    {"metric": "cost.usd_per_mtok", "direction": "minimize"},
                    {"metric": "perf.tokens_per_s", "direction": "maximize"},
                ],
                "search": {"sampler": "random", "trials": 4, "seed": 0},
            }
        )
    )
    return path


def test_docs_describe_the_user_preset_path() -> None:
    text = (ROOT / "docs" / "presets.md").read_text()
    assert ENV_VAR in text and "presets/" in text


def test_every_builtin_constant_has_a_source_in_the_repo() -> None:
    from objectives.presets.files import builtin_files

    missing = []
    for kind in ("technology", "gpus", "models", "workload"):
        for pf in builtin_files(kind):
            stack = [((), pf.data)]
            while stack:
                loc, node = stack.pop()
                if isinstance(node, dict) and "value" in node:
                    if not str(node.get("source", "")).strip():
                        missing.append(f"{pf.path}: {'.'.join(loc)}")
                elif isinstance(node, dict):
                    stack += [((*loc, str(k)), v) for k, v in node.items()]
                elif loc and loc[-1] not in ("description", "technology"):
                    missing.append(f"{pf.path}: {'.'.join(loc)} (no {{value, source}})")
    assert not missing, missing
    # Citations point at primary sources or docs/sources.md, never at a file users don't have.
    private = "REFERENCE" + "_DATA"
    offenders = [
        str(p.relative_to(ROOT))
        for folder in ("objectives", "dse", "docs", "benchmarks", "tests", "spaces", "studies")
        for p in (ROOT / folder).rglob("*")
        if p.is_file() and p.suffix in (".py", ".md", ".yaml") and private in p.read_text()
    ]
    assert not offenders, offenders
    assert "Llama 3 Herd of Models" in (ROOT / "docs" / "sources.md").read_text()
