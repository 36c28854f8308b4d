"""ELECTRA (Clark et al., ICLR 2020) discriminator: BERT's layers behind a factorized embedding, no pooler.

Hugging Face: ElectraConfig / ElectraModel. The tables are embedding_size (E) wide; embeddings_project
Linear(E, H) exists only when E != H (electra-small: E=128, H=256; base and large: E = H).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..replay import bert_replay
from ..replay.symbolic import Replay, Tensor, sz
from . import bert
from .base import (
    BERT_STYLE_REFUSED,
    MlmHead,
    OwnField,
    ParamGroup,
    Step,
    bert_layer_groups,
    bert_layer_sizes,
    layer_norm,
    lin_shape,
    linear,
    position_id_buffers,
)
from .modules import Module, bert_embedding_modules, lin, norm, tied

if TYPE_CHECKING:
    from ..config_fields import ConfigFields
    from ..replay.liveness import Infer

NAME = "electra"
MODEL_TYPES = ("electra",)
# peft 0.21.2's default LoRA targets for each model type (peft/utils/constants.py,
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING); None: peft has none and raises
LORA_TARGETS: dict[str, tuple[str, ...] | None] = {"electra": ("query", "value")}
FIELDS: dict[str, OwnField] = {}
OWN_EMBEDDING_WIDTH = True
SEGMENT_TABLE = True
HEADS = "the discriminator/generator heads of ELECTRA's pretraining are not modelled; count the base model"

HF_KEYS = dict(bert.HF_KEYS, embedding_dim="embedding_size")
HF_DEFAULTS = {"type_vocab_size": 2, "max_position_embeddings": 512, "hidden_act": "gelu",
               "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "embedding_size": 128}
REQUIRED = bert.REQUIRED
REFUSED = BERT_STYLE_REFUSED


def validate(c: ConfigFields) -> list[str]:
    return []


def groups(c: ConfigFields, n_att: int, n_ffn: int) -> list[ParamGroup]:
    V, E, H, P, T = c.vocab_size, c.embedding_dim, c.hidden_dim, c.max_position, c.type_vocab_size
    g = [
        ParamGroup("embedding", "embeddings", "embeddings.word_embeddings", f"{V}×{E}", V * E, 1),
        ParamGroup("embedding", "embeddings", "embeddings.position_embeddings", f"{P}×{E}", P * E, 1),
        ParamGroup("embedding", "embeddings", "embeddings.token_type_embeddings", f"{T}×{E}", T * E, 1),
        ParamGroup("embedding", "embeddings", "embeddings.LayerNorm", f"2×{E}", layer_norm(E), 1),
    ]
    if E != H:  # ElectraModel: embeddings_project only when embedding_size != hidden_size
        g.append(ParamGroup("embedding", "embeddings", "embeddings_project", lin_shape(E, H), linear(E, H), 1))
    return g + bert_layer_groups(c, n_att, n_ffn)


def sizes(c: ConfigFields, n_att: int, n_ffn: int) -> tuple[int, int, int, int]:
    E, H = c.embedding_dim, c.hidden_dim
    embedding = (c.vocab_size + c.max_position + c.type_vocab_size) * E + layer_norm(E) + (E != H) * linear(E, H)
    att, ffn = bert_layer_sizes(c)
    return embedding, att + ffn, att * n_att + ffn * n_ffn, 0  # no pooler


def from_hf(d: dict[str, object], kw: dict[str, Any], problems: list[str]) -> None:
    pass


def to_hf(c: ConfigFields) -> dict[str, object]:
    return {"embedding_size": c.embedding_dim, "pad_token_id": 0}


def hf_classes(heads: bool) -> tuple[type, type]:
    from transformers import ElectraConfig, ElectraModel

    return ElectraConfig, ElectraModel


# ---- activation replay (albert_core/replay/symbolic.py): ElectraModel's ops and what they save ---------------------
def replay_embeddings(r: Replay, cfg: ConfigFields) -> Tensor:
    """ElectraEmbeddings (BERT's, E wide: token_type_ids a (1, S) gather, position_ids a view of the (1, P)
    buffer), then embeddings_project when embedding_size differs from hidden_size."""
    types = sz(s=1) if cfg.type_vocab_size else None
    return bert_replay.embeddings(r, cfg, types, sz(one=cfg.max_position), cfg.embedding_dim != cfg.hidden_dim)


def replay_layer(r: Replay, cfg: ConfigFields, x: Tensor, attention: str) -> Tensor:
    """ElectraLayer: BertLayer's ops, dropout after both sublayers."""
    return bert_replay.layer(r, cfg, x, attention, True, True)


def replay_pooler(r: Replay, cfg: ConfigFields, y: Tensor) -> None:
    """ElectraModel has no pooler."""


def weight_copy_elements(cfg: ConfigFields, checkpointing: bool) -> int:
    """Autocast's 16-bit weight copies that Linear layers save: the layers' and embeddings_project's."""
    E, H = cfg.embedding_dim, cfg.hidden_dim
    return bert_replay.layer_weight_copies(cfg, checkpointing) + (E * H if E != H else 0)


# ---- inference peak (albert_core/replay/liveness.py): ElectraModel's eval forward, allocations and frees ----------
def infer_embeddings(f: Infer, cfg: ConfigFields) -> tuple[int, int]:
    """ElectraEmbeddings: BertEmbeddings' allocations, E wide; embeddings_project (E ≠ H) rebinds
    hidden_states, so the E-wide output dies there and the projection lives until the encoder returns."""
    emb, _ = bert_replay.infer_embeddings(f, cfg)  # not factorized: no ALBERT projection there
    if cfg.embedding_dim == cfg.hidden_dim:
        return emb, emb
    x = f.linear(emb, cfg.embedding_dim, cfg.hidden_dim, "mapping")
    f.free(emb)
    return x, x


def infer_layer(f: Infer, cfg: ConfigFields, x: int, j: int) -> int:
    """ElectraLayer: BertLayer's allocations and frees."""
    return bert_replay.infer_layer(f, cfg, x, j)


def infer_pooler(f: Infer, cfg: ConfigFields, x: int) -> None:
    """ElectraModel has no pooler."""


def cast_sizes(cfg: ConfigFields) -> dict[str, int]:
    """Elements of one stored copy's autocast casts (weights and biases) per sublayer, as BERT's."""
    return bert_replay.cast_sizes(cfg)


# The modules Hugging Face builds (transformers modeling_electra.py, each module's __init__): albert_core.estimate.hf_modules
BASE_PREFIX = "electra"
POOLER_DROPPED_FOR: tuple[str, ...] = ()  # no pooler
embedding_modules = bert_embedding_modules  # E wide
layer_prefix = bert.layer_prefix  # ElectraLayer: BertLayer's modules and names
sublayer_modules = bert.sublayer_modules


def other_modules(c: ConfigFields) -> list[Module]:
    return [lin("embeddings_project", c.embedding_dim, c.hidden_dim)] if c.embedding_dim != c.hidden_dim else []


def head_modules(c: ConfigFields, head: str, num_labels: int) -> list[Module]:
    V, E, H = c.vocab_size, c.embedding_dim, c.hidden_dim
    if head == "classification":  # ElectraClassificationHead
        return [lin("classifier.dense", H, H), lin("classifier.out_proj", H, num_labels)]
    if head == "mlm":  # ElectraForMaskedLM: the generator's head, E wide
        return [norm("generator_predictions.LayerNorm", E), lin("generator_predictions.dense", H, E),
                tied("generator_lm_head", E, V, True)]
    return [lin("classifier", H, num_labels)]


# The training step (albert_core.step.peak)
STEP = Step(
    "backward", parameter_order=((r"(^|\.)embeddings_project\.", r"(^|\.)embeddings\."),),  # before the encoder
    projection="embeddings_project", projection_rebinds=True, classifier="gelu",
    mlm=MlmHead("generator_predictions.dense", "gelu", "generator_predictions.LayerNorm", "generator_lm_head",
                "generator_lm_head.bias", True))  # ElectraForMaskedLM: the generator's head, E wide


def buffer_bytes(c: ConfigFields, float_bytes: int) -> int:
    return position_id_buffers(c, 2)  # position_ids and token_type_ids


if TYPE_CHECKING:  # this module against the contract (mypy): a missing or mistyped name is a type error here
    from . import electra as _this
    from .base import Family, Inference

    _family: Family = _this
    _inference: Inference = _this
