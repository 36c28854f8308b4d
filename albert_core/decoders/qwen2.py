"""Qwen2 and Qwen2.5 (transformers' Qwen2Model): Llama's layer with a bias on q, k and v (always: no config key)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import decoder_family as df
from .llama import KEYS

if TYPE_CHECKING:
    from .decoder_family import Placed
    from .decoder_fields import DecoderFields as DecoderConfig


def modules(c: DecoderConfig) -> list[Placed]:
    return [df.token_embedding(c), *df.norm_modules(c, ("input_layernorm",), "attention"),
            *df.attention_modules(c, q_bias=True, o_bias=False, qk_norm=False),
            *df.norm_modules(c, ("post_attention_layernorm",), "ffn"), *df.gated_mlp_modules(c, False), df.final_norm(c)]


FAMILY = df.DecoderFamily(
    name="qwen2", model_class="Qwen2Model", keys=KEYS,
    # transformers' Qwen2Config: 32 key/value heads where the key is absent (null: one per query head)
    defaults={"num_key_value_heads": 32, "max_position_embeddings": 32768, "tie_word_embeddings": False},
    modules=modules, heads_divide_hidden=False,
    refused={"use_sliding_window": ((False, None), "Qwen2's sliding-window layers are not modelled; set it to false "
                                                   "(the published Qwen2.5 configs do)")},
    notes=("q_proj, k_proj and v_proj carry a bias, o_proj none (Qwen2Attention)",),
)
