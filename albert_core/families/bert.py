"""BERT (Devlin et al. 2019): token + position + segment tables H wide, post-LN layers, a pooler.

Hugging Face: BertConfig / BertModel (BertForPreTraining with the MLM and NSP heads). The breakdown
keeps the module names this project has always shown for BERT and ALBERT (ALBERT's spelling).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..replay import bert_replay
from .base import BERT_STYLE_REFUSED, MlmHead, OwnField, ParamGroup, Step, layer_norm, linear, position_id_buffers
from .modules import (
    Module,
    Sublayers,
    bert_embedding_modules,
    bert_sublayer_modules,
    lin,
    norm,
    param,
    stacked_prefix,
    tied,
)

if TYPE_CHECKING:
    from ..config_fields import ConfigFields

NAME = "bert"
MODEL_TYPES = ("bert",)
# peft 0.21.2's default LoRA targets for each model type (peft/utils/constants.py,
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING); None: peft has none and raises
LORA_TARGETS: dict[str, tuple[str, ...] | None] = {"bert": ("query", "value")}
FIELDS: dict[str, OwnField] = {}
OWN_EMBEDDING_WIDTH = False
SEGMENT_TABLE = True
HEADS = None  # MLM + NSP heads modelled

# ModelConfig field -> config.json key (BertConfig)
HF_KEYS = {
    "vocab_size": "vocab_size", "hidden_dim": "hidden_size", "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads", "intermediate_dim": "intermediate_size",
    "dropout": "hidden_dropout_prob", "attention_dropout": "attention_probs_dropout_prob",
    "max_position": "max_position_embeddings", "type_vocab_size": "type_vocab_size", "hidden_act": "hidden_act",
}
HF_DEFAULTS = {"type_vocab_size": 2, "max_position_embeddings": 512, "hidden_act": "gelu",
               "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
REQUIRED = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
REFUSED = BERT_STYLE_REFUSED


def validate(c: ConfigFields) -> list[str]:
    return []


def embedding_groups(c: ConfigFields) -> list[ParamGroup]:
    V, E, P, T = c.vocab_size, c.embedding_dim, c.max_position, c.type_vocab_size
    return [
        ParamGroup("embedding", "embeddings", "word_embeddings", f"{V}×{E}", V * E, 1),
        ParamGroup("embedding", "embeddings", "position_embeddings", f"{P}×{E}", P * E, 1),
        ParamGroup("embedding", "embeddings", "token_type_embeddings", f"{T}×{E}", T * E, 1),
        ParamGroup("embedding", "embeddings", "embeddings.LayerNorm", f"2×{E}", layer_norm(E), 1),
    ]


def layer_groups(c: ConfigFields, n_att: int, n_ffn: int) -> list[ParamGroup]:
    H, I = c.hidden_dim, c.intermediate_dim
    return [
        ParamGroup("layers", "attention", "attention.query", f"{H}×{H} + {H}", linear(H, H), n_att),
        ParamGroup("layers", "attention", "attention.key", f"{H}×{H} + {H}", linear(H, H), n_att),
        ParamGroup("layers", "attention", "attention.value", f"{H}×{H} + {H}", linear(H, H), n_att),
        ParamGroup("layers", "attention", "attention.dense", f"{H}×{H} + {H}", linear(H, H), n_att),
        ParamGroup("layers", "attention", "attention.LayerNorm", f"2×{H}", layer_norm(H), n_att),
        ParamGroup("layers", "ffn", "ffn (intermediate)", f"{H}×{I} + {I}", linear(H, I), n_ffn),
        ParamGroup("layers", "ffn", "ffn_output", f"{I}×{H} + {H}", linear(I, H), n_ffn),
        ParamGroup("layers", "ffn", "ffn.LayerNorm", f"2×{H}", layer_norm(H), n_ffn),
        ParamGroup("pooler", "pooler", "pooler.dense", f"{H}×{H} + {H}", linear(H, H), 1),
    ]


def groups(c: ConfigFields, n_att: int, n_ffn: int) -> list[ParamGroup]:
    return embedding_groups(c) + layer_groups(c, n_att, n_ffn)


def sizes(c: ConfigFields, n_att: int, n_ffn: int) -> tuple[int, int, int, int]:
    """(embedding, per_layer, all_layers, pooler); plain arithmetic, so numpy arrays work too."""
    V, E, H, I = c.vocab_size, c.embedding_dim, c.hidden_dim, c.intermediate_dim
    embedding = (V + c.max_position + c.type_vocab_size) * E + layer_norm(E)
    attention = 4 * linear(H, H) + layer_norm(H)  # Q, K, V, output dense + LayerNorm
    ffn = linear(H, I) + linear(I, H) + layer_norm(H)  # Vaswani et al. 2017 Sec. 3.3 + LayerNorm
    return embedding, attention + ffn, attention * n_att + ffn * n_ffn, linear(H, H)


def heads_groups(c: ConfigFields) -> list[ParamGroup]:
    """BertLMPredictionHead: transform H→H, LayerNorm(H), decoder tied, bias V; NSP classifier H→2."""
    H, V = c.hidden_dim, c.vocab_size
    return [
        ParamGroup("heads", "mlm_head", "predictions.transform.dense", f"{H}×{H} + {H}", linear(H, H), 1),
        ParamGroup("heads", "mlm_head", "predictions.transform.LayerNorm", f"2×{H}", layer_norm(H), 1),
        ParamGroup("heads", "mlm_head", "predictions.bias (decoder weight tied)", f"{V}", V, 1),
        ParamGroup("heads", "nsp_head", "seq_relationship", f"{H}×2 + 2", linear(H, 2), 1),
    ]


def heads_size(c: ConfigFields) -> int:
    H = c.hidden_dim
    return linear(H, H) + layer_norm(H) + c.vocab_size + linear(H, 2)


def from_hf(d: dict[str, object], kw: dict[str, Any], problems: list[str]) -> None:
    """Family-specific keys of a config.json into kw (the common ones are already there)."""


def to_hf(c: ConfigFields) -> dict[str, object]:
    return {}


def hf_classes(heads: bool) -> tuple[type, type]:
    from transformers import BertConfig, BertForPreTraining, BertModel

    return BertConfig, (BertForPreTraining if heads else BertModel)


# ---- activation replay and inference peak: BERT's op sequences (albert_core/replay/bert_replay.py), shared with ALBERT ----
replay_embeddings = bert_replay.replay_embeddings
replay_layer = bert_replay.replay_layer
replay_pooler = bert_replay.replay_pooler
weight_copy_elements = bert_replay.weight_copy_elements
infer_embeddings = bert_replay.infer_embeddings
infer_layer = bert_replay.infer_layer
infer_pooler = bert_replay.infer_pooler
cast_sizes = bert_replay.cast_sizes


# The modules Hugging Face builds (transformers modeling_bert.py, each module's __init__): albert_core.estimate.hf_modules
BASE_PREFIX = "bert"  # BertForMaskedLM.bert, BertForSequenceClassification.bert, ...
POOLER_DROPPED_FOR = ("token", "mlm")  # BertForTokenClassification, BertForMaskedLM: add_pooling_layer=False
embedding_modules = bert_embedding_modules


def layer_prefix(c: ConfigFields, owner: int, j: int) -> str:
    return stacked_prefix("encoder.layer.", c, owner, j)


def sublayer_modules(c: ConfigFields, p: str, first: bool) -> Sublayers:
    return bert_sublayer_modules(c, p)


def other_modules(c: ConfigFields) -> list[Module]:
    return [lin("pooler.dense", c.hidden_dim, c.hidden_dim)]


def head_modules(c: ConfigFields, head: str, num_labels: int) -> list[Module]:
    H, V = c.hidden_dim, c.vocab_size
    if head == "mlm":  # BertOnlyMLMHead; decoder.bias is cls.predictions.bias
        return [param("cls.predictions.bias", V), lin("cls.predictions.transform.dense", H, H),
                norm("cls.predictions.transform.LayerNorm", H), tied("cls.predictions.decoder", H, V, False)]
    return [lin("classifier", H, num_labels)]  # on the pooled [CLS] (classification) or on every token


# The training step (albert_core.step.peak)
STEP = Step("backward", pooler="pooler.dense", mlm=MlmHead(  # BertOnlyMLMHead
    "cls.predictions.transform.dense", None, "cls.predictions.transform.LayerNorm", "cls.predictions.decoder",
    "cls.predictions.bias"))


def buffer_bytes(c: ConfigFields, float_bytes: int) -> int:
    return position_id_buffers(c, 2)  # position_ids and token_type_ids


if TYPE_CHECKING:  # this module against the contract (mypy): a missing or mistyped name is a type error here
    from . import bert as _this
    from .base import Family, Heads, Inference

    _family: Family = _this
    _heads: Heads = _this
    _inference: Inference = _this
