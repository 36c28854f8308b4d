"""ALBERT (Lan et al., ICLR 2020): factorized embedding V×E + E×H and cross-layer sharing.

Hugging Face: AlbertConfig / AlbertModel (AlbertForPreTraining with the MLM and SOP heads). HF shares
whole layers within num_hidden_groups groups of inner_group_num layers; sharing only attention or only
the FFN is modelled here (and in albert_core.engine.reference) but not by HF.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..replay import bert_replay
from . import bert
from .base import BERT_STYLE_REFUSED, MlmHead, OwnField, ParamGroup, Step, layer_norm, linear, position_id_buffers
from .modules import Module, Sublayers, bert_embedding_modules, lin, norm, param, tied

if TYPE_CHECKING:
    from ..config_fields import ConfigFields

NAME = "albert"
MODEL_TYPES = ("albert",)
# peft 0.21.2's default LoRA targets for each model type (peft/utils/constants.py,
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING); None: peft has none and raises
LORA_TARGETS: dict[str, tuple[str, ...] | None] = {"albert": None}
FIELDS: dict[str, OwnField] = {}
OWN_EMBEDDING_WIDTH = True
SEGMENT_TABLE = True
HEADS = None  # MLM + SOP heads modelled

HF_KEYS = dict(bert.HF_KEYS, embedding_dim="embedding_size", num_groups="num_hidden_groups",
               inner_group_num="inner_group_num")
HF_DEFAULTS = {"type_vocab_size": 2, "max_position_embeddings": 512, "hidden_act": "gelu_new",
               "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
               "num_hidden_groups": 1, "inner_group_num": 1, "embedding_size": 128}
REQUIRED = bert.REQUIRED
REFUSED = BERT_STYLE_REFUSED


def validate(c: ConfigFields) -> list[str]:
    return []


def groups(c: ConfigFields, n_att: int, n_ffn: int) -> list[ParamGroup]:
    E, H = c.embedding_dim, c.hidden_dim
    # ALBERT Sec. 3.1 factorized embedding: V×E + E×H instead of V×H
    proj = ParamGroup("embedding", "embeddings", "embedding_hidden_mapping_in", f"{E}×{H} + {H}", linear(E, H), 1)
    return bert.embedding_groups(c) + [proj] + bert.layer_groups(c, n_att, n_ffn)


def sizes(c: ConfigFields, n_att: int, n_ffn: int) -> tuple[int, int, int, int]:
    embedding, per_layer, all_layers, pooler = bert.sizes(c, n_att, n_ffn)
    return embedding + linear(c.embedding_dim, c.hidden_dim), per_layer, all_layers, pooler  # ALBERT Sec. 3.1


def heads_groups(c: ConfigFields) -> list[ParamGroup]:
    """AlbertMLMHead: dense H→E, LayerNorm(E), decoder tied to word_embeddings, bias V; SOP classifier H→2."""
    H, E, V = c.hidden_dim, c.embedding_dim, c.vocab_size
    return [
        ParamGroup("heads", "mlm_head", "predictions.dense", f"{H}×{E} + {E}", linear(H, E), 1),
        ParamGroup("heads", "mlm_head", "predictions.LayerNorm", f"2×{E}", layer_norm(E), 1),
        ParamGroup("heads", "mlm_head", "predictions.bias (decoder weight tied)", f"{V}", V, 1),
        ParamGroup("heads", "nsp_head", "sop_classifier", f"{H}×2 + 2", linear(H, 2), 1),
    ]


def heads_size(c: ConfigFields) -> int:
    E = c.embedding_dim
    return linear(c.hidden_dim, E) + layer_norm(E) + c.vocab_size + linear(c.hidden_dim, 2)


def from_hf(d: dict[str, object], kw: dict[str, Any], problems: list[str]) -> None:
    """HF: one group per layer means nothing is shared; fewer groups share whole layers."""
    if "num_groups" not in kw or "num_layers" not in kw:
        return
    unshared = kw["num_groups"] == kw["num_layers"] and kw["num_groups"] > 1
    kw["sharing"] = "none" if unshared else "all"
    if unshared:
        kw["num_groups"] = 1


def to_hf(c: ConfigFields) -> dict[str, object]:
    # only whole-layer sharing maps onto HF groups; other modes get one group per layer
    return {"embedding_size": c.embedding_dim,
            "num_hidden_groups": c.num_groups if c.sharing == "all" else c.num_layers,
            "inner_group_num": c.inner_group_num}


def hf_classes(heads: bool) -> tuple[type, type]:
    from transformers import AlbertConfig, AlbertForPreTraining, AlbertModel

    return AlbertConfig, (AlbertForPreTraining if heads else AlbertModel)


# ---- activation replay and inference peak: BERT's op sequences (albert_core/replay/bert_replay.py), shared with BERT ----
replay_embeddings = bert_replay.replay_embeddings
replay_layer = bert_replay.replay_albert_layer
replay_pooler = bert_replay.replay_pooler
weight_copy_elements = bert_replay.weight_copy_elements
infer_embeddings = bert_replay.infer_embeddings
infer_layer = bert_replay.infer_albert_layer
infer_pooler = bert_replay.infer_pooler
cast_sizes = bert_replay.cast_sizes


# The modules Hugging Face builds (transformers modeling_albert.py, each module's __init__): albert_core.estimate.hf_modules
BASE_PREFIX = "albert"
POOLER_DROPPED_FOR = ("token", "mlm")  # AlbertForTokenClassification, AlbertForMaskedLM: add_pooling_layer=False
embedding_modules = bert_embedding_modules  # E wide


def layer_prefix(c: ConfigFields, owner: int, j: int) -> str:
    """Group `owner`'s inner layer j (AlbertTransformer: albert_layer_groups[g].albert_layers[j])."""
    return f"encoder.albert_layer_groups.{owner}.albert_layers.{j}."


def sublayer_modules(c: ConfigFields, p: str, first: bool) -> Sublayers:
    H, I = c.hidden_dim, c.intermediate_dim  # AlbertLayer: full_layer_layer_norm follows the FFN
    return ([*(lin(f"{p}attention.{m}", H, H) for m in ("query", "key", "value", "dense")),
             norm(f"{p}attention.LayerNorm", H)],
            [lin(f"{p}ffn", H, I), lin(f"{p}ffn_output", I, H), norm(f"{p}full_layer_layer_norm", H)])


def other_modules(c: ConfigFields) -> list[Module]:
    return [lin("encoder.embedding_hidden_mapping_in", c.embedding_dim, c.hidden_dim),
            lin("pooler", c.hidden_dim, c.hidden_dim)]


def head_modules(c: ConfigFields, head: str, num_labels: int) -> list[Module]:
    V, E, H = c.vocab_size, c.embedding_dim, c.hidden_dim
    if head == "mlm":  # AlbertMLMHead: H -> E, then the E-wide table
        return [param("predictions.bias", V), norm("predictions.LayerNorm", E), lin("predictions.dense", H, E),
                tied("predictions.decoder", E, V, False)]
    return [lin("classifier", H, num_labels)]


# The training step (albert_core.step.peak)
STEP = Step(
    "backward", parameter_order=((r"encoder\.embedding_hidden_mapping_in\.", r"(^|\.)embeddings\."),),  # before groups
    hf_checkpointing=False,  # AlbertLayer is not a GradientCheckpointingLayer in transformers 5.23
    embeddings_scope_trains=True, layer="AlbertLayerGroup", projection="encoder.embedding_hidden_mapping_in", pooler="pooler",
    classifier_dropout=0.1,  # classifier_dropout_prob
    mlm=MlmHead("predictions.dense", None, "predictions.LayerNorm", "predictions.decoder", "predictions.bias", True))


def buffer_bytes(c: ConfigFields, float_bytes: int) -> int:
    return position_id_buffers(c, 2)  # position_ids and token_type_ids


if TYPE_CHECKING:  # this module against the contract (mypy): a missing or mistyped name is a type error here
    from . import albert as _this
    from .base import Family, Heads, Inference

    _family: Family = _this
    _heads: Heads = _this
    _inference: Inference = _this
