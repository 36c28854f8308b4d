"""MPNet (Song et al. 2020): BERT's post-LN layers, positions offset by a fixed pad index, and a T5-style relative
attention bias shared by every layer. sentence-transformers' all-mpnet-base-v2 is this model.

Hugging Face: MPNetConfig / MPNetModel (transformers modeling_mpnet.py). What differs from BERT:
- MPNetEmbeddings: word and position tables only (no segment table); padding_idx is fixed at 1 whatever
  pad_token_id says, so position ids start at 2 (create_position_ids_from_input_ids) and the position table has
  max_position + 2 rows (mpnet-base: max_position_embeddings 514 = 512 positions + 2).
- MPNetEncoder.relative_attention_bias: an nn.Embedding(relative_attention_num_buckets, num_heads), looked up once a
  forward (compute_position_bias: a (B, A, S, S) bias, added in place to every layer's scaled scores). Its buckets
  are made with num_buckets=32 whatever the config says, so a table of fewer than 32 rows fails in the forward.
- MPNetSelfAttention: q, k, v, o (the attention.attn module), its own eager attention (no sdpa path).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..replay import bert_replay
from ..replay.symbolic import F32, Replay, Tensor, sz
from ..values import MAX_DIM
from . import bert
from .base import MlmHead, OwnField, ParamGroup, Refusals, Step, bert_layer_sizes, layer_norm, lin_shape, linear
from .modules import Module, Sublayers, emb, lin, norm, param, stacked_prefix, tied

if TYPE_CHECKING:
    from ..config_fields import ConfigFields
    from ..replay.liveness import Infer

NAME = "mpnet"
MODEL_TYPES = ("mpnet",)
# peft 0.21.2's default LoRA targets for each model type (peft/utils/constants.py,
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING); None: peft has none and raises
LORA_TARGETS: dict[str, tuple[str, ...] | None] = {"mpnet": None}
FIELDS = {"relative_attention_num_buckets": OwnField(
    "rows of the relative attention bias table, one bias per head and bucket of relative distance, shared by every "
    "layer; at least 32.", lo=1, hi=MAX_DIM, step=32)}  # validate: at least BUCKETS_MADE
OWN_EMBEDDING_WIDTH = False
SEGMENT_TABLE = False
HEADS = "the MLM head of MPNetForMaskedLM is not modelled in the breakdown; count the base model"

POSITION_ROWS_BEFORE = 2  # MPNetEmbeddings: padding_idx = 1 (fixed), position ids from padding_idx + 1
BUCKETS_MADE = 32  # MPNetEncoder.compute_position_bias(num_buckets=32): bucket indices 0..31, whatever the config

HF_KEYS = {k: v for k, v in bert.HF_KEYS.items() if k != "type_vocab_size"}
HF_DEFAULTS = {"max_position_embeddings": 512, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
               "attention_probs_dropout_prob": 0.1}  # MPNetConfig's
REQUIRED = bert.REQUIRED
REFUSED: Refusals = {
    "pruned_heads": (({}, None), "pruned attention heads change the parameters; remove the key"),
}
HF_ATTENTIONS = ("eager",)  # MPNetSelfAttention computes its own attention: no sdpa path
# LoRA targets given in BERT's names mean MPNetSelfAttention's q, k, v (finetune.lora_targets)
LORA_ALIASES: dict[str, tuple[str, ...]] = {"query": ("q",), "key": ("k",), "value": ("v",)}


def validate(c: ConfigFields) -> list[str]:
    if c.relative_attention_num_buckets < BUCKETS_MADE:
        return [f"relative_attention_num_buckets must be at least {BUCKETS_MADE} for family 'mpnet', got "
                f"{c.relative_attention_num_buckets}: MPNetEncoder.compute_position_bias always makes {BUCKETS_MADE} "
                f"buckets, so a smaller table fails in the forward; set it to {BUCKETS_MADE} (MPNetConfig's default)"]
    return []


def validate_arrays(v: Mapping[str, Any]) -> Any:
    return v["relative_attention_num_buckets"] >= BUCKETS_MADE  # validate's, on whole arrays


def position_rows(c: ConfigFields) -> int:
    return c.max_position + POSITION_ROWS_BEFORE


def groups(c: ConfigFields, n_att: int, n_ffn: int) -> list[ParamGroup]:
    V, H, I, P, R, A = c.vocab_size, c.hidden_dim, c.intermediate_dim, position_rows(c), \
        c.relative_attention_num_buckets, c.num_heads
    return [
        ParamGroup("embedding", "embeddings", "embeddings.word_embeddings", f"{V}×{H}", V * H, 1),
        ParamGroup("embedding", "embeddings", "embeddings.position_embeddings", f"{P}×{H}", P * H, 1),
        ParamGroup("embedding", "embeddings", "embeddings.LayerNorm", f"2×{H}", layer_norm(H), 1),
        *(ParamGroup("layers", "attention", f"attention.attn.{m}", lin_shape(H, H), linear(H, H), n_att)
          for m in "qkvo"),
        ParamGroup("layers", "attention", "attention.LayerNorm", f"2×{H}", layer_norm(H), n_att),
        ParamGroup("layers", "ffn", "intermediate.dense", lin_shape(H, I), linear(H, I), n_ffn),
        ParamGroup("layers", "ffn", "output.dense", lin_shape(I, H), linear(I, H), n_ffn),
        ParamGroup("layers", "ffn", "output.LayerNorm", f"2×{H}", layer_norm(H), n_ffn),
        ParamGroup("layers", "relative_positions", "encoder.relative_attention_bias", f"{R}×{A}", R * A, 1),
        ParamGroup("pooler", "pooler", "pooler.dense", lin_shape(H, H), linear(H, H), 1),
    ]


def sizes(c: ConfigFields, n_att: int, n_ffn: int) -> tuple[int, int, int, int]:
    """(embedding, per_layer, all_layers, pooler); the relative bias table (buckets × heads, one for all layers)
    counts with the layers, as DeBERTa's rel_embeddings do. Plain arithmetic: numpy arrays work too."""
    H = c.hidden_dim
    embedding = (c.vocab_size + position_rows(c)) * H + layer_norm(H)
    att, ffn = bert_layer_sizes(c)  # q, k, v, o + LayerNorm; BERT's FFN
    shared = c.relative_attention_num_buckets * c.num_heads  # MPNetEncoder.relative_attention_bias
    return embedding, att + ffn, att * n_att + ffn * n_ffn + shared, linear(H, H)


def from_hf(d: dict[str, object], kw: dict[str, Any], problems: list[str]) -> None:
    kw["type_vocab_size"] = 0  # no segment table
    b = d.get("relative_attention_num_buckets", 32)  # MPNetConfig's default
    if not isinstance(b, int) or isinstance(b, bool):
        problems.append(f"relative_attention_num_buckets must be a whole number, got {b!r}")
    else:
        kw["relative_attention_num_buckets"] = b
    if "max_position" in kw:
        if kw["max_position"] <= POSITION_ROWS_BEFORE:
            problems.append(f"max_position_embeddings ({kw['max_position']}) must exceed {POSITION_ROWS_BEFORE}: "
                            "MPNet's position ids start at 2 (padding_idx 1 + 1), so the first 2 rows are not positions")
        else:
            kw["max_position"] -= POSITION_ROWS_BEFORE


def to_hf(c: ConfigFields) -> dict[str, object]:
    return {"max_position_embeddings": position_rows(c), "relative_attention_num_buckets":
            c.relative_attention_num_buckets, "pad_token_id": 1}


def hf_classes(heads: bool) -> tuple[type, type]:
    from transformers import MPNetConfig, MPNetModel

    return MPNetConfig, MPNetModel


# ---- activation replay (albert_core/replay/symbolic.py): MPNetModel's ops and what they save ----------------------
def replay_embeddings(r: Replay, cfg: ConfigFields) -> Tensor:
    """MPNetEmbeddings: position ids made from input_ids (a new (B, S) int64 tensor), no segment table; then
    MPNetEncoder.compute_position_bias's lookup, which saves its (S, S) int64 bucket indices."""
    x = bert_replay.embeddings(r, cfg, None, sz(bs=1), False)
    r.index(sz(ss=1), "relative attention bias: bucket indices", "aten::embedding (relative position buckets)")
    return x


def replay_layer(r: Replay, cfg: ConfigFields, x: Tensor, attention: str) -> Tensor:
    """MPNetLayer: BertLayer's saves; its attention is eager (matmul, / sqrt(d), the bias added in place, which saves
    nothing, softmax, dropout, matmul), whatever attention is asked for (HF_ATTENTIONS)."""
    return bert_replay.layer(r, cfg, x, "eager", True, True)


def replay_pooler(r: Replay, cfg: ConfigFields, y: Tensor) -> None:
    """MPNetPooler: BertPooler's dense + tanh on sequence_output[:, 0]."""
    bert_replay.replay_pooler(r, cfg, y)


def weight_copy_elements(cfg: ConfigFields, checkpointing: bool) -> int:
    """Autocast's 16-bit weight copies that Linear layers save: the layers' and the pooler's (the bias table is
    an embedding: autocast leaves it)."""
    return bert_replay.layer_weight_copies(cfg, checkpointing) + cfg.hidden_dim ** 2


# ---- inference peak (albert_core/replay/liveness.py): MPNetModel's eval forward, allocations and frees ------------
def infer_embeddings(f: Infer, cfg: ConfigFields) -> tuple[int, int]:
    """MPNetEmbeddings.forward under no_grad, then MPNetEncoder.compute_position_bias: the (B, A, S, S) bias the
    encoder holds through every layer (kept to the end here: the pooler's moment is below the last layer's).
    Returns (embedding_output, encoder input): the same tensor, alive until the model returns."""
    BS, TH, md = sz(bs=1), sz(bs=cfg.hidden_dim), f.md
    ne = f.new((BS, "bool"))  # create_position_ids_from_input_ids: input_ids.ne(1)
    mask = f.new((BS, "int32"))  # .int()
    f.free(ne)
    t = f.chain(1, BS, "int32", f.new((BS, "int64")))  # cumsum (int64), .type_as(mask)
    t = f.chain(1, BS, "int32", t)  # * mask
    long_ = f.new((BS, "int64"))  # .long()
    pos = f.new((BS, "int64"))  # + padding_idx
    f.free(long_, t, mask)
    we, pe = f.new((TH, md)), f.new((TH, md))  # the two lookups
    e = f.new((TH, md))
    emb = f.layer_norm(e, cfg.hidden_dim)  # dropout is the identity in eval
    f.free(e, we, pe, pos)
    _infer_bias(f, cfg)
    return emb, emb


def _infer_bias(f: Infer, cfg: ConfigFields) -> int:
    """compute_position_bias and relative_position_bucket op by op: (S, S) int64 and float32 temporaries, the
    (S, S, A) lookup, its (B, A, S, S) .contiguous() copy (returned: alive through the encoder)."""
    S1, SS, I64 = sz(s=1), sz(ss=1), "int64"
    ctx, mem = f.new((S1, I64)), f.new((S1, I64))  # context_position, memory_position
    rel = f.new((SS, I64))  # memory_position - context_position
    n = f.new((SS, I64))  # -relative_position
    lt = f.new((SS, "bool"))
    lg = f.new((SS, I64))  # (n < 0).to(torch.long)
    f.free(lt)
    m = f.chain(1, SS, I64, lg)  # * num_buckets
    ret = f.chain(1, SS, I64, m)  # 0 + ...
    n = f.chain(1, SS, I64, n)  # torch.abs(n)
    small = f.new((SS, "bool"))  # n < max_exact
    fl = f.chain(4, SS, F32, f.new((SS, F32)))  # n.float(), / max_exact, log, / log(...), * (...)
    val = f.chain(2, SS, I64, f.chain(1, SS, I64, fl))  # .to(torch.long), max_exact + ...
    full = f.new((SS, I64))
    mn = f.new((SS, I64))  # torch.min(val_if_large, full_like)
    f.free(val, full)
    f.free(f.new((SS, I64)))  # torch.where(is_small, n, val_if_large), added into ret in place
    f.free(n, small, mn)
    looked = f.new((sz(ss=cfg.num_heads), f.md))  # the lookup (embedding: no autocast)
    bias = f.new((sz(bss=cfg.num_heads), f.md))  # .contiguous() of the expanded view
    f.free(looked, ret, rel, ctx, mem)
    return bias


def infer_layer(f: Infer, cfg: ConfigFields, xin: int, j: int) -> int:
    """MPNetLayer: q, k, v; scores = q @ k^T / sqrt(d) (the bias added in place), softmax; @ v, the contiguous copy;
    the output Linear o while MPNetSelfAttention still holds q, k, v, the scores and probabilities; LayerNorm(o + x);
    BERT's FFN."""
    H, A, c = cfg.hidden_dim, cfg.num_heads, f.c
    ka, kf = f.layer_linears(j, "attention", _ATT), f.layer_linears(j, "ffn", bert_replay.FFN_LINEARS)
    q, k, v = (f.linear(xin, H, H, f"{ka}.{n}") for n in "qkv")
    SQ, TH = sz(bss=A), sz(bs=H)
    copies = (f.new((TH, c)), f.new((TH, c))) if f.copy_qkv else ()  # torch.matmul's Q and K^T copies
    raw = f.new((SQ, c))
    f.free(*copies)
    scores = f.chain(1, SQ, c, raw)  # / math.sqrt(head size); += position_bias in place
    tmp = f.new((SQ, F32)) if f.amp and f.cuda and c != F32 else None  # CUDA autocast: softmax in float32
    probs = f.new((SQ, f.dt(tmp) if tmp is not None else c))  # dropout is the identity in eval
    f.free(tmp)
    ctx = f.probs_times_v(probs)
    o = f.linear(ctx, H, H, f"{ka}.o")
    f.free(q, k, v, scores, probs, ctx)  # MPNetSelfAttention returns (o,)
    s_ = f.add(o, xin)  # dropout(o) + hidden_states
    a1 = f.layer_norm(s_, H)
    f.free(s_, o)  # MPNetAttention returns
    y, d2 = bert_replay.ffn(f, cfg, a1, kf)
    s2 = f.add(d2, a1)
    out = f.layer_norm(s2, H)
    f.free(s2, d2, y, a1)  # MPNetOutput, MPNetLayer return
    return out


_ATT = ("q", "k", "v", "o")  # autocast's cache keys of one stored attention sublayer


def infer_pooler(f: Infer, cfg: ConfigFields, x: int) -> None:
    """MPNetPooler: BertPooler's dense + tanh on the first token."""
    bert_replay.infer_pooler(f, cfg, x)


def cast_sizes(cfg: ConfigFields) -> dict[str, int]:
    """Elements of one stored copy's autocast casts (weights and biases) per sublayer, as BERT's."""
    return bert_replay.cast_sizes(cfg)


# The modules Hugging Face builds (transformers modeling_mpnet.py, each module's __init__): albert_core.estimate.hf_modules
BASE_PREFIX = "mpnet"
POOLER_DROPPED_FOR = ("classification", "token", "mlm")  # MPNetFor...: add_pooling_layer=False


def embedding_modules(c: ConfigFields) -> list[Module]:
    H = c.hidden_dim
    return [emb("embeddings.word_embeddings", c.vocab_size, H), emb("embeddings.position_embeddings",
            position_rows(c), H), norm("embeddings.LayerNorm", H)]


def layer_prefix(c: ConfigFields, owner: int, j: int) -> str:
    return stacked_prefix("encoder.layer.", c, owner, j)


def sublayer_modules(c: ConfigFields, p: str, first: bool) -> Sublayers:
    H, I = c.hidden_dim, c.intermediate_dim
    return ([*(lin(f"{p}attention.attn.{m}", H, H) for m in "qkvo"), norm(f"{p}attention.LayerNorm", H)],
            [lin(f"{p}intermediate.dense", H, I), lin(f"{p}output.dense", I, H), norm(f"{p}output.LayerNorm", H)])


def other_modules(c: ConfigFields) -> list[Module]:
    """MPNetEncoder's bias table (defined after its layers), then the pooler."""
    return [emb("encoder.relative_attention_bias", c.relative_attention_num_buckets, c.num_heads),
            lin("pooler.dense", c.hidden_dim, c.hidden_dim)]


def head_modules(c: ConfigFields, head: str, num_labels: int) -> list[Module]:
    H, V = c.hidden_dim, c.vocab_size
    if head == "classification":  # MPNetClassificationHead
        return [lin("classifier.dense", H, H), lin("classifier.out_proj", H, num_labels)]
    if head == "mlm":  # MPNetLMHead: decoder.weight is the word table, decoder.bias is lm_head.bias (_tied_weights_keys)
        return [param("lm_head.bias", V), lin("lm_head.dense", H, H), norm("lm_head.layer_norm", H),
                tied("lm_head.decoder", H, V, False)]
    return [lin("classifier", H, num_labels)]  # MPNetForTokenClassification


# The training step (albert_core.step.peak): the BERT-style recorder with MPNet's own encoder (the relative bias
# computed once and held through every layer, MPNetLayer's attention: albert_core/step/mpnet_forward.py)
STEP = Step("backward", hf_checkpointing=False,  # MPNetLayer is not a GradientCheckpointingLayer in transformers 5.23
            layer="MPNetLayer", encoder="mpnet_forward", positions_from_ids=True, pooler="pooler.dense", classifier="tanh",
            mlm=MlmHead("lm_head.dense", "gelu", "lm_head.layer_norm", "lm_head.decoder", "lm_head.bias"))


def buffer_bytes(c: ConfigFields, float_bytes: int) -> int:
    return position_rows(c) * 8  # MPNetEmbeddings.position_ids: (1, max_position_embeddings) int64


if TYPE_CHECKING:  # this module against the contract (mypy): a missing or mistyped name is a type error here
    from . import mpnet as _this
    from .base import Family, Inference

    _family: Family = _this
    _inference: Inference = _this
