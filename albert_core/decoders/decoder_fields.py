"""DecoderFields: the fields of a decoder's shape, below the families that read them (decoder_family.py);
decoder_config.DecoderConfig adds the validation that reads the families' rules, as albert_core.config_fields and
config do for the encoders."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DecoderFields:
    """The shape of a decoder-only transformer, in the seeds' vocabulary where it has a word for it."""

    family: str  # config.json model_type: gpt2, llama, qwen2, qwen3, gemma3_text
    vocab_size: int  # V: rows of the token table (and of the output projection)
    hidden_dim: int  # H: the residual stream's width
    num_layers: int  # L
    num_heads: int  # query heads
    kv_heads: int  # key/value heads (grouped-query attention); num_heads where every head has its own
    head_dim: int  # d: one head's width; num_heads·d may differ from H (Qwen3, Gemma-3)
    intermediate_dim: int  # I: the FFN's inner width (each of gate and up in a gated FFN)
    max_position: int  # the longest sequence: GPT-2's position table has this many rows; RoPE models have none
    tied: bool = True  # tie_word_embeddings: the output projection is the token table, stored once
    attention_bias: bool = False  # bias on q, k, v and o (Llama, Qwen3, Gemma-3 attention_bias)
    mlp_bias: bool = False  # bias on gate, up and down (Llama's mlp_bias)
    sliding_window: int = 0  # a local layer's window (Gemma-3); 0: every layer attends to every earlier token
    global_every: int = 1  # every n-th layer is global, the others local (Gemma-3: 6, its sliding_window_pattern)
    bidirectional: bool = False  # no causal mask (EmbeddingGemma's use_bidirectional_attention)
    name: str = "decoder"
