"""Qwen3 and Qwen3-Embedding (transformers' Qwen3Model): Llama's layer with an RMSNorm over each head's q and k,
head_dim set apart from hidden / heads (128), no QKV bias unless attention_bias."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import decoder_family as df
from .llama import KEYS

if TYPE_CHECKING:
    from .decoder_family import Placed
    from .decoder_fields import DecoderFields as DecoderConfig


def modules(c: DecoderConfig) -> list[Placed]:
    return [df.token_embedding(c), *df.norm_modules(c, ("input_layernorm",), "attention"),
            *df.attention_modules(c, c.attention_bias, c.attention_bias, qk_norm=True),
            *df.norm_modules(c, ("post_attention_layernorm",), "ffn"), *df.gated_mlp_modules(c, False), df.final_norm(c)]


FAMILY = df.DecoderFamily(
    name="qwen3", model_class="Qwen3Model", keys={**KEYS, "attention_bias": "attention_bias"},
    defaults={"num_key_value_heads": 32, "head_dim": 128, "max_position_embeddings": 32768,
              "tie_word_embeddings": False, "attention_bias": False},
    modules=modules, heads_divide_hidden=False,
)
