"""Llama (Llama-3.2, SmolLM2; transformers' LlamaModel): RoPE, grouped-query attention, SwiGLU, RMSNorm before each
sublayer, no biases unless attention_bias / mlp_bias say so."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import decoder_family as df

if TYPE_CHECKING:
    from .decoder_family import Placed
    from .decoder_fields import DecoderFields as DecoderConfig

# the keys of a Llama-style config.json (Qwen2, Qwen3 and Gemma-3 read the same, each with its own extras)
KEYS = {"vocab_size": "vocab_size", "hidden_dim": "hidden_size", "num_layers": "num_hidden_layers",
        "num_heads": "num_attention_heads", "kv_heads": "num_key_value_heads", "head_dim": "head_dim",
        "intermediate_dim": "intermediate_size", "max_position": "max_position_embeddings",
        "tied": "tie_word_embeddings"}


def modules(c: DecoderConfig) -> list[Placed]:
    return [df.token_embedding(c), *df.norm_modules(c, ("input_layernorm",), "attention"),
            *df.attention_modules(c, c.attention_bias, c.attention_bias, qk_norm=False),
            *df.norm_modules(c, ("post_attention_layernorm",), "ffn"), *df.gated_mlp_modules(c, c.mlp_bias), df.final_norm(c)]


FAMILY = df.DecoderFamily(
    name="llama", model_class="LlamaModel",
    keys={**KEYS, "attention_bias": "attention_bias", "mlp_bias": "mlp_bias"},
    # transformers' LlamaConfig: key/value heads and head_dim follow the query heads unless set; it refuses a hidden size
    # the heads do not divide (validate_architecture), as GemmaConfig and GPT-2's attention do
    defaults={"max_position_embeddings": 2048, "tie_word_embeddings": False, "attention_bias": False,
              "mlp_bias": False},
    modules=modules,
)
