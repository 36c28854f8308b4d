"""BERT's and ALBERT's forward, op by op, for the activation replay (symbolic.py, liveness.py).

Training (replay_*): what each op of Hugging Face's BertModel/AlbertModel saves for backward.
Inference (infer_*): what each op allocates and when transformers 5.23's code drops it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..layout import stored_copies
from .symbolic import Replay, Size, Tensor, attention_core, sz

if TYPE_CHECKING:
    from ..config_fields import ConfigFields
    from .liveness import Infer

ATTENTION_LINEARS = ("q", "k", "v", "dense")
FFN_LINEARS = ("ffn", "ffn_output")


# ---- training: what autograd saves -------------------------------------------------------------------
def embeddings(r: Replay, cfg: ConfigFields, token_types: Size | None, positions: Size | None,
               project: bool) -> Tensor:
    """BERT-style embeddings: the index tensors aten::embedding saves (EmbeddingBackward0 keeps indices),
    the E-wide sum, LayerNorm and dropout, then an E->H Linear when project."""
    E, c = cfg.embedding_dim, "embeddings: index tensors"
    r.index(sz(bs=1), c, "aten::embedding (input_ids)")
    if token_types is not None:
        r.index(token_types, c, "aten::embedding (token_type_ids)")
    if positions is not None:
        r.index(positions, c, "aten::embedding (position_ids)")
    x = r.new(sz(bs=E), r.md)  # word + token_type + position embeddings (weights' dtype; autocast leaves it)
    x = r.layer_norm(x, E, "embeddings: LayerNorm")
    x = r.dropout(x, cfg.dropout, "embeddings: dropout mask")
    if project:  # ALBERT's embedding_hidden_mapping_in / ELECTRA's embeddings_project
        x = r.linear(x, E, cfg.hidden_dim, "embeddings: E→H projection input")
    return x


def replay_embeddings(r: Replay, cfg: ConfigFields) -> Tensor:
    """BertEmbeddings / AlbertEmbeddings (+ ALBERT's embedding_hidden_mapping_in): token_type_ids is a
    (1, S) gather of the buffer, position_ids a view of the whole (1, P) buffer."""
    return embeddings(r, cfg, sz(s=1), sz(one=cfg.max_position), cfg.factorized)


def layer(r: Replay, cfg: ConfigFields, x: Tensor, attention: str, attn_dropout: bool, ffn_dropout: bool) -> Tensor:
    """A post-LN encoder layer: Q/K/V, attention, output dense (+ dropout), LayerNorm, FFN (+ dropout),
    LayerNorm. x is the (B, S, H) layer input."""
    H, I = cfg.hidden_dim, cfg.intermediate_dim
    q, k, v = (r.linear(x, H, H, "layer input (Q/K/V projections)") for _ in range(3))  # query, key, value
    ctx = attention_core(r, cfg.num_heads, cfg.attention_dropout, q, k, v, attention)
    a = r.linear(ctx, H, H, "context (output projection input)")
    if attn_dropout:
        a = r.dropout(a, cfg.dropout, "residual dropout masks")
    a = r.layer_norm(r.add(a, x), H, "LayerNorms")  # LayerNorm(dense + residual)
    h = r.linear(a, H, I, "FFN input")
    h = r.activation(h, cfg.hidden_act)
    h = r.linear(h, I, H, "FFN output projection input")
    if ffn_dropout:
        h = r.dropout(h, cfg.dropout, "residual dropout masks")
    return r.layer_norm(r.add(h, a), H, "LayerNorms")


def replay_layer(r: Replay, cfg: ConfigFields, x: Tensor, attention: str) -> Tensor:
    """BertLayer: dropout after both sublayers."""
    return layer(r, cfg, x, attention, True, True)


def replay_albert_layer(r: Replay, cfg: ConfigFields, x: Tensor, attention: str) -> Tensor:
    """AlbertLayer: Hugging Face's applies no dropout after its FFN."""
    return layer(r, cfg, x, attention, True, False)


def replay_pooler(r: Replay, cfg: ConfigFields, y: Tensor) -> None:
    """BertPooler / AlbertModel.pooler: dense + tanh on sequence_output[:, 0]."""
    H = cfg.hidden_dim
    if r.amp and y.dtype != r.amp:
        first_tok = r.new(sz(b=H), y.dtype)  # autocast casts a copy of the (B, H) slice
    else:
        first_tok = y  # a view of sequence_output: its whole (B, S, H) storage is saved
    pooled = r.linear(first_tok, H, H, "pooler", rows=sz(b=1))
    r.unary_saves_result(pooled, "aten::tanh", "pooler")


def layer_weight_copies(cfg: ConfigFields, checkpointing: bool) -> int:
    """Elements of autocast's cached 16-bit copies of the layers' weights: one per stored weight.

    Under checkpointing the layers' copies are made inside the checkpointed region, whose saved
    tensors are dropped, so none remain."""
    if checkpointing:
        return 0
    H, I = cfg.hidden_dim, cfg.intermediate_dim
    return stored_copies(cfg, "attention") * 4 * H * H + stored_copies(cfg, "ffn") * 2 * H * I


def weight_copy_elements(cfg: ConfigFields, checkpointing: bool) -> int:
    """Autocast's weight copies that Linear layers save: the layers', the pooler's, ALBERT's E→H projection's."""
    n = layer_weight_copies(cfg, checkpointing) + cfg.hidden_dim ** 2  # pooler.dense
    return n + (cfg.embedding_dim * cfg.hidden_dim if cfg.factorized else 0)  # embedding_hidden_mapping_in


# ---- inference: allocations and frees of a no_grad eval forward ---------------------------------------
def cast_sizes(cfg: ConfigFields) -> dict[str, int]:
    """Elements of one stored copy's autocast casts (weights and biases) per sublayer."""
    H, I = cfg.hidden_dim, cfg.intermediate_dim
    return {"attention": 4 * (H * H + H), "ffn": H * I + I + I * H + H}


def infer_embeddings(f: Infer, cfg: ConfigFields) -> tuple[int, int]:
    """BertEmbeddings.forward / AlbertEmbeddings.forward (embedding is on no autocast list), then ALBERT's
    projection. Returns (embedding_output, encoder input)."""
    E, md = cfg.embedding_dim, f.md
    TE = sz(bs=E)
    tt = f.new((sz(s=1), "int64"))  # gather: token_type_ids (1, S)
    we = f.new((TE, md))  # inputs_embeds
    te = f.new((TE, md))  # token_type_embeddings
    e1 = f.new((TE, md))  # inputs_embeds + token_type_embeddings
    pe = f.new((sz(s=E), md))  # position_embeddings (1, S, E)
    e2 = f.new((TE, md))  # + position_embeddings
    f.free(e1)
    emb = f.layer_norm(e2, E)  # dropout is the identity in eval
    f.free(e2, tt, we, te, pe)  # locals of the embeddings' forward; emb lives until the model returns
    x = f.linear(emb, E, cfg.hidden_dim, "mapping") if cfg.factorized else emb  # embedding_hidden_mapping_in
    return emb, x


def infer_layer(f: Infer, cfg: ConfigFields, xin: int, j: int) -> int:
    """Layer application j: BertLayer (and RobertaLayer, ElectraLayer: copies of it)."""
    ka, kf = f.layer_linears(j, "attention", ATTENTION_LINEARS), f.layer_linears(j, "ffn", FFN_LINEARS)
    return _bert_layer(f, cfg, xin, ka, kf)


def infer_albert_layer(f: Infer, cfg: ConfigFields, xin: int, j: int) -> int:
    """Layer application j of ALBERT: AlbertLayer."""
    ka, kf = f.layer_linears(j, "attention", ATTENTION_LINEARS), f.layer_linears(j, "ffn", FFN_LINEARS)
    return _albert_layer(f, cfg, xin, ka, kf)


def ffn(f: Infer, cfg: ConfigFields, a1: int, kf: str) -> tuple[int, int]:
    """Intermediate dense, activation, output dense: (activation output, output dense result)."""
    H, I = cfg.hidden_dim, cfg.intermediate_dim
    xi = f.linear(a1, H, I, f"{kf}.ffn")  # BertIntermediate.dense / AlbertLayer.ffn
    y = f.activation(xi)
    f.free(xi)
    return y, f.linear(y, I, H, f"{kf}.ffn_output")  # BertOutput.dense / AlbertLayer.ffn_output


def _bert_layer(f: Infer, cfg: ConfigFields, xin: int, ka: str, kf: str) -> int:
    H = cfg.hidden_dim
    q, k, v = (f.linear(xin, H, H, f"{ka}.{n}") for n in "qkv")
    ctx, probs = f.attention_core()
    f.free(q, k, v)  # BertSelfAttention returns
    d = f.linear(ctx, H, H, f"{ka}.dense")  # BertSelfOutput.dense
    s_ = f.add(d, xin)  # + input_tensor
    a1 = f.layer_norm(s_, H)
    f.free(s_, d, ctx)
    y, d2 = ffn(f, cfg, a1, kf)
    s2 = f.add(d2, a1)
    out = f.layer_norm(s2, H)
    f.free(s2, d2, y, probs, a1)  # BertOutput, feed_forward_chunk, BertLayer return
    return out


def _albert_layer(f: Infer, cfg: ConfigFields, xin: int, ka: str, kf: str) -> int:
    H = cfg.hidden_dim
    q, k, v = (f.linear(xin, H, H, f"{ka}.{n}") for n in "qkv")
    ctx, probs = f.attention_core()
    d = f.linear(ctx, H, H, f"{ka}.dense")  # the context dies when attn_output is rebound
    f.free(ctx)
    s_ = f.add(xin, d)  # hidden_states + attn_output
    a1 = f.layer_norm(s_, H)
    f.free(s_, d, q, k, v)  # AlbertAttention returns
    y, o = ffn(f, cfg, a1, kf)
    f.free(y)
    s2 = f.add(o, a1)  # ffn_output + attention_output
    out = f.layer_norm(s2, H)
    f.free(s2, o, a1, probs)  # AlbertLayer returns
    return out


def infer_pooler(f: Infer, cfg: ConfigFields, x: int) -> None:
    """Pooler dense on sequence_output[:, 0] (a view; autocast casts a (B, H) copy), then tanh."""
    H = cfg.hidden_dim
    pd_ = f.linear(x, H, H, "pooler", out_el=sz(b=H), in_el=sz(b=H))
    f.new((sz(b=H), f.dt(pd_)))
    f.free(pd_)
