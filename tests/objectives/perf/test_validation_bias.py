"""benchmarks/validation_bias.py: the step-time split it regresses on (studies/paper's
model_error.csv applies it; tests/cli/test_paper_findings.py holds FINDINGS.md to it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.bench_scripts import load

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def vb():
    return load("validation_bias")


@pytest.fixture(scope="module")
def data(vb):
    x, y, used = vb.rows()
    return x, y, used, vb.regress(x, y)


def test_the_split_adds_up_and_has_no_all_reduce_on_one_gpu(data) -> None:
    x, _, used, _ = data
    assert np.allclose(x.sum(axis=1), 1.0)
    assert np.all(x > -1e-9) and np.all(x < 1 + 1e-9)
    single = [i for i, r in enumerate(used) if r.tp == 1]
    assert single and np.all(np.abs(x[single, 3]) < 1e-12)  # all_reduce share
    multi = [i for i, r in enumerate(used) if isinstance(r.tp, int) and r.tp >= 4]
    assert np.all(x[multi, 3] > 0.05)


def test_the_split_by_hand_for_a_tiny_step(vb) -> None:
    """A step of fixed terms only: 3 + 1 + 2 (+ 4 of GEMM compute left) = 10 s."""
    parts = {"attention": 3.0, "all_reduce": 2.0, "overhead": 1.0, "gemm_memory": 0.0}

    def step(over: dict[str, float]) -> float:
        gone = [k for k, v in vb.FREE.items() if over == v]
        return 10.0 - (parts[gone[0]] if gone else 0.0)

    assert np.allclose(vb.shares(step), [0.4, 0.0, 0.3, 0.2, 0.1])
