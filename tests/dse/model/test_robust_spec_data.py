"""Robust settings as spec data (issue 16, item 3): ``robust: {samples, statistic}`` makes
every entry point run the robust study, so ``--jobs`` workers run robust studies too."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dse import api
from dse.errors import SpecError
from dse.model.robust import RobustStudyModel
from tests.dse.model.test_robust import SPEC


def robust_spec(tmp_path: Path, **robust: object) -> Path:
    data = yaml.safe_load(SPEC)
    data["robust"] = robust
    path = tmp_path / "rob.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_spec_robust_section_compiles_to_the_robust_model(tmp_path: Path) -> None:
    model = api.load(robust_spec(tmp_path, samples=4, statistic="p90"))
    assert isinstance(model, RobustStudyModel)
    assert (model.k, model.statistic, model.spec.study) == (4, "p90", "rob-robust-p90-k4")
    # The command line's --robust takes precedence; a nominal load ignores both.
    assert api.load(robust_spec(tmp_path, samples=4), robust=(3, "mean")).k == 3
    assert not isinstance(
        api.load(robust_spec(tmp_path, samples=4), nominal=True), RobustStudyModel
    )


def test_bad_robust_settings_are_spec_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="robust.samples"):
        api.load(robust_spec(tmp_path, samples=1))
    with pytest.raises(SpecError, match="robust.statistic"):
        api.load(robust_spec(tmp_path, samples=4, statistic="median"))
