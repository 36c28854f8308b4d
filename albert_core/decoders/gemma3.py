"""Gemma-3 text and EmbeddingGemma (transformers' Gemma3TextModel): four RMSNorms a layer (before and after each
sublayer), q/k norms, GeGLU, embeddings scaled by √H (a buffer, no parameter), local sliding-window layers between
global ones; EmbeddingGemma attends both ways (use_bidirectional_attention)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import decoder_family as df
from .llama import KEYS

if TYPE_CHECKING:
    from .decoder_family import Placed
    from .decoder_fields import DecoderFields as DecoderConfig


def modules(c: DecoderConfig) -> list[Placed]:
    return [df.token_embedding(c), *df.norm_modules(c, ("input_layernorm", "post_attention_layernorm"), "attention"),
            *df.attention_modules(c, c.attention_bias, c.attention_bias, qk_norm=True),
            *df.norm_modules(c, ("pre_feedforward_layernorm", "post_feedforward_layernorm"), "ffn"),
            *df.gated_mlp_modules(c, False), df.final_norm(c)]


FAMILY = df.DecoderFamily(
    name="gemma3_text", model_class="Gemma3TextModel",
    keys={**KEYS, "attention_bias": "attention_bias", "sliding_window": "sliding_window",
          "bidirectional": "use_bidirectional_attention"},
    defaults={"num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131072,
              "tie_word_embeddings": True, "attention_bias": False, "sliding_window": 4096,
              "use_bidirectional_attention": False},
    modules=modules, local_layers=True,
    notes=("embed_tokens is scaled by √hidden_size on the way in (a buffer, not a parameter)",),
)
