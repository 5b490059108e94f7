"""``dse schema`` accepts every documented spec form and types ``fixed``'s known fields."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
import yaml

from tests.conftest import ROOT, run_dse


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    res = run_dse("schema")
    assert res.returncode == 0, res.stderr
    schema = json.loads(res.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _readme_spec() -> dict:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## The study spec", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None
    return yaml.safe_load(block.group(1))


def test_readme_spec_and_every_example_spec_validate(validator) -> None:  # type: ignore[no-untyped-def]
    readme = _readme_spec()
    assert isinstance(readme["evaluators"], list)  # the list form
    assert not list(validator.iter_errors(readme))
    for path in sorted(ROOT.glob("spaces/**/*.yaml")):
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(spec, dict) or "objectives" not in spec:
            continue  # a preset file beside a spec
        errors = [e.message for e in validator.iter_errors(spec)]
        assert not errors, (path, errors[:3])
    both = dict(readme, evaluators={"cost": None, "mine": "my_pkg.metrics:tco_per_token"})
    assert not list(validator.iter_errors(both))  # the mapping form


def test_fixed_known_fields_are_typed(validator) -> None:  # type: ignore[no-untyped-def]
    fixed = validator.schema["properties"]["fixed"]["properties"]
    assert "h100-sxm" in fixed["gpu"]["anyOf"][0]["enum"]
    assert fixed["link_type"]["enum"] == ["electrical", "pluggable", "cpo"]
    assert "mm2" in fixed["die_area_mm2"]["description"]
    base = _readme_spec()
    for bad in ({"gpu": "h100-sx"}, {"link_type": "copper"}, {"technology": {"nosuch": 1}},
                {"workload": {"model": "llama9"}}, {"die_area_mm2": "big"}):  # fmt: skip
        spec = dict(base, fixed={**base.get("fixed", {}), **bad})
        assert list(validator.iter_errors(spec)), bad
