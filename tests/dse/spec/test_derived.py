"""``derived:`` design values computed from the searched ones (equal-compute cluster sizing)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dse import api
from dse.errors import SpecError
from dse.spec.expr import parse_expr
from tests.dse.spec.test_spec_errors import GOOD

EQUAL = GOOD.replace("  cluster_size: 64\n", "").replace(
    "constraints:", "derived:\n  cluster_size: 52096 // die_area_mm2\nconstraints:"
)


def _load(tmp_path: Path, text: str):  # noqa: ANN202 - a StudyModel
    p = tmp_path / "spec.yaml"
    p.write_text(text)
    return api.load(p)


def test_floor_division_in_expressions() -> None:
    assert parse_expr("7 // 2").evaluate({}) == 3.0
    np.testing.assert_array_equal(
        parse_expr("52096 // a").evaluate({"a": np.array([814.0, 203.5, 200.0])}), [64, 256, 260]
    )


def test_derived_value_reaches_the_models_scalar_and_vectorized(tmp_path: Path) -> None:
    model = _load(tmp_path, EQUAL)
    one = model.evaluate({"die_area_mm2": 203.5, "hbm_stacks_per_die": 3})
    # 256 GPUs of a replica of 2 (Llama-3-70B fp8 on 40 GB): blast radius 2 / 256
    assert model.design({"die_area_mm2": 203.5, "hbm_stacks_per_die": 3})["cluster_size"] == 256
    assert one["cost.installed_gpus"] == 256
    areas = np.array([814.0, 407.0, 203.5])
    many = model.evaluate({"die_area_mm2": areas, "hbm_stacks_per_die": np.array([5, 4, 3])})
    np.testing.assert_array_equal(many["cost.installed_gpus"], [64, 128, 256])
    assert many["cost.installed_gpus"][2] == one["cost.installed_gpus"]
    assert many["cost.usd_per_mtok"][2] == pytest.approx(
        float(one["cost.usd_per_mtok"]), rel=1e-12
    )


@pytest.mark.parametrize(
    ("derived", "expected"),
    [
        ("cluster_size: 52096 // die_aera_mm2", "unknown name 'die_aera_mm2'"),
        ("die_area_mm2: 2 * hbm_stacks_per_die", "cannot also be searched"),
        ("cluster_sise: 52096 // die_area_mm2", "unknown design parameter 'cluster_sise'"),
        ("cluster_size: max(1, die_area_mm2)", "function call is not allowed"),
    ],
)
def test_bad_derived_values_name_their_line_and_field(
    tmp_path: Path, derived: str, expected: str
) -> None:
    text = GOOD.replace("  cluster_size: 64\n", "").replace(
        "constraints:", f"derived:\n  {derived}\nconstraints:"
    )
    with pytest.raises(SpecError) as info:
        _load(tmp_path, text)
    (line,) = [str(p) for p in info.value.problems]
    assert f"spec.yaml:{text.splitlines().index('  ' + derived) + 1}: derived." in line
    assert expected in line
