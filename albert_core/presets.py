"""Published configurations: BERT and ALBERT, and the popular encoders of every other family.

bert-base/large: the config.json of bert-{base,large}-uncased. bert-xlarge: ALBERT paper
(Lan et al., ICLR 2020) Table 1, H=2048, L=24, with the paper's FFN size 4H and H/64 heads.
albert-*: the config.json of albert-*-v2 (dropouts 0, hidden_act gelu_new).
The others: HUB_CONFIGS holds the parameter-relevant keys of each checkpoint's published config.json
(as on the Hugging Face Hub), parsed through hf.from_hf_config like an upload; tests build each with
Hugging Face and compare the totals.
"""

from __future__ import annotations

from typing import Any

from .config import ModelConfig
from .formats.hf import from_hf_config
from .names import FAMILIES


def _bert(name: str, hidden: int, layers: int, heads: int) -> ModelConfig:
    return ModelConfig(
        name=name, family="bert", vocab_size=30522, embedding_dim=hidden, hidden_dim=hidden,
        num_layers=layers, num_heads=heads, intermediate_dim=4 * hidden, dropout=0.1,
        attention_dropout=0.1, max_position=512, type_vocab_size=2, hidden_act="gelu",
        sharing="none", num_groups=1, inner_group_num=1,
    )


def _albert(name: str, hidden: int, layers: int, heads: int) -> ModelConfig:
    return ModelConfig(
        name=name, family="albert", vocab_size=30000, embedding_dim=128, hidden_dim=hidden,
        num_layers=layers, num_heads=heads, intermediate_dim=4 * hidden, dropout=0.0,
        attention_dropout=0.0, max_position=512, type_vocab_size=2, hidden_act="gelu_new",
        sharing="all", num_groups=1, inner_group_num=1,
    )


def _size(hidden: int, layers: int, heads: int, ffn: int) -> dict[str, int]:
    return {"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads, "intermediate_size": ffn}


_DROP = {"hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
_ROBERTA = {**_DROP, "max_position_embeddings": 514, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2,
            "type_vocab_size": 1, "layer_norm_eps": 1e-05}
_ELECTRA = {"model_type": "electra", **_DROP, "max_position_embeddings": 512, "type_vocab_size": 2,
            "vocab_size": 30522, "pad_token_id": 0, "layer_norm_eps": 1e-12}
_DEBERTA_V3 = {"model_type": "deberta-v2", **_DROP, "max_position_embeddings": 512, "relative_attention": True,
               "position_buckets": 256, "norm_rel_ebd": "layer_norm", "share_att_key": True,
               "pos_att_type": "p2c|c2p", "layer_norm_eps": 1e-07, "max_relative_positions": -1,
               "position_biased_input": False, "type_vocab_size": 0}
_MODERNBERT = {"model_type": "modernbert", "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 50281,
               "classifier_pooling": "mean", "cls_token_id": 50281, "embedding_dropout": 0.0, "eos_token_id": 50282,
               "global_attn_every_n_layers": 3, "global_rope_theta": 160000.0, "hidden_activation": "gelu",
               "local_attention": 128, "local_rope_theta": 10000.0, "max_position_embeddings": 8192,
               "mlp_bias": False, "mlp_dropout": 0.0, "norm_bias": False, "norm_eps": 1e-05, "pad_token_id": 50283,
               "position_embedding_type": "absolute", "sep_token_id": 50282, "vocab_size": 50368}
_MPNET = {"model_type": "mpnet", **_DROP, **_size(768, 12, 12, 3072), "vocab_size": 30527,
          "max_position_embeddings": 514, "relative_attention_num_buckets": 32, "pad_token_id": 1, "bos_token_id": 0,
          "eos_token_id": 2, "layer_norm_eps": 1e-05}

# preset name -> (Hub id, its config.json's keys)
HUB_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "roberta-base": ("FacebookAI/roberta-base",
                     {"model_type": "roberta", **_ROBERTA, **_size(768, 12, 12, 3072), "vocab_size": 50265}),
    "roberta-large": ("FacebookAI/roberta-large",
                      {"model_type": "roberta", **_ROBERTA, **_size(1024, 24, 16, 4096), "vocab_size": 50265}),
    "xlm-roberta-base": ("FacebookAI/xlm-roberta-base",
                         {"model_type": "xlm-roberta", **_ROBERTA, **_size(768, 12, 12, 3072), "vocab_size": 250002}),
    "xlm-roberta-large": ("FacebookAI/xlm-roberta-large",
                          {"model_type": "xlm-roberta", **_ROBERTA, **_size(1024, 24, 16, 4096), "vocab_size": 250002}),
    "distilbert-base-uncased": ("distilbert/distilbert-base-uncased", {
        "model_type": "distilbert", "activation": "gelu", "attention_dropout": 0.1, "dim": 768, "dropout": 0.1,
        "hidden_dim": 3072, "max_position_embeddings": 512, "n_heads": 12, "n_layers": 6, "pad_token_id": 0,
        "qa_dropout": 0.1, "seq_classif_dropout": 0.2, "sinusoidal_pos_embds": False, "tie_weights_": True,
        "vocab_size": 30522}),
    "electra-small-discriminator": ("google/electra-small-discriminator",
                                    {**_ELECTRA, **_size(256, 12, 4, 1024), "embedding_size": 128}),
    "electra-base-discriminator": ("google/electra-base-discriminator",
                                   {**_ELECTRA, **_size(768, 12, 12, 3072), "embedding_size": 768}),
    "electra-large-discriminator": ("google/electra-large-discriminator",
                                    {**_ELECTRA, **_size(1024, 24, 16, 4096), "embedding_size": 1024}),
    "deberta-v3-base": ("microsoft/deberta-v3-base", {**_DEBERTA_V3, **_size(768, 12, 12, 3072), "vocab_size": 128100}),
    "deberta-v3-large": ("microsoft/deberta-v3-large",
                         {**_DEBERTA_V3, **_size(1024, 24, 16, 4096), "vocab_size": 128100}),
    "mdeberta-v3-base": ("microsoft/mdeberta-v3-base",
                         {**_DEBERTA_V3, **_size(768, 12, 12, 3072), "vocab_size": 251000}),
    "ModernBERT-base": ("answerdotai/ModernBERT-base", {**_MODERNBERT, **_size(768, 22, 12, 1152)}),
    "ModernBERT-large": ("answerdotai/ModernBERT-large", {**_MODERNBERT, **_size(1024, 28, 16, 2624)}),
    "mpnet-base": ("microsoft/mpnet-base", _MPNET),
    "all-mpnet-base-v2": ("sentence-transformers/all-mpnet-base-v2", _MPNET),  # the sentence-transformers model
    "bert-base-multilingual-cased": ("google-bert/bert-base-multilingual-cased", {
        "model_type": "bert", **_DROP, **_size(768, 12, 12, 3072), "max_position_embeddings": 512,
        "pad_token_id": 0, "type_vocab_size": 2, "vocab_size": 119547, "directionality": "bidi",
        "pooler_fc_size": 768, "pooler_num_attention_heads": 12, "pooler_num_fc_layers": 3,
        "pooler_size_per_head": 128, "pooler_type": "first_token_transform", "layer_norm_eps": 1e-12}),
}

PRESETS: dict[str, ModelConfig] = {
    "bert-base": _bert("bert-base", 768, 12, 12),
    "bert-large": _bert("bert-large", 1024, 24, 16),
    "bert-xlarge": _bert("bert-xlarge", 2048, 24, 32),
    "albert-base": _albert("albert-base", 768, 12, 12),
    "albert-large": _albert("albert-large", 1024, 24, 16),
    "albert-xlarge": _albert("albert-xlarge", 2048, 24, 16),
    "albert-xxlarge": _albert("albert-xxlarge", 4096, 12, 64),
    **{name: from_hf_config(d).replace(name=name) for name, (_, d) in HUB_CONFIGS.items()},
}

DEFAULT_PRESET = "albert-base"


def preset_families() -> dict[str, list[str]]:
    """Family -> its presets, families in albert_core.names.FAMILIES order (for grouped selectors)."""
    return {f: [n for n, c in PRESETS.items() if c.family == f] for f in FAMILIES if any(
        c.family == f for c in PRESETS.values())}


PRESET_FAMILIES: dict[str, list[str]] = preset_families()
