"""What every decoder family module is and uses (issue 54): the DecoderFamily record, the parameter rows of a
Llama-style layer, and the rules every decoder's config.json is checked by.

No torch here: sizes follow the PyTorch modules (nn.Linear: weight out×in + bias out; nn.Embedding: rows×width;
RMSNorm: one weight of its width; nn.LayerNorm: weight + bias; transformers' Conv1D: weight in×out + bias out).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..families.base import ParamGroup, Refusals, layer_norm, lin_shape, linear

if TYPE_CHECKING:
    from .decoder_fields import DecoderFields as DecoderConfig


@dataclass(frozen=True)
class DecoderFamily:
    """What differs between decoder families; each family module (gpt2.py, llama.py, ...) defines one, FAMILY."""

    name: str  # the config.json model_type it reads and writes
    model_class: str  # the base model transformers builds (AutoModel.from_config)
    # DecoderConfig field -> config.json key (the keys every message names)
    keys: dict[str, str]
    # config.json key -> transformers' default for this model_type (5.23), where the published configs may omit it
    defaults: dict[str, object]
    groups: Callable[[DecoderConfig], list[ParamGroup]]  # the base model's parameters, as transformers names them
    rope: bool = True  # rotary positions (rotate_half pairs a head's halves: head_dim must be even); GPT-2: learned
    head_dim_key: bool = True  # head_dim may be set apart from hidden / heads (Qwen3, Gemma-3, Llama's optional key)
    heads_divide_hidden: bool = True  # the config class refuses a hidden size the query heads do not divide
    refused: Refusals = field(default_factory=dict)  # config.json keys whose other values are not modelled
    local_layers: bool = False  # sliding-window layers between global ones (global_every, layer_types)
    notes: tuple[str, ...] = ()  # what `params` says beside this family's numbers


def rms_norm(n: int) -> int:
    """RMSNorm(n) in Llama, Qwen and Gemma: one weight of n, no bias (Zhang and Sennrich 2019, eq. 4)."""
    return n


def attention_groups(c: DecoderConfig, q_bias: bool, o_bias: bool, qk_norm: bool) -> list[ParamGroup]:
    """self_attn of Llama/Qwen/Gemma: q_proj H -> heads·d, k_proj and v_proj H -> kv_heads·d (grouped-query attention,
    Ainslie et al. 2023 Sec. 2), o_proj heads·d -> H; Qwen3 and Gemma-3 add an RMSNorm of d on q and on k."""
    H, L, d = c.hidden_dim, c.num_layers, c.head_dim
    q, kv = c.num_heads * d, c.kv_heads * d
    rows = [
        ParamGroup("layers", "attention", "self_attn.q_proj", lin_shape(H, q, q_bias), linear(H, q, q_bias), L),
        ParamGroup("layers", "attention", "self_attn.k_proj", lin_shape(H, kv, q_bias), linear(H, kv, q_bias), L),
        ParamGroup("layers", "attention", "self_attn.v_proj", lin_shape(H, kv, q_bias), linear(H, kv, q_bias), L),
        ParamGroup("layers", "attention", "self_attn.o_proj", lin_shape(q, H, o_bias), linear(q, H, o_bias), L),
    ]
    if qk_norm:
        rows += [ParamGroup("layers", "attention", f"self_attn.{n}_norm", f"{d}", rms_norm(d), L) for n in ("q", "k")]
    return rows


def gated_mlp_groups(c: DecoderConfig, bias: bool) -> list[ParamGroup]:
    """mlp of Llama/Qwen/Gemma: gate_proj and up_proj H -> I, down_proj I -> H (SwiGLU or GeGLU, Shazeer 2020)."""
    H, I, L = c.hidden_dim, c.intermediate_dim, c.num_layers
    return [
        ParamGroup("layers", "ffn", "mlp.gate_proj", lin_shape(H, I, bias), linear(H, I, bias), L),
        ParamGroup("layers", "ffn", "mlp.up_proj", lin_shape(H, I, bias), linear(H, I, bias), L),
        ParamGroup("layers", "ffn", "mlp.down_proj", lin_shape(I, H, bias), linear(I, H, bias), L),
    ]


def norm_rows(c: DecoderConfig, names: tuple[str, ...], sublayer: str) -> list[ParamGroup]:
    """One RMSNorm of H per layer for each name (input_layernorm, post_attention_layernorm, ...)."""
    H, L = c.hidden_dim, c.num_layers
    return [ParamGroup("layers", sublayer, n, f"{H}", rms_norm(H), L) for n in names]


def token_embedding(c: DecoderConfig, module: str = "embed_tokens") -> ParamGroup:
    """The token table V×H (nn.Embedding), which a tied output projection reads too."""
    return ParamGroup("embedding", "embeddings", module, f"{c.vocab_size}×{c.hidden_dim}",
                      c.vocab_size * c.hidden_dim, 1)


def final_norm(c: DecoderConfig, module: str = "norm", bias: bool = False) -> ParamGroup:
    """The norm after the last layer (norm, ln_f): the output projection reads its output."""
    H = c.hidden_dim
    return ParamGroup("final_norm", "final_norm", module, f"2×{H}" if bias else f"{H}",
                      layer_norm(H) if bias else rms_norm(H), 1)
