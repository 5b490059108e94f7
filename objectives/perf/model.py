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
    """A decoder-only transformer, with derived sizes in elements (not bytes).

    The optional fields (0 = absent) describe today's MoE models: an explicit attention head
    size (Qwen3, gpt-oss), shared experts beside the routed ones, dense layers among the MoE
    ones (DeepSeek's first three, Llama 4 Maverick's every other) with their own MLP size, and
    multi-head latent attention (MLA, DeepSeek-V2/V3): K and V compressed into one
    ``kv_lora_rank`` latent plus a ``qk_rope_head_dim`` rotary key per token, shared by all heads.
    A model without them keeps the original arithmetic, bit for bit.
    """

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int  # MLP inner size of one expert (of the dense MLP for a dense model)
    vocab: int
    ffn_matrices: int  # 3 for gated (SwiGLU) MLPs, 2 for plain GELU MLPs
    experts: int  # 1 for a dense model
    experts_per_token: int
    qk_head_dim: int = 0  # query/key head size (0: hidden / heads)
    v_head_dim: int = 0  # value head size (0: as qk_head_dim)
    shared_experts: int = 0  # experts every token also runs
    dense_layers: int = 0  # layers with a dense MLP in a MoE model
    dense_ffn: int = 0  # their MLP inner size (0: ffn)
    kv_lora_rank: int = 0  # MLA: compressed KV latent size (0: no MLA)
    q_lora_rank: int = 0  # MLA: compressed query size (0: full-rank query projection)
    qk_rope_head_dim: int = 0  # MLA: the decoupled rotary key, per token

    @property
    def legacy(self) -> bool:
        """No optional field set: the original arithmetic applies unchanged."""
        return not (
            self.qk_head_dim
            or self.v_head_dim
            or self.shared_experts
            or self.dense_layers
            or self.dense_ffn
            or self.kv_lora_rank
            or self.q_lora_rank
            or self.qk_rope_head_dim
        )

    @property
    def mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def head_dim(self) -> float:
        return self.qk_head_dim if self.qk_head_dim else self.hidden / self.heads

    @property
    def v_dim(self) -> float:
        return self.v_head_dim if self.v_head_dim else self.head_dim

    @property
    def attn_params(self) -> float:
        """Q and O are hidden x hidden; K and V are hidden x (kv_heads x head_dim).

        With an explicit head size Q is hidden x heads x head_dim and O heads x v_dim x hidden.
        MLA: Q through a q_lora_rank bottleneck, K and V from one kv_lora_rank latent plus a
        rotary key (kv_a), expanded per head (kv_b) to the non-rotary key and the value."""
        h = self.hidden
        if self.legacy:
            return 2 * h * h + 2 * h * self.kv_heads * self.head_dim
        if self.mla:
            q_out = self.heads * self.head_dim
            q = h * self.q_lora_rank + self.q_lora_rank * q_out if self.q_lora_rank else h * q_out
            kv_a = h * (self.kv_lora_rank + self.qk_rope_head_dim)
            nope = self.head_dim - self.qk_rope_head_dim
            kv_b = self.kv_lora_rank * self.heads * (nope + self.v_dim)
            return q + kv_a + kv_b + self.heads * self.v_dim * h
        q = h * self.heads * self.head_dim
        kv = h * self.kv_heads * (self.head_dim + self.v_dim)
        return q + kv + self.heads * self.v_dim * h

    @property
    def lora_params_per_rank(self) -> float:
        """Trainable weights of one layer's LoRA adapters per unit of rank: r x (in + out) for
        each linear projection (q, k, v, o and the MLP's matrices; Hu et al., ICLR 2022). Dense,
        non-MLA layers only (``lora_refusal`` says why not for the others)."""
        h, q_out, v_out = self.hidden, self.heads * self.head_dim, self.heads * self.v_dim
        attn = (h + q_out) + 2 * h + self.kv_heads * (self.head_dim + self.v_dim) + (v_out + h)
        return attn + self.ffn_matrices * (h + (self.dense_ffn or self.ffn))

    @property
    def lora_refusal(self) -> str:
        """Why LoRA is not modelled for this model ('' when it is): adapters on routed experts
        and on MLA's latent projections have no agreed placement to count."""
        if self.experts > 1:
            return "mixture-of-experts models (adapters on routed experts)"
        if self.mla:
            return "MLA attention (adapters on its latent projections)"
        return ""

    @property
    def expert_params(self) -> float:
        return self.ffn_matrices * self.hidden * self.ffn

    @property
    def dense_mlp_params(self) -> float:
        return self.ffn_matrices * self.hidden * (self.dense_ffn or self.ffn)

    @property
    def router_params(self) -> float:
        return self.hidden * self.experts if self.experts > 1 else 0.0

    @property
    def moe_fraction(self) -> float:
        """Share of the layers that are MoE layers (1 for an all-MoE model, 0 for a dense one)."""
        if self.experts <= 1:
            return 0.0
        return (self.layers - self.dense_layers) / self.layers

    @property
    def layer_params(self) -> float:
        """Stored weights of one layer (all experts; the mean layer when dense and MoE mix)."""
        if self.legacy:
            return self.attn_params + self.experts * self.expert_params + self.router_params
        f = self.moe_fraction
        moe = (self.experts + self.shared_experts) * self.expert_params + self.router_params
        return self.attn_params + f * moe + (1 - f) * self.dense_mlp_params

    @property
    def layer_active_params(self) -> float:
        """Weights one token multiplies through in one layer (the mean layer)."""
        if self.legacy:
            return (
                self.attn_params + self.experts_per_token * self.expert_params + self.router_params
            )
        f = self.moe_fraction
        k = self.experts_per_token + self.shared_experts
        moe = k * self.expert_params + self.router_params
        return self.attn_params + f * moe + (1 - f) * self.dense_mlp_params

    @property
    def mlp_active_ffn(self) -> float:
        """MLP inner width one token's activations run through (the mean layer)."""
        if self.legacy:
            return self.experts_per_token * self.ffn
        f = self.moe_fraction
        k = self.experts_per_token + self.shared_experts if self.experts > 1 else 1
        return f * k * self.ffn + (1 - f) * (self.dense_ffn or self.ffn)

    @property
    def embedding_params(self) -> float:
        return self.vocab * self.hidden

    @property
    def total_params(self) -> float:
        """Layers plus untied input embedding and LM head."""
        return self.layers * self.layer_params + 2 * self.embedding_params

    @property
    def kv_elems_per_token_layer(self) -> float:
        """K and V vectors stored per token per layer (MLA: the latent and the rotary key)."""
        if self.mla:
            return float(self.kv_lora_rank + self.qk_rope_head_dim)
        if self.legacy:
            return 2 * self.kv_heads * self.head_dim
        return self.kv_heads * (self.head_dim + self.v_dim)

    @property
    def attn_flops_per_key_head(self) -> float:
        """QK^T and AV FLOPs of one query against one key, per head. MLA runs absorbed (the
        kv_b expansion folded into Q and O, as FlashMLA decodes): scores over the latent and
        rotary key, values over the latent."""
        if self.mla:
            return 2.0 * (self.kv_lora_rank + self.qk_rope_head_dim) + 2.0 * self.kv_lora_rank
        if self.legacy:
            return 4 * self.head_dim
        return 2.0 * (self.head_dim + self.v_dim)

    def attn_flops_per_query(self, context: Any) -> Any:
        """QK^T and AV for one query token against ``context`` keys, one layer."""
        if self.legacy:
            return 4 * self.heads * self.head_dim * context
        return self.heads * self.attn_flops_per_key_head * context


_OPTIONAL = (
    "qk_head_dim",
    "v_head_dim",
    "shared_experts",
    "dense_layers",
    "dense_ffn",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
)


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
            **{k: int(model.get(k) or 0) for k in _OPTIONAL},
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
    if not 0 <= arch.dense_layers < arch.layers or (arch.dense_layers and arch.experts <= 1):
        msg = "must be below layers, and only in a mixture-of-experts model"
        raise ContextError("workload.model.dense_layers", msg)
    if arch.mla and arch.qk_rope_head_dim >= arch.head_dim:
        msg = "MLA's rotary key must be smaller than qk_head_dim"
        raise ContextError("workload.model.qk_rope_head_dim", msg)
    return arch
