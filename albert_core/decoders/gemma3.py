"""Gemma-3 text and EmbeddingGemma (transformers' Gemma3TextModel): four RMSNorms a layer (before and after each
sublayer), q/k norms, GeGLU, embeddings scaled by √H (a buffer, no parameter), local sliding-window layers between
global ones; EmbeddingGemma attends both ways (use_bidirectional_attention)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .decoder_family import DecoderFamily, attention_groups, final_norm, gated_mlp_groups, norm_rows, token_embedding
from .llama import KEYS

if TYPE_CHECKING:
    from ..families.base import ParamGroup
    from .decoder_fields import DecoderFields as DecoderConfig


def groups(c: DecoderConfig) -> list[ParamGroup]:
    return [token_embedding(c), *norm_rows(c, ("input_layernorm", "post_attention_layernorm"), "attention"),
            *attention_groups(c, c.attention_bias, c.attention_bias, qk_norm=True),
            *norm_rows(c, ("pre_feedforward_layernorm", "post_feedforward_layernorm"), "ffn"),
            *gated_mlp_groups(c, False), final_norm(c)]


FAMILY = DecoderFamily(
    name="gemma3_text", model_class="Gemma3TextModel",
    keys={**KEYS, "attention_bias": "attention_bias", "sliding_window": "sliding_window",
          "bidirectional": "use_bidirectional_attention"},
    defaults={"num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131072,
              "tie_word_embeddings": True, "attention_bias": False, "sliding_window": 4096,
              "use_bidirectional_attention": False},
    groups=groups, local_layers=True,
    notes=("embed_tokens is scaled by √hidden_size on the way in (a buffer, not a parameter)",),
)
