"""benchmarks/validation_bias.py: the step-time split it regresses on, and the figures
studies/paper/FINDINGS.md quotes from it."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from tests.bench_scripts import load

ROOT = Path(__file__).resolve().parents[2]


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


def _num(pattern: str, text: str) -> list[float]:
    m = re.search(pattern, text)
    assert m, pattern
    return [float(g) for g in m.groups()]


def test_findings_quote_the_current_figures(data, vb) -> None:
    """Regenerate the FINDINGS paragraph after a model change moves these (compared within
    the last printed digit: another machine's rounding may differ)."""
    _, _, _, fit = data
    text = " ".join((ROOT / "studies" / "paper" / "FINDINGS.md").read_text("utf-8").split())
    r2, scatter = _num(r"R\^2 ([\d.]+), ([\d.]+) % scatter left", text)
    assert r2 == pytest.approx(fit["r2"], abs=0.006)
    assert scatter == pytest.approx(100 * fit["sd"], abs=0.6)
    ar, ar_se = _num(r"over-predicted by ([\d.]+)x \(\+/- ([\d.]+) in log\)", text)
    assert ar == pytest.approx(math.exp(fit["beta"][3]), abs=0.006)
    assert ar_se == pytest.approx(math.sqrt(fit["cov"][3, 3]), abs=0.006)
    ratios = {}
    for phase in ("decode", "prefill"):
        h = float(vb.design_shares("h100", None, phase)[0] @ fit["beta"])
        for name, link in vb.DESIGNS[1:]:
            s = vb.design_shares(name, link, phase)[0]
            ratios[(name, phase)] = math.exp(float(s @ fit["beta"]) - h)
    lo, hi = _num(r"biased by x([\d.]+)-([\d.]+) for the shoreline-gain designs in decode", text)
    gain = [ratios[(n, "decode")] for n, _ in vb.DESIGNS[1:4]]
    assert lo == pytest.approx(min(gain), abs=0.0015) and hi == pytest.approx(
        max(gain), abs=0.0015
    )
    (quarter,) = _num(r"and by x([\d.]+) \(x[\d.]+\) for the quarter die", text)
    assert quarter == pytest.approx(ratios[("lite-quarter", "decode")], abs=0.0015)
