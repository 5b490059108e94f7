"""benchmarks/gemm_shapes.py: the per-GPU GEMM shapes a GPU session will time, by hand, and
the committed list is the one the model gives now."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.bench_scripts import load

ROOT = Path(__file__).resolve().parents[3]


def _gs():
    return load("gemm_shapes")


LLAMA3_70B = {"hidden": 8192, "heads": 64, "kv_heads": 8, "ffn": 28672}


def test_llama3_70b_tp8_slices_by_hand() -> None:
    """TP8: 8 query heads + 1 KV head of 128 per GPU; a gated MLP's 2 x 28,672 / 8 columns."""
    got = {g["gemm"]: (g["M"], g["N"], g["K"]) for g in _gs().layer_gemms(LLAMA3_70B, 8, 1605.3)}
    assert got == {
        "qkv": (1606, 8 * 128 + 2 * 128, 8192),
        "o": (1606, 8192, 1024),
        "gate_up": (1606, 7168, 8192),
        "down": (1606, 8192, 3584),
    }
    # past tp = kv_heads each GPU keeps a whole KV head
    qkv16 = _gs().layer_gemms(LLAMA3_70B, 16, 10)[0]
    assert qkv16["N"] == 4 * 128 + 2 * 128


def test_mixture_of_experts_gemms_run_at_the_routed_tokens() -> None:
    mixtral = {"hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336, "experts": 8,
               "experts_per_token": 2}  # fmt: skip
    got = {g["gemm"]: g["M"] for g in _gs().layer_gemms(mixtral, 2, 4000)}
    assert got == {"qkv": 4000, "o": 4000, "gate_up": 1000, "down": 1000}


def test_the_committed_shapes_are_the_models() -> None:
    """Regenerate with `python benchmarks/gemm_shapes.py shapes` after a model change (M may
    move by one where another machine rounds a step's tokens the other way)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))  # shapes() imports validate_perf
    try:
        now = _gs().shapes()
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    committed = json.loads((ROOT / "benchmarks" / "gemm_shapes.json").read_text("utf-8"))
    assert len(now) == len(committed)
    for a, b in zip(now, committed, strict=True):
        assert (a["gemm"], a["N"], a["K"], a["dtype"], a["source"], a["tp"]) == (
            b["gemm"], b["N"], b["K"], b["dtype"], b["source"], b["tp"]
        )  # fmt: skip
        assert abs(a["M"] - b["M"]) <= 1
