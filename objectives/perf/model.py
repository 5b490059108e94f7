"""Transformer architecture arithmetic: parameters, FLOPs and bytes per layer.

Counts follow the usual decoder layout (Q/K/V/O projections, gated or plain MLP, optional
mixture of experts); they are exact for the matrix multiplications and ignore norms, biases and
rotary embeddings (< 0.1 % of the work). Tests check them against hand computation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from objectives.errors import ContextError

_REQUIRED = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")


@dataclass(frozen=True)
class Arch:
    """A decoder-only transformer, with derived sizes in elements (not bytes)."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    ffn_matrices: int  # 3 for gated (SwiGLU) MLPs, 2 for plain GELU MLPs
    experts: int  # 1 for a dense model
    experts_per_token: int

    @property
    def head_dim(self) -> float:
        return self.hidden / self.heads

    @property
    def attn_params(self) -> float:
        """Q and O are hidden x hidden; K and V are hidden x (kv_heads x head_dim)."""
        return 2 * self.hidden * self.hidden + 2 * self.hidden * self.kv_heads * self.head_dim

    @property
    def expert_params(self) -> float:
        return self.ffn_matrices * self.hidden * self.ffn

    @property
    def router_params(self) -> float:
        return self.hidden * self.experts if self.experts > 1 else 0.0

    @property
    def layer_params(self) -> float:
        """Stored weights of one layer (all experts)."""
        return self.attn_params + self.experts * self.expert_params + self.router_params

    @property
    def layer_active_params(self) -> float:
        """Weights one token multiplies through in one layer."""
        return self.attn_params + self.experts_per_token * self.expert_params + self.router_params

    @property
    def embedding_params(self) -> float:
        return self.vocab * self.hidden

    @property
    def total_params(self) -> float:
        """Layers plus untied input embedding and LM head."""
        return self.layers * self.layer_params + 2 * self.embedding_params

    @property
    def kv_elems_per_token_layer(self) -> float:
        """K and V vectors stored per token per layer."""
        return 2 * self.kv_heads * self.head_dim

    def attn_flops_per_query(self, context: Any) -> Any:
        """QK^T and AV for one query token against ``context`` keys, one layer."""
        return 4 * self.heads * self.head_dim * context


def arch_of(model: Mapping[str, Any]) -> Arch:
    """Read a resolved model preset; missing MoE/MLP fields mean a dense SwiGLU model."""
    for key in _REQUIRED:
        if key not in model:
            raise ContextError(f"workload.model.{key}", "missing from the model preset")
    try:
        arch = Arch(
            layers=int(model["layers"]),
            hidden=int(model["hidden"]),
            heads=int(model["heads"]),
            kv_heads=int(model["kv_heads"]),
            ffn=int(model["ffn"]),
            vocab=int(model["vocab"]),
            ffn_matrices=int(model.get("ffn_matrices", 3)),
            experts=int(model.get("experts", 1)),
            experts_per_token=int(model.get("experts_per_token", 1)),
        )
    except (TypeError, ValueError) as exc:
        msg = f"architecture fields must be integers ({exc})"
        raise ContextError("workload.model", msg) from None
    if min(arch.layers, arch.hidden, arch.heads, arch.kv_heads, arch.ffn, arch.vocab) <= 0:
        raise ContextError("workload.model", "architecture sizes must be positive")
    if arch.heads % arch.kv_heads:
        raise ContextError("workload.model.kv_heads", "must divide heads")
    if not 1 <= arch.experts_per_token <= arch.experts:
        raise ContextError("workload.model.experts_per_token", "must be in 1..experts")
    return arch
