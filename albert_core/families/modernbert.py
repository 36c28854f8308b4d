"""ModernBERT (Warner et al. 2024): pre-LN, rotary positions (no table), gated FFN, no biases by default,
every n-th layer global attention and the others a local window.

Hugging Face: ModernBertConfig / ModernBertModel. Layer: attn_norm (nn.Identity in layer 0), attn.Wqkv
Linear(H, 3H), attn.Wo, mlp_norm, mlp.Wi Linear(H, 2I) (GLU: input and gate), mlp.Wo Linear(I, H);
biases per attention_bias / mlp_bias / norm_bias; embeddings.norm and final_norm.
"""

from __future__ import annotations

from typing import Any

from ..config import _short
from .base import ParamGroup, layer_norm, lin_shape, linear

NAME = "modernbert"
MODEL_TYPES = ("modernbert",)
FIELDS = ("attention_bias", "mlp_bias", "norm_bias", "global_attn_every_n_layers", "local_attention")
OWN_EMBEDDING_WIDTH = False
SEGMENT_TABLE = False
HEADS = "the MLM head of ModernBertForMaskedLM is not modelled; count the base model"

HF_KEYS = {
    "vocab_size": "vocab_size", "hidden_dim": "hidden_size", "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads", "intermediate_dim": "intermediate_size", "dropout": "mlp_dropout",
    "attention_dropout": "attention_dropout", "max_position": "max_position_embeddings",
    "hidden_act": "hidden_activation", "attention_bias": "attention_bias", "mlp_bias": "mlp_bias",
    "norm_bias": "norm_bias", "local_attention": "local_attention",
    "global_attn_every_n_layers": "global_attn_every_n_layers",
}
HF_DEFAULTS = {"hidden_activation": "gelu", "max_position_embeddings": 8192, "mlp_dropout": 0.0,
               "attention_dropout": 0.0, "attention_bias": False, "mlp_bias": False, "norm_bias": False,
               "local_attention": 128, "global_attn_every_n_layers": 3}
REQUIRED = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
REFUSED = {
    "is_decoder": ((False, None), "decoder mode is not modelled; set it to false"),
    "add_cross_attention": ((False, None), "cross-attention layers are not modelled; set it to false"),
}


def validate(c: Any) -> list[str]:
    return []


def groups(c: Any, n_att: int, n_ffn: int) -> list[ParamGroup]:
    V, H, I = c.vocab_size, c.hidden_dim, c.intermediate_dim
    ab, mb, nb = c.attention_bias, c.mlp_bias, c.norm_bias
    norm = f"{'2×' if nb else ''}{H}"
    return [
        ParamGroup("embedding", "embeddings", "embeddings.tok_embeddings", f"{V}×{H}", V * H, 1),
        ParamGroup("embedding", "embeddings", "embeddings.norm", norm, layer_norm(H, nb), 1),
        # layer 0's attn_norm is nn.Identity (the embedding norm precedes it)
        ParamGroup("layers", "attention", "attn_norm (not in layer 0)", norm, layer_norm(H, nb), n_att - 1),
        ParamGroup("layers", "attention", "attn.Wqkv", lin_shape(H, 3 * H, ab), linear(H, 3 * H, ab), n_att),
        ParamGroup("layers", "attention", "attn.Wo", lin_shape(H, H, ab), linear(H, H, ab), n_att),
        ParamGroup("layers", "ffn", "mlp_norm", norm, layer_norm(H, nb), n_ffn),
        ParamGroup("layers", "ffn", "mlp.Wi (input and gate)", lin_shape(H, 2 * I, mb), linear(H, 2 * I, mb), n_ffn),
        ParamGroup("layers", "ffn", "mlp.Wo", lin_shape(I, H, mb), linear(I, H, mb), n_ffn),
        ParamGroup("layers", "final_norm", "final_norm", norm, layer_norm(H, nb), 1),
    ]


def sizes(c: Any, n_att: Any, n_ffn: Any) -> tuple[Any, Any, Any, Any]:
    H, I, nb = c.hidden_dim, c.intermediate_dim, c.norm_bias
    att = layer_norm(H, nb) + linear(H, 3 * H, c.attention_bias) + linear(H, H, c.attention_bias)
    ffn = layer_norm(H, nb) + linear(H, 2 * I, c.mlp_bias) + linear(I, H, c.mlp_bias)  # GLU: Shazeer 2020
    all_layers = att * n_att - layer_norm(H, nb) + ffn * n_ffn + layer_norm(H, nb)  # no norm in layer 0; final_norm
    return c.vocab_size * H + layer_norm(H, nb), att + ffn, all_layers, 0 * H


def from_hf(d: dict[str, Any], kw: dict[str, Any], problems: list[str]) -> None:
    kw["type_vocab_size"] = 0
    kw["embedding_dim"] = kw.get("hidden_dim", 1)
    emb_drop = d.get("embedding_dropout", 0.0)
    if emb_drop != d.get("mlp_dropout", 0.0):
        problems.append(f"embedding_dropout={_short(emb_drop)} is not supported: it is modelled as equal to "
                        "mlp_dropout (the one hidden dropout); make them equal")
    types = d.get("layer_types")
    if types is not None and "num_layers" in kw and "global_attn_every_n_layers" in kw:
        n = kw["global_attn_every_n_layers"]
        expected = ["sliding_attention" if i % n else "full_attention" for i in range(kw["num_layers"])]
        if types != expected:
            problems.append(f"layer_types is not supported unless every {n}-th layer (from layer 0) is "
                            "full_attention and the others sliding_attention (global_attn_every_n_layers); "
                            "remove the key or make it match")


def to_hf(c: Any) -> dict[str, Any]:
    return {"embedding_dropout": c.dropout, "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0,
            "cls_token_id": 0, "sep_token_id": 0}


def hf_classes(heads: bool) -> tuple[Any, Any]:
    from transformers import ModernBertConfig, ModernBertModel

    return ModernBertConfig, ModernBertModel
