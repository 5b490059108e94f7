"""The tests of tests/dse/model/test_evaluator_object.py that run the ``dse`` command."""

from __future__ import annotations

from pathlib import Path

import pytest

from dse.plugin import HOOKS
from tests.conftest import run_dse
from tests.dse.model.test_evaluator_object import _spec


@pytest.mark.slow
def test_a_typo_on_a_spec_evaluator_is_one_line(tmp_path: Path, studies_dir: Path) -> None:
    spec = _spec(tmp_path, "obj_mod:typo")
    res = run_dse("validate", str(spec), env={"DSE_STUDIES_DIR": str(studies_dir)})
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"{spec}:5: evaluators.mine: evaluator 'mine' (obj_mod:typo): unknown attribute "
        "'vectorised' (did you mean 'vectorized'? the hooks are: " + ", ".join(HOOKS) + ")"
    ], res.stderr
