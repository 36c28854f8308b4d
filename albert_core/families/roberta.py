"""RoBERTa (Liu et al. 2019), also XLM-R and CamemBERT: BERT's layers, positions offset by the pad index.

Hugging Face: RobertaModel (XLMRobertaModel, CamembertModel: the same modules). Position ids start
after padding_idx, so the position table has pad_token_id + 1 extra rows: roberta-base's
max_position_embeddings 514 = 512 positions + 2 (position_offset). The segment table has
type_vocab_size rows (1 in the published checkpoints). Pooler included, as in RobertaModel.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..replay import bert_replay
from ..replay.symbolic import Replay, Tensor, sz
from ..values import MAX_VOCAB
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
    linear,
    pooler_groups,
    position_id_buffers,
)
from .modules import (
    Module,
    bert_embedding_modules,
    lin,
    norm,
    param,
    tied,
)

if TYPE_CHECKING:
    from ..config_fields import ConfigFields
    from ..replay.liveness import Infer

NAME = "roberta"
MODEL_TYPES = ("roberta", "xlm-roberta", "camembert")
# peft 0.21.2's default LoRA targets for each model type (peft/utils/constants.py,
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING); None: peft has none and raises
LORA_TARGETS: dict[str, tuple[str, ...] | None] = {"roberta": ("query", "value"), "xlm-roberta": ("query", "value"), "camembert": None}
FIELDS = {"position_offset": OwnField("position rows before position 0 (pad_token_id + 1; 2 in RoBERTa and XLM-R).",
                                      lo=0, hi=MAX_VOCAB)}  # validate: at least 1 and at most vocab_size
OWN_EMBEDDING_WIDTH = False
SEGMENT_TABLE = True
HEADS = "the MLM head of RobertaForMaskedLM (no NSP, no pooler) is not modelled; count the base model"

HF_KEYS = bert.HF_KEYS
HF_DEFAULTS = {"type_vocab_size": 2, "max_position_embeddings": 512, "hidden_act": "gelu",
               "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
REQUIRED = bert.REQUIRED
REFUSED = BERT_STYLE_REFUSED


def validate(c: ConfigFields) -> list[str]:
    if c.position_offset < 1:
        return [f"position_offset must be at least 1 for family 'roberta' (pad_token_id + 1), got {c.position_offset}"]
    if c.position_offset > c.vocab_size:
        return [f"position_offset ({c.position_offset}) is pad_token_id + 1, so at most vocab_size ({c.vocab_size}): "
                "the pad token must be in the vocabulary"]
    return []


def validate_arrays(v: Mapping[str, Any]) -> Any:
    return (v["position_offset"] >= 1) & (v["position_offset"] <= v["vocab_size"])  # validate's, on whole arrays


def groups(c: ConfigFields, n_att: int, n_ffn: int) -> list[ParamGroup]:
    V, H, T, P = c.vocab_size, c.hidden_dim, c.type_vocab_size, c.max_position + c.position_offset
    return [
        ParamGroup("embedding", "embeddings", "embeddings.word_embeddings", f"{V}×{H}", V * H, 1),
        ParamGroup("embedding", "embeddings", "embeddings.position_embeddings", f"{P}×{H}", P * H, 1),
        ParamGroup("embedding", "embeddings", "embeddings.token_type_embeddings", f"{T}×{H}", T * H, 1),
        ParamGroup("embedding", "embeddings", "embeddings.LayerNorm", f"2×{H}", layer_norm(H), 1),
        *bert_layer_groups(c, n_att, n_ffn), *pooler_groups(c),
    ]


def sizes(c: ConfigFields, n_att: int, n_ffn: int) -> tuple[int, int, int, int]:
    H = c.hidden_dim
    embedding = (c.vocab_size + c.max_position + c.position_offset + c.type_vocab_size) * H + layer_norm(H)
    att, ffn = bert_layer_sizes(c)
    return embedding, att + ffn, att * n_att + ffn * n_ffn, linear(H, H)


def from_hf(d: dict[str, object], kw: dict[str, Any], problems: list[str]) -> None:
    pad = d.get("pad_token_id", 1)  # RobertaConfig's default
    if not isinstance(pad, int) or isinstance(pad, bool) or pad < 0:
        problems.append(f"pad_token_id must be a whole number of at least 0 (it offsets the positions), got {pad!r}")
        return
    kw["position_offset"] = pad + 1  # RobertaEmbeddings: position ids start at padding_idx + 1
    if "max_position" in kw:
        if kw["max_position"] <= pad + 1:
            problems.append(f"max_position_embeddings ({kw['max_position']}) must exceed pad_token_id + 1 "
                            f"({pad + 1}): the first pad_token_id + 1 rows are not positions")
        else:
            kw["max_position"] -= pad + 1


def to_hf(c: ConfigFields) -> dict[str, object]:
    return {"max_position_embeddings": c.max_position + c.position_offset, "pad_token_id": c.position_offset - 1}


def hf_classes(heads: bool) -> tuple[type, type]:
    from transformers import RobertaConfig, RobertaModel

    return RobertaConfig, RobertaModel


# ---- activation replay (albert_core/replay/symbolic.py): RobertaModel's ops and what they save ---------------------
def replay_embeddings(r: Replay, cfg: ConfigFields) -> Tensor:
    """RobertaEmbeddings: position_ids are computed from input_ids (cumsum of input_ids.ne(pad)), a new
    (B, S) int64 tensor, and token_type_ids gather the buffer at those positions, (B, S) too."""
    return bert_replay.embeddings(r, cfg, sz(bs=1) if cfg.type_vocab_size else None, sz(bs=1), False)


def replay_layer(r: Replay, cfg: ConfigFields, x: Tensor, attention: str) -> Tensor:
    """RobertaLayer: BertLayer's ops, dropout after both sublayers."""
    return bert_replay.layer(r, cfg, x, attention, True, True)


def replay_pooler(r: Replay, cfg: ConfigFields, y: Tensor) -> None:
    """RobertaPooler: BertPooler's dense + tanh on sequence_output[:, 0]."""
    bert_replay.replay_pooler(r, cfg, y)


def weight_copy_elements(cfg: ConfigFields, checkpointing: bool) -> int:
    """Autocast's 16-bit weight copies that Linear layers save: the layers' and the pooler's."""
    return bert_replay.layer_weight_copies(cfg, checkpointing) + cfg.hidden_dim ** 2


# ---- inference peak (albert_core/replay/liveness.py): RobertaModel's eval forward, allocations and frees ----------
def infer_embeddings(f: Infer, cfg: ConfigFields) -> tuple[int, int]:
    """RobertaEmbeddings.forward under no_grad: create_position_ids_from_input_ids (ne, int, cumsum, type_as,
    + 0, * mask, long, + padding_idx), the token type gather at those positions, the three lookups, two adds,
    LayerNorm. Returns (embedding_output, encoder input): the same tensor, alive until the model returns."""
    BS, TH, md = sz(bs=1), sz(bs=cfg.hidden_dim), f.md
    ne = f.new((BS, "bool"))
    mask = f.new((BS, "int32"))  # .int()
    f.free(ne)
    t = f.chain(1, BS, "int32", f.new((BS, "int64")))  # cumsum (int64), .type_as(mask)
    t = f.chain(2, BS, "int32", t)  # + past_key_values_length, * mask
    long_ = f.new((BS, "int64"))  # .long()
    pos = f.new((BS, "int64"))  # + padding_idx
    f.free(long_, t, mask)
    tt = f.new((BS, "int64"))  # gather of the token_type_ids buffer at the position ids
    we, te = f.new((TH, md)), f.new((TH, md))
    e1 = f.new((TH, md))  # inputs_embeds + token_type_embeddings
    pe = f.new((TH, md))  # position_embeddings (B, S, H)
    e2 = f.new((TH, md))
    f.free(e1)
    emb = f.layer_norm(e2, cfg.hidden_dim)  # dropout is the identity in eval
    f.free(e2, pos, tt, we, te, pe)
    return emb, emb


def infer_layer(f: Infer, cfg: ConfigFields, x: int, j: int) -> int:
    """RobertaLayer: BertLayer's allocations and frees."""
    return bert_replay.infer_layer(f, cfg, x, j)


def infer_pooler(f: Infer, cfg: ConfigFields, x: int) -> None:
    """RobertaPooler: BertPooler's dense + tanh on the first token."""
    bert_replay.infer_pooler(f, cfg, x)


def cast_sizes(cfg: ConfigFields) -> dict[str, int]:
    """Elements of one stored copy's autocast casts (weights and biases) per sublayer, as BERT's."""
    return bert_replay.cast_sizes(cfg)


# The modules Hugging Face builds (transformers modeling_roberta.py, each module's __init__): albert_core.estimate.hf_modules
BASE_PREFIX = "roberta"
POOLER_DROPPED_FOR = ("classification", "token", "mlm")  # RoBERTa's task models never pool
embedding_modules = bert_embedding_modules  # the position table: pad_token_id + 1 more rows
layer_prefix = bert.layer_prefix  # RobertaLayer: BertLayer's modules, names and pooler
sublayer_modules = bert.sublayer_modules
other_modules = bert.other_modules


def head_modules(c: ConfigFields, head: str, num_labels: int) -> list[Module]:
    H, V = c.hidden_dim, c.vocab_size
    if head == "classification":  # RobertaClassificationHead
        return [lin("classifier.dense", H, H), lin("classifier.out_proj", H, num_labels)]
    if head == "mlm":  # RobertaLMHead
        return [param("lm_head.bias", V), lin("lm_head.dense", H, H), norm("lm_head.layer_norm", H),
                tied("lm_head.decoder", H, V, False)]
    return [lin("classifier", H, num_labels)]


# The training step (albert_core.step.peak)
STEP = Step(
    "backward", parameter_order=((r"embeddings\.position_embeddings\.",  # RobertaEmbeddings: after LayerNorm
                              r"embeddings\.(word|token_type)_embeddings\.|embeddings\.LayerNorm\."),),
    positions_from_ids=True, pooler="pooler.dense", classifier="tanh",
    mlm=MlmHead("lm_head.dense", "gelu", "lm_head.layer_norm", "lm_head.decoder", "lm_head.bias"))  # RobertaLMHead


def buffer_bytes(c: ConfigFields, float_bytes: int) -> int:
    return position_id_buffers(c, 2)  # position_ids and token_type_ids


if TYPE_CHECKING:  # this module against the contract (mypy): a missing or mistyped name is a type error here
    from . import roberta as _this
    from .base import Family, Inference

    _family: Family = _this
    _inference: Inference = _this
