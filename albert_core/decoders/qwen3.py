"""Qwen3 and Qwen3-Embedding (transformers' Qwen3Model): Llama's layer with an RMSNorm over each head's q and k,
head_dim set apart from hidden / heads (128), no QKV bias unless attention_bias."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .decoder_family import DecoderFamily, attention_groups, final_norm, gated_mlp_groups, norm_rows, token_embedding
from .llama import KEYS

if TYPE_CHECKING:
    from ..families.base import ParamGroup
    from .decoder_fields import DecoderFields as DecoderConfig


def groups(c: DecoderConfig) -> list[ParamGroup]:
    return [token_embedding(c), *norm_rows(c, ("input_layernorm",), "attention"),
            *attention_groups(c, c.attention_bias, c.attention_bias, qk_norm=True),
            *norm_rows(c, ("post_attention_layernorm",), "ffn"), *gated_mlp_groups(c, False), final_norm(c)]


FAMILY = DecoderFamily(
    name="qwen3", model_class="Qwen3Model", keys={**KEYS, "attention_bias": "attention_bias"},
    defaults={"num_key_value_heads": 32, "head_dim": 128, "max_position_embeddings": 32768,
              "tie_word_embeddings": False, "attention_bias": False},
    groups=groups, heads_divide_hidden=False,
)
