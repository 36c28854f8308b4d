"""DistilBERT (Sanh et al. 2019): BERT halved in depth, no segment table, no pooler.

Hugging Face: DistilBertConfig / DistilBertModel (config.json keys dim, n_layers, n_heads, hidden_dim
for the FFN width, activation). Layer: q_lin/k_lin/v_lin/out_lin, sa_layer_norm, ffn.lin1/lin2,
output_layer_norm; the same sizes as a BertLayer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..replay import bert_replay
from ..replay.symbolic import Replay, Tensor, sz
from .base import (
    MlmHead,
    OwnField,
    ParamGroup,
    Refusals,
    Step,
    bert_layer_sizes,
    layer_norm,
    lin_shape,
    linear,
    position_id_buffers,
)
from .modules import Module, Sublayers, emb, lin, norm, stacked_prefix, tied

if TYPE_CHECKING:
    from ..config_fields import ConfigFields
    from ..replay.liveness import Infer

NAME = "distilbert"
MODEL_TYPES = ("distilbert",)
# peft 0.21.2's default LoRA targets for each model type (peft/utils/constants.py,
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING); None: peft has none and raises
LORA_TARGETS: dict[str, tuple[str, ...] | None] = {"distilbert": None}
FIELDS: dict[str, OwnField] = {}
OWN_EMBEDDING_WIDTH = False
SEGMENT_TABLE = False
HEADS = "the MLM head of DistilBertForMaskedLM is not modelled; count the base model"

HF_KEYS = {
    "vocab_size": "vocab_size", "hidden_dim": "dim", "num_layers": "n_layers", "num_heads": "n_heads",
    "intermediate_dim": "hidden_dim", "dropout": "dropout", "attention_dropout": "attention_dropout",
    "max_position": "max_position_embeddings", "hidden_act": "activation",
}
HF_DEFAULTS = {"max_position_embeddings": 512, "activation": "gelu", "dropout": 0.1, "attention_dropout": 0.1}
REQUIRED = ("vocab_size", "dim", "n_layers", "n_heads", "hidden_dim")
REFUSED: Refusals = {
    "sinusoidal_pos_embds": ((False, None), "a frozen sinusoidal position table is not modelled "
                                            "(it has no gradient or optimizer state); set it to false"),
    "pruned_heads": (({}, None), "pruned attention heads change the parameters; remove the key"),
}



# LoRA targets given in BERT's names (query, key, value), which this model's modules never have, mean these modules
# (finetune.lora_targets): MultiHeadSelfAttention's q_lin, k_lin, v_lin
LORA_ALIASES: dict[str, tuple[str, ...]] = {"query": ("q_lin",), "key": ("k_lin",), "value": ("v_lin",)}

def validate(c: ConfigFields) -> list[str]:
    return []


def groups(c: ConfigFields, n_att: int, n_ffn: int) -> list[ParamGroup]:
    V, H, I, P = c.vocab_size, c.hidden_dim, c.intermediate_dim, c.max_position
    return [
        ParamGroup("embedding", "embeddings", "embeddings.word_embeddings", f"{V}×{H}", V * H, 1),
        ParamGroup("embedding", "embeddings", "embeddings.position_embeddings", f"{P}×{H}", P * H, 1),
        ParamGroup("embedding", "embeddings", "embeddings.LayerNorm", f"2×{H}", layer_norm(H), 1),
        *(ParamGroup("layers", "attention", f"attention.{m}", lin_shape(H, H), linear(H, H), n_att)
          for m in ("q_lin", "k_lin", "v_lin", "out_lin")),
        ParamGroup("layers", "attention", "sa_layer_norm", f"2×{H}", layer_norm(H), n_att),
        ParamGroup("layers", "ffn", "ffn.lin1", lin_shape(H, I), linear(H, I), n_ffn),
        ParamGroup("layers", "ffn", "ffn.lin2", lin_shape(I, H), linear(I, H), n_ffn),
        ParamGroup("layers", "ffn", "output_layer_norm", f"2×{H}", layer_norm(H), n_ffn),
    ]


def sizes(c: ConfigFields, n_att: int, n_ffn: int) -> tuple[int, int, int, int]:
    H = c.hidden_dim
    att, ffn = bert_layer_sizes(c)
    return (c.vocab_size + c.max_position) * H + layer_norm(H), att + ffn, att * n_att + ffn * n_ffn, 0  # no pooler


def from_hf(d: dict[str, object], kw: dict[str, Any], problems: list[str]) -> None:
    kw["type_vocab_size"] = 0  # no segment table


def to_hf(c: ConfigFields) -> dict[str, object]:
    return {"pad_token_id": 0}


def hf_classes(heads: bool) -> tuple[type, type]:
    from transformers import DistilBertConfig, DistilBertModel

    return DistilBertConfig, DistilBertModel


# ---- activation replay (albert_core/replay/symbolic.py): DistilBertModel's ops and what they save ------------------
def replay_embeddings(r: Replay, cfg: ConfigFields) -> Tensor:
    """Embeddings: word + position (position_ids a view of the (1, P) buffer), no segment table."""
    return bert_replay.embeddings(r, cfg, None, sz(one=cfg.max_position), False)


def replay_layer(r: Replay, cfg: ConfigFields, x: Tensor, attention: str) -> Tensor:
    """TransformerBlock: sa_layer_norm(out_lin(attention) + x) with no dropout on the attention output;
    FFN lin1, activation, lin2, dropout; output_layer_norm."""
    return bert_replay.layer(r, cfg, x, attention, False, True)


def replay_pooler(r: Replay, cfg: ConfigFields, y: Tensor) -> None:
    """DistilBertModel has no pooler."""


def weight_copy_elements(cfg: ConfigFields, checkpointing: bool) -> int:
    """Autocast's 16-bit weight copies that Linear layers save: the layers' only."""
    return bert_replay.layer_weight_copies(cfg, checkpointing)


# ---- inference peak (albert_core/replay/liveness.py): DistilBertModel's eval forward, allocations and frees -------
def infer_embeddings(f: Infer, cfg: ConfigFields) -> tuple[int, int]:
    """Embeddings.forward: word lookup, position lookup on a view of the buffer (1, S, H), add, LayerNorm.
    The output lives until the model returns."""
    H, md = cfg.hidden_dim, f.md
    we, pe = f.new((sz(bs=H), md)), f.new((sz(s=H), md))
    e1 = f.new((sz(bs=H), md))
    emb = f.layer_norm(e1, H)  # dropout is the identity in eval
    f.free(e1, we, pe)
    return emb, emb


def infer_layer(f: Infer, cfg: ConfigFields, x: int, j: int) -> int:
    """TransformerBlock: unlike BertLayer, q, k, v and the context die only after out_lin; the attention
    weights (kept in `_`) die when the block returns."""
    H, I = cfg.hidden_dim, cfg.intermediate_dim
    ka, kf = f.layer_linears(j, "attention", bert_replay.ATTENTION_LINEARS), f.layer_linears(j, "ffn", bert_replay.FFN_LINEARS)
    q, k, v = (f.linear(x, H, H, f"{ka}.{n}") for n in "qkv")
    ctx, probs = f.attention_core()
    d = f.linear(ctx, H, H, f"{ka}.dense")  # out_lin
    f.free(ctx, q, k, v)  # DistilBertSelfAttention returns
    s_ = f.add(d, x)
    a1 = f.layer_norm(s_, H)  # sa_layer_norm
    f.free(s_, d)
    xi = f.linear(a1, H, I, f"{kf}.ffn")  # lin1
    y = f.activation(xi)
    f.free(xi)
    d2 = f.linear(y, I, H, f"{kf}.ffn_output")  # lin2; dropout is the identity in eval
    f.free(y)
    s2 = f.add(d2, a1)
    out = f.layer_norm(s2, H)  # output_layer_norm
    f.free(s2, d2, a1, probs)
    return out


def infer_pooler(f: Infer, cfg: ConfigFields, x: int) -> None:
    """DistilBertModel has no pooler."""


def cast_sizes(cfg: ConfigFields) -> dict[str, int]:
    """Elements of one stored copy's autocast casts (weights and biases) per sublayer, as BERT's."""
    return bert_replay.cast_sizes(cfg)


# The modules Hugging Face builds (transformers modeling_distilbert.py, each module's __init__): albert_core.estimate.hf_modules
BASE_PREFIX = "distilbert"
POOLER_DROPPED_FOR: tuple[str, ...] = ()  # no pooler


def embedding_modules(c: ConfigFields) -> list[Module]:  # Embeddings: word + position, no segment table
    V, H, P = c.vocab_size, c.hidden_dim, c.max_position
    return [emb("embeddings.word_embeddings", V, H), emb("embeddings.position_embeddings", P, H),
            norm("embeddings.LayerNorm", H)]


def layer_prefix(c: ConfigFields, owner: int, j: int) -> str:
    return stacked_prefix("transformer.layer.", c, owner, j)


def sublayer_modules(c: ConfigFields, p: str, first: bool) -> Sublayers:
    H, I = c.hidden_dim, c.intermediate_dim  # TransformerBlock
    return ([*(lin(f"{p}attention.{m}_lin", H, H) for m in ("q", "k", "v", "out")), norm(f"{p}sa_layer_norm", H)],
            [lin(f"{p}ffn.lin1", H, I), lin(f"{p}ffn.lin2", I, H), norm(f"{p}output_layer_norm", H)])


def other_modules(c: ConfigFields) -> list[Module]:
    return []


def head_modules(c: ConfigFields, head: str, num_labels: int) -> list[Module]:
    H, V = c.hidden_dim, c.vocab_size
    if head == "classification":  # hidden_state[:, 0] -> pre_classifier -> classifier
        return [lin("pre_classifier", H, H), lin("classifier", H, num_labels)]
    if head == "mlm":  # DistilBertForMaskedLM
        return [lin("vocab_transform", H, H), norm("vocab_layer_norm", H), tied("vocab_projector", H, V, True)]
    return [lin("classifier", H, num_labels)]


# The training step (albert_core.step.peak)
STEP = Step("backward", layer="TransformerBlock", classifier="pre_classifier", mlm=MlmHead(
    "vocab_transform", None, "vocab_layer_norm", "vocab_projector", "vocab_projector.bias"))


def buffer_bytes(c: ConfigFields, float_bytes: int) -> int:
    return position_id_buffers(c, 1)  # position_ids


if TYPE_CHECKING:  # this module against the contract (mypy): a missing or mistyped name is a type error here
    from . import distilbert as _this
    from .base import Family, Inference

    _family: Family = _this
    _inference: Inference = _this
