"""The running batch's mean context under spread answer lengths (round 13).

A sequence holds its batch slot for its whole answer, so the batch a decode step sees holds
answers in proportion to their length (the inspection paradox): with mean L and coefficient of
variation cv the mean answer length seen is E[L^2] / E[L] = L (1 + cv^2), half-way through on
average, so a step reads S + L (1 + cv^2) / 2 tokens of context per sequence, not S + L / 2.
"""

from __future__ import annotations

import numpy as np
import pytest

from objectives.perf import evaluate_perf
from objectives.perf.rounds import running_context
from objectives.presets import resolve_context


def _decode(input_tokens: int, output_tokens: int, cv: float, **wl: object) -> dict[str, float]:
    d = resolve_context({"gpu": "h100-sxm", "cluster_size": 8, "workload": {
        "model": "llama3-70b", "precision": "fp8", "phase": "decode", "tp": 8, "batch": 64,
        "input_tokens": input_tokens, "output_tokens": output_tokens, "output_tokens_cv": cv,
        **wl}})  # fmt: skip
    m = evaluate_perf(d)
    return {k: float(m[k]) for k in ("tpot_s", "tokens_per_s")}


class _W:
    def __init__(self, s: object, out: object, cv: object) -> None:
        self.input_tokens, self.output_tokens, self.output_tokens_cv = s, out, cv


def test_by_hand_and_broadcast():
    # DeepSeek-R1 MLPerf set: 804-token prompts, 3,700-token answers of cv 1.253
    assert running_context(_W(804, 3700, 1.253)) == pytest.approx(804 + 3700 * 2.570009 / 2)
    assert running_context(_W(804, 3700, 0.0)) == 804 + 1850  # one length: S + L / 2
    # exponential answers (cv 1): the mean answer seen is twice the mean, S + L
    cvs = np.array([0.0, 0.5, 1.0, 2.0])
    got = running_context(_W(100.0, 200.0, cvs))
    assert np.allclose(got, [200.0, 225.0, 300.0, 600.0])
    assert all(running_context(_W(100.0, 200.0, c)) == g for c, g in zip(cvs, got, strict=True))


def test_a_decode_step_with_spread_answers_is_one_of_a_longer_prompt():
    """cv 1 doubles the answer part of the context: the decode round of 1,000-token prompts
    and 2,000-token answers of cv 1 is, exactly, the round of 2,000-token prompts and answers
    of one length (a pinned batch of 64; a decode step's work depends on the context alone)."""
    spread, longer = _decode(1000, 2000, 1.0), _decode(2000, 2000, 0.0)
    assert spread == longer
    assert _decode(1000, 2000, 0.0)["tpot_s"] < spread["tpot_s"]  # reads less KV cache


def test_spread_only_slows_and_zero_is_the_fixed_length_model():
    t = [_decode(1000, 2000, cv)["tpot_s"] for cv in (0.0, 0.5, 1.0, 1.5)]
    assert t == sorted(t) and len(set(t)) == 4
