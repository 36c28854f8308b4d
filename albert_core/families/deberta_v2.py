"""DeBERTa-v2/v3 and mDeBERTa (He et al., ICLR 2021; DeBERTaV3 2021): disentangled attention.

Hugging Face: DebertaV2Config / DebertaV2Model (no pooler). Each layer's attention adds
content-to-position (c2p) and position-to-content (p2c) terms over relative position embeddings
shared by all layers (encoder.rel_embeddings, 2k rows, k = position_buckets when set, else
max_relative_positions, else max_position); with share_att_key the position terms reuse the
content key/query projections, else each term has its own (pos_key_proj, pos_query_proj).
position_biased_input=false (v3) stores no absolute position table; embed_proj maps E to H when
embedding_size differs (bias-free); the embedding LayerNorm is H wide.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..layout import stored_copies
from ..replay.symbolic import F32, Replay, Tensor, probs_times_v, sz
from ..values import MAX_DIM, Kind, coerce
from ..values import short as _short
from . import bert
from .base import (
    BERT_STYLE_REFUSED,
    MlmHead,
    OwnField,
    ParamGroup,
    Refusals,
    Step,
    bert_layer_groups,
    bert_layer_sizes,
    layer_norm,
    lin_shape,
    linear,
    position_id_buffers,
)
from .modules import Module, Sublayers, bert_sublayer_modules, emb, lin, norm, param, stacked_prefix, tied

if TYPE_CHECKING:
    from ..config_fields import ConfigFields

NAME = "deberta-v2"
MODEL_TYPES = ("deberta-v2",)
# peft 0.21.2's default LoRA targets for each model type (peft/utils/constants.py,
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING); None: peft has none and raises
LORA_TARGETS: dict[str, tuple[str, ...] | None] = {"deberta-v2": ("query_proj", "value_proj")}
POS_ATT_TYPES = ("", "c2p", "p2c", "c2p|p2c")  # DeBERTa's disentangled terms beside content-to-content
NORM_REL_EBD = ("none", "layer_norm")  # whether the relative embeddings pass a LayerNorm
FIELDS = {
    "relative_attention": OwnField("disentangled attention over relative positions."),
    "max_relative_positions": OwnField("relative span k; -1 means max_position.", lo=1, hi=MAX_DIM, unset=True),
    "position_buckets": OwnField("log buckets of relative distance (256 in DeBERTa-v3); -1 means none.",
                                 lo=1, hi=MAX_DIM, unset=True, step=16),
    "share_att_key": OwnField("the position terms reuse the content key/query projections."),
    "pos_att_type": OwnField("which position terms beside content-to-content.", choices=POS_ATT_TYPES),
    "position_biased_input": OwnField("an absolute position table added to the input (DeBERTa-v3: off)."),
    "norm_rel_ebd": OwnField("LayerNorm on the relative embeddings.", choices=NORM_REL_EBD),
}
OWN_EMBEDDING_WIDTH = True
SEGMENT_TABLE = None  # 0 rows (v3) or more
HEADS = "the MLM head of DebertaV2ForMaskedLM is not modelled; count the base model"

HF_KEYS = {k: v for k, v in bert.HF_KEYS.items()}
HF_DEFAULTS = {"type_vocab_size": 0, "max_position_embeddings": 512, "hidden_act": "gelu",
               "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
REQUIRED = bert.REQUIRED
REFUSED: Refusals = {
    **{k: v for k, v in BERT_STYLE_REFUSED.items() if k != "position_embedding_type"},
    "conv_kernel_size": ((0, None), "DeBERTa's convolution layer beside the first layer is not modelled; set it to 0"),
}



# LoRA targets given in BERT's names (query, key, value), which this model's modules never have, mean these modules
# (finetune.lora_targets): DisentangledSelfAttention's query_proj, key_proj, value_proj
LORA_ALIASES: dict[str, tuple[str, ...]] = {"query": ("query_proj",), "key": ("key_proj",), "value": ("value_proj",)}

def validate(c: ConfigFields) -> list[str]:
    return []


def rel_rows(c: ConfigFields) -> int:
    """Rows of encoder.rel_embeddings: 2 × (position_buckets, else max_relative_positions, else max_position)."""
    b, k = c.position_buckets, c.max_relative_positions
    # (x > 0) * a + (x <= 0) * b: the same on ints and on numpy arrays (sweeps)
    return 2 * ((b > 0) * b + (b <= 0) * ((k > 0) * k + (k <= 0) * c.max_position))


def _pos_projs(c: ConfigFields) -> list[str]:
    """The per-layer position projections HF builds (DisentangledSelfAttention.__init__)."""
    if not c.relative_attention or c.share_att_key:
        return []
    terms = c.pos_att_type.split("|")
    return [m for m, t in (("pos_key_proj", "c2p"), ("pos_query_proj", "p2c")) if t in terms]


def groups(c: ConfigFields, n_att: int, n_ffn: int) -> list[ParamGroup]:
    V, E, H, P, T = c.vocab_size, c.embedding_dim, c.hidden_dim, c.max_position, c.type_vocab_size
    g = [ParamGroup("embedding", "embeddings", "embeddings.word_embeddings", f"{V}×{E}", V * E, 1)]
    if c.position_biased_input:
        g.append(ParamGroup("embedding", "embeddings", "embeddings.position_embeddings", f"{P}×{E}", P * E, 1))
    if T > 0:
        g.append(ParamGroup("embedding", "embeddings", "embeddings.token_type_embeddings", f"{T}×{E}", T * E, 1))
    if E != H:
        g.append(ParamGroup("embedding", "embeddings", "embeddings.embed_proj", lin_shape(E, H, False), E * H, 1))
    g.append(ParamGroup("embedding", "embeddings", "embeddings.LayerNorm", f"2×{H}", layer_norm(H), 1))
    layer = bert_layer_groups(c, n_att, n_ffn)
    for i, name in enumerate(("query_proj", "key_proj", "value_proj")):
        layer[i] = layer[i]._replace(module=f"attention.self.{name}")
    layer[3:3] = [ParamGroup("layers", "attention", f"attention.self.{m}", lin_shape(H, H), linear(H, H), n_att)
                  for m in _pos_projs(c)]
    g += layer
    if c.relative_attention:
        R = rel_rows(c)
        g.append(ParamGroup("layers", "relative_positions", "encoder.rel_embeddings", f"{R}×{H}", R * H, 1))
    if c.norm_rel_ebd == "layer_norm":
        g.append(ParamGroup("layers", "relative_positions", "encoder.LayerNorm", f"2×{H}", layer_norm(H), 1))
    return g


def sizes(c: ConfigFields, n_att: int, n_ffn: int) -> tuple[int, int, int, int]:
    E, H = c.embedding_dim, c.hidden_dim
    rows = c.vocab_size + c.position_biased_input * c.max_position + c.type_vocab_size
    embedding = rows * E + (E != H) * E * H + layer_norm(H)
    att, ffn = bert_layer_sizes(c)
    att = att + len(_pos_projs(c)) * linear(H, H)
    shared = (rel_rows(c) * H if c.relative_attention else 0) + (layer_norm(H) if c.norm_rel_ebd == "layer_norm" else 0)
    return embedding, att + ffn, att * n_att + ffn * n_ffn + shared, 0  # no pooler


def _terms(raw: object, problems: list[str]) -> str | None:
    if raw is None:
        return ""
    parts = [x.strip().lower() for x in raw.split("|")] if isinstance(raw, str) else raw
    if not isinstance(parts, list) or not all(isinstance(x, str) for x in parts):
        problems.append(f"pos_att_type must be text like \"p2c|c2p\" or a list of terms, got {_short(raw)}")
        return None
    bad = [x for x in parts if x not in ("c2p", "p2c", "")]
    if bad:
        problems.append(f"pos_att_type: {', '.join(map(repr, bad))} not supported (only c2p and p2c are modelled)")
        return None
    return "|".join(t for t in ("c2p", "p2c") if t in parts)


# ModelConfig field, config.json key, DebertaV2Config's default, the field's type (config.FIELD_KINDS)
HF_FIELDS: tuple[tuple[str, str, object, Kind], ...] = (
    ("embedding_dim", "embedding_size", None, "int"), ("relative_attention", "relative_attention", False, "bool"),
    ("share_att_key", "share_att_key", False, "bool"), ("position_biased_input", "position_biased_input", True, "bool"),
    ("max_relative_positions", "max_relative_positions", -1, "int"), ("position_buckets", "position_buckets", -1, "int"),
)


def from_hf(d: dict[str, object], kw: dict[str, Any], problems: list[str]) -> None:
    if "hidden_dim" in kw:
        kw["embedding_dim"] = kw["hidden_dim"]
    head = d.get("attention_head_size")
    if head is not None and "hidden_dim" in kw and "num_heads" in kw and head != kw["hidden_dim"] // max(kw["num_heads"], 1):
        problems.append(f"attention_head_size={head!r} is not supported: only hidden_size / num_attention_heads "
                        "is modelled; remove the key")
    for ours, theirs, default, kind in HF_FIELDS:
        if d.get(theirs, default) is None:
            continue
        try:
            kw[ours] = coerce(ours, d.get(theirs, default), kind)
        except ValueError as e:
            problems.append(f"{theirs}: {e}")
    for ours in ("max_relative_positions", "position_buckets"):  # HF: below 1 means not set
        if isinstance(kw.get(ours), int) and kw[ours] < 1:
            kw[ours] = -1
    terms = _terms(d.get("pos_att_type"), problems)
    if terms is not None:
        kw["pos_att_type"] = terms
    norm = d.get("norm_rel_ebd", "none")
    if not isinstance(norm, str):
        problems.append(f"norm_rel_ebd must be text like \"layer_norm\", got {_short(norm)}")
    else:
        kw["norm_rel_ebd"] = "layer_norm" if "layer_norm" in [x.strip() for x in norm.lower().split("|")] else "none"


def to_hf(c: ConfigFields) -> dict[str, object]:
    return {"embedding_size": c.embedding_dim, "relative_attention": c.relative_attention,
            "max_relative_positions": c.max_relative_positions, "position_buckets": c.position_buckets,
            "share_att_key": c.share_att_key, "pos_att_type": c.pos_att_type.split("|") if c.pos_att_type else None,
            "position_biased_input": c.position_biased_input, "norm_rel_ebd": c.norm_rel_ebd, "pad_token_id": 0}


def hf_classes(heads: bool) -> tuple[type, type]:
    from transformers import DebertaV2Config, DebertaV2Model

    return DebertaV2Config, DebertaV2Model


# ---- activation replay (albert_core/replay/symbolic.py): DebertaV2Model's ops and what they save -------------------
# DebertaV2Model runs its own attention (no sdpa path: HF refuses attn_implementation="sdpa"): attention="sdpa"
# replays the same ops as eager, and models.hf_model builds it with eager attention.
HF_ATTENTIONS = ("eager",)
def replay_embeddings(r: Replay, cfg: ConfigFields) -> Tensor:
    """DebertaV2Embeddings (word [+ position] [+ token type], embed_proj, LayerNorm, * mask, dropout), then
    the encoder's relative embeddings (the rel_embeddings table, LayerNorm'd when norm_rel_ebd)."""
    E, H, c = cfg.embedding_dim, cfg.hidden_dim, "embeddings: index tensors"
    r.index(sz(bs=1), c, "aten::embedding (input_ids)")
    if cfg.position_biased_input:
        r.index(sz(one=cfg.max_position), c, "aten::embedding (position_ids: a view of the (1, P) buffer)")
    if cfg.type_vocab_size:
        r.index(sz(bs=1), c, "aten::embedding (token_type_ids: zeros (B, S) made by DebertaV2Model)")
    x = r.new(sz(bs=E), r.md)  # the sum of the embeddings (weights' dtype; autocast leaves it)
    if E != H:
        x = r.linear(x, E, H, "embeddings: E→H projection input")  # embed_proj (no bias)
    x = r.layer_norm(x, H, "embeddings: LayerNorm")
    mask = r.new(sz(bs=1), x.dtype)  # attention_mask = ones(B, S) float32; .to(x.dtype) copies only when not f32
    r.ctx["mask_f32"] = mask if x.dtype == F32 else r.new(sz(bs=1), F32)
    r.save(mask, "embeddings: input mask", "aten::mul (other: mask.to(embeddings.dtype))")
    x = r.dropout(r.new(x.size, x.dtype), cfg.dropout, "embeddings: dropout mask")
    if cfg.relative_attention:
        _relative_embeddings(r, cfg)
    return x


def _relative_embeddings(r: Replay, cfg: ConfigFields) -> None:
    """DebertaV2Encoder.get_rel_embedding: the (2k, H) table, through LayerNorm when norm_rel_ebd."""
    R, H = rel_rows(cfg), cfg.hidden_dim
    rel = r.param(sz(one=R * H))  # encoder.rel_embeddings.weight
    if cfg.norm_rel_ebd == "layer_norm":  # saves mean and rstd (R rows); its input is a parameter
        rel = r.layer_norm(rel, H, "relative embeddings: LayerNorm")
        shared = cfg.dropout == 0 and not r.amp and not r.ctx.get("checkpointing")
        if shared and _position_uses(cfg):  # every layer's projections save this one storage
            r.save(rel, "relative embeddings (position projections' input, all layers)", "aten::addmm (input)")
            r.skip.add(rel.id)
    r.ctx["rel"] = rel


def _position_uses(cfg: ConfigFields) -> tuple[str, ...]:
    """The position projections a layer runs: both with share_att_key (even if a term is off), else one per term."""
    terms = tuple(cfg.pos_att_type.split("|")) if cfg.pos_att_type else ()
    return ("c2p", "p2c") if cfg.share_att_key else terms


def replay_layer(r: Replay, cfg: ConfigFields, x: Tensor, attention: str) -> Tensor:
    """DebertaV2Layer: DisentangledSelfAttention, SelfOutput (dense, dropout, LayerNorm), FFN (as BERT's)."""
    H, I = cfg.hidden_dim, cfg.intermediate_dim
    ctx = _disentangled_attention(r, cfg, [r.linear(x, H, H, "layer input (Q/K/V projections)") for _ in range(3)])
    a = r.dropout(r.linear(ctx, H, H, "context (output projection input)"), cfg.dropout, "residual dropout masks")
    a = r.layer_norm(r.add(a, x), H, "LayerNorms")
    h = r.linear(r.activation(r.linear(a, H, I, "FFN input"), cfg.hidden_act), I, H, "FFN output projection input")
    h = r.dropout(h, cfg.dropout, "residual dropout masks")
    assert h.size == sz(bs=H)
    return r.layer_norm(r.add(h, a), H, "LayerNorms")


def _scale(r: Replay, dtype: str, op: str) -> None:
    """x / scaled_size_sqrt(...).to(dtype): DivBackward0 saves the new 0-d divisor."""
    r.save(r.new(sz(one=1), dtype), "attention scale (0-d tensors)", f"aten::div (other: {op} scale)")


def _disentangled_attention(r: Replay, cfg: ConfigFields, qkv: list[Tensor]) -> Tensor:
    """DisentangledSelfAttention.forward: content scores, c2p/p2c terms, masked_fill, softmax, dropout, @ V."""
    A, c = cfg.num_heads, qkv[0].dtype
    q, k, v = (r.new(t.size, c) for t in qkv)  # transpose_for_scores: permute(0, 2, 1, 3).contiguous() copies
    _scale(r, c, "content")
    r.save(q, "Q/K/V", "aten::bmm (Q)")
    r.save(r.new(k.size, c), "Q/K/V", "aten::bmm (K^T / scale)")
    if cfg.relative_attention:
        _position_terms(r, cfg, q, k)
    r.save(r.new(sz(bss=1), "bool"), "attention mask (~mask, bool)", "aten::masked_fill (mask)")
    scores = r.new(sz(bss=A), F32 if r.amp and r.device == "cuda" else c)  # CUDA autocast: softmax in float32
    return probs_times_v(r, scores, cfg.attention_dropout, q.size, c, c, False)


def _position_terms(r: Replay, cfg: ConfigFields, q: Tensor, k: Tensor) -> None:
    """disentangled_attention_bias: the position projections of the (dropped) relative embeddings, then
    c2p = gather(Q·K_rᵀ, c2p_pos) and p2c = gather(K·Q_rᵀ, p2c_pos)ᵀ, each / scale."""
    R, H, A = rel_rows(cfg), cfg.hidden_dim, cfg.num_heads
    rel = r.dropout(r.ctx["rel"], cfg.dropout, "relative embeddings: dropout mask")  # pos_dropout
    if r.amp and rel.id in r.params:  # rel_embeddings[0:2k] is a view, not a leaf: autocast casts it per call
        rel = r.new(rel.size, rel.dtype)
    terms = cfg.pos_att_type.split("|") if cfg.pos_att_type else []
    pos = {t: r.linear(rel, H, H, "relative embeddings (position projections' input)", rows=sz(one=R))
           for t in _position_uses(cfg)}
    for t, content in (("c2p", q), ("p2c", k)):
        if t not in terms:
            continue
        r.save(content, "Q/K/V", f"aten::bmm ({t}: {'Q' if t == 'c2p' else 'K'})")
        r.save(r.new(sz(b=R * H), pos[t].dtype), "position keys/queries (repeated over the batch)",
               f"aten::bmm ({t}: .repeat(B, 1, 1) of the projected relative embeddings)")
        r.save(r.new(sz(ss=1), "int64"), "relative position index (S×S, int64)", f"aten::gather ({t}_pos index)")
        r.save(r.new(sz(bs=A * R), q.dtype), f"{t} scores before the gather", f"aten::gather ({t}: self)")
        _scale(r, q.dtype, t)


def replay_pooler(r: Replay, cfg: ConfigFields, y: Tensor) -> None:
    """DebertaV2Model has no pooler."""


def weight_copy_elements(cfg: ConfigFields, checkpointing: bool) -> int:
    """Autocast's 16-bit weight copies that Linear layers save: the layers' (with the position projections)
    and embed_proj's. (The projections read a slice of rel_embeddings, not a leaf: cast per call, not cached.)"""
    E, H, I = cfg.embedding_dim, cfg.hidden_dim, cfg.intermediate_dim
    n = E * H if E != H else 0
    if checkpointing:
        return n
    return n + stored_copies(cfg, "attention") * (4 + len(_pos_projs(cfg))) * H * H + stored_copies(cfg, "ffn") * 2 * H * I


def replay_checkpoint_inputs(r: Replay, cfg: ConfigFields) -> None:
    """Checkpointing saves each layer's positional tensor inputs: the hidden states (per layer) and the
    (B, 1, S, S) float32 attention mask, one storage for all layers (relative_pos and rel_embeddings are
    keyword arguments and are not saved)."""
    r.save(r.new(sz(bss=1), F32), "checkpointed attention mask (B, 1, S, S)", "checkpoint (_NoopSaveInputs)")


def relative_position_flops(cfg: ConfigFields, seq_len: int, batch_size: int) -> int:
    """Matmul FLOPs of one layer's disentangled terms: each position projection of the (2k, H) relative
    embeddings (2·2k·H², not per sequence), and each of c2p (Q·K_rᵀ) and p2c (K·Q_rᵀ): 2·B·S·H·2k."""
    if not cfg.relative_attention:
        return 0
    R, H = rel_rows(cfg), cfg.hidden_dim
    terms = cfg.pos_att_type.split("|") if cfg.pos_att_type else []
    return len(_position_uses(cfg)) * 2 * R * H * H + len(terms) * 2 * batch_size * seq_len * H * R


# The modules Hugging Face builds (transformers modeling_deberta_v2.py, each module's __init__): albert_core.estimate.hf_modules
BASE_PREFIX = "deberta"
POOLER_DROPPED_FOR: tuple[str, ...] = ()  # no pooler in the base model (the classifier's ContextPooler is its head's)


def embedding_modules(c: ConfigFields) -> list[Module]:
    V, E, H, P, T = c.vocab_size, c.embedding_dim, c.hidden_dim, c.max_position, c.type_vocab_size
    m = [emb("embeddings.word_embeddings", V, E)]
    if c.position_biased_input:
        m.append(emb("embeddings.position_embeddings", P, E))
    if T > 0:
        m.append(emb("embeddings.token_type_embeddings", T, E))
    if E != H:
        m.append(lin("embeddings.embed_proj", E, H, bias=False))
    return [*m, norm("embeddings.LayerNorm", H)]


def layer_prefix(c: ConfigFields, owner: int, j: int) -> str:
    return stacked_prefix("encoder.layer.", c, owner, j)


def sublayer_modules(c: ConfigFields, p: str, first: bool) -> Sublayers:
    att, ffn = bert_sublayer_modules(c, p, ("query_proj", "key_proj", "value_proj"))
    att[3:3] = [lin(f"{p}attention.self.{m}", c.hidden_dim, c.hidden_dim) for m in _pos_projs(c)]
    return att, ffn


def other_modules(c: ConfigFields) -> list[Module]:
    m = [emb("encoder.rel_embeddings", rel_rows(c), c.hidden_dim)] if c.relative_attention else []
    return m + ([norm("encoder.LayerNorm", c.hidden_dim)] if c.norm_rel_ebd == "layer_norm" else [])


def head_modules(c: ConfigFields, head: str, num_labels: int) -> list[Module]:
    V, E, H = c.vocab_size, c.embedding_dim, c.hidden_dim
    if head == "classification":  # ContextPooler (pooler_hidden_size defaults to hidden_size), then the classifier
        return [lin("pooler.dense", H, H), lin("classifier", H, num_labels)]
    if head == "mlm":  # legacy=True (DebertaV2Config's default): LegacyDebertaV2OnlyMLMHead, H -> E
        return [param("cls.predictions.bias", V), lin("cls.predictions.transform.dense", H, E),
                norm("cls.predictions.transform.LayerNorm", E), tied("cls.predictions.decoder", E, V, False)]
    return [lin("classifier", H, num_labels)]


# The training step (albert_core.step.peak)
STEP = Step("backward_deberta", mlm=MlmHead(  # legacy=True (DebertaV2Config's default): LegacyDebertaV2OnlyMLMHead
    "cls.predictions.transform.dense", None, "cls.predictions.transform.LayerNorm", "cls.predictions.decoder",
    "cls.predictions.bias", True))


def buffer_bytes(c: ConfigFields, float_bytes: int) -> int:
    return position_id_buffers(c, 1)  # position_ids


def unread_parameter(c: ConfigFields, name: str) -> bool:
    """A built parameter the forward never reads, so no gradient and no optimizer state (step._unused): with
    relative_attention but neither c2p nor p2c, encoder.rel_embeddings and its LayerNorm (DebertaV2Encoder.__init__)
    that DisentangledSelfAttention never uses; without relative_attention the LayerNorm (norm_rel_ebd)."""
    if not c.relative_attention:  # the LayerNorm of norm_rel_ebd is built all the same
        return bool(re.search(r"(^|\.)encoder\.LayerNorm\.", name))
    if {"c2p", "p2c"} & set(c.pos_att_type.split("|")):
        return False
    return bool(re.search(r"(^|\.)encoder\.(rel_embeddings|LayerNorm)\.", name))


if TYPE_CHECKING:  # this module against the contract (mypy): a missing or mistyped name is a type error here
    from . import deberta_v2 as _this
    from .base import Family

    _family: Family = _this
