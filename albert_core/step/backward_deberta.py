"""DeBERTa-v2's forward recorded for the backward replay (deberta_graph.py's DebertaGraph; backward.py's engine loop).

transformers 5.23 modeling_deberta_v2.py, DebertaV2Model(input_ids) op by op: the embeddings (word [+ position]
[+ token type], embed_proj, LayerNorm, * mask, dropout), the encoder's (B, 1, S, S) mask, relative positions
and relative embeddings (LayerNorm'd when norm_rel_ebd), each DebertaV2Layer's DisentangledSelfAttention
(transpose_for_scores copies, content scores, c2p / p2c terms gathered at the relative positions, masked_fill,
softmax, dropout, @ V), then BERT's self-output and FFN. DeBERTa has its own attention only (sdpa asked for
builds eager). Checkpointed layers: the frame keeps the (B, 1, S, S) mask, relative_pos and rel_embeddings.
Not modelled (within 1% on the tests' configs): inside a checkpointed layer a node's recomputed saved tensors
die when its apply returns (unpack pops them from the frame), before validate_outputs' sum_to / casts; the
replay frees them after (release_variables' order), a few bytes over. peft LoRA: the Linears go through
Graph.adapt (backward_lora.lora_linear); a last layer's attention that runs without gradient (one layer, LoRA
only on output.dense) is covered by the op-by-op moments below (12 such tiny configs equal to the byte; before up
to 9% under). No torch here.

The last layer's moments follow each op with what Python holds then (every saved tensor counted besides): the
Linears with their autocast casts, transpose_for_scores' copies, key / scale, q @ k^T, pos_dropout, the position
projections (a term's, or an unused branch's with share_att_key), each term's bmm, index arithmetic, gather and
division, masked_fill with ~mask, softmax, dropout, the context and its copy, SelfOutput's and the FFN's ops, the
activation's, the LayerNorms with their statistics; and the encoder's make_log_bucket_position (position_buckets).
Where nothing records a node (every layer frozen, no relative term reading the trained rel_embeddings: a linear
probe) they are the frozen forward's working set, the same in every layer: 30 such tiny configs (of 127
linear-probe draws in 600 seeds) equal to the engine to the byte, before -25.7% to +1.6% with the old moments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..config import ModelConfig
from ..families.deberta_v2 import rel_rows
from ..replay.symbolic import F32
from .backward import run_backward, with_forward
from .bert_forward import _activation, _first_token, _mlm_head
from .deberta_graph import DebertaGraph, _Dead
from .graph import SEQ_MAX, Adapt, Node, Peak, Storage, T, _accumulate, _grads_like

if TYPE_CHECKING:
    from ..workload import Workload


def _transpose_for_scores(g: DebertaGraph | _Dead, p: T, A: int, rows: int) -> T:
    """x.view(..., A, -1).permute(0, 2, 1, 3).contiguous().view(-1, rows, D): the copy when A and rows exceed 1;
    backward's reshape of the permuted gradient copies then too."""
    both = A > 1 and rows > 1
    return g.copy_if(g.reshape_grad(p, both), both)


def _embeddings(g: DebertaGraph, cfg: ModelConfig, ids: T, ones: T, types: T) -> tuple[T, list[T]]:
    """DebertaV2Embeddings.forward: (its output, the locals the moments hold)."""
    B, S, E, H, md = g.B, g.S, cfg.embedding_dim, cfg.hidden_dim, g.md
    x = g.embedding(ids, "embeddings.word_embeddings", cfg.vocab_size, E, B * S * E)  # saves the indices
    if g.checkpointing and x.fn is None:  # enable_input_require_grads: the frozen lookup's output a leaf
        x.st.refs += 1
        x.st.cat = "temporaries"
        x.fn = Node(SEQ_MAX, "AccumulateGrad(inputs_embeds)", [], [], _accumulate, param="inputs_embeds")
        g.held.append(x.st)
    locs = [x]
    if cfg.position_biased_input:
        pidx = g.persistent(S, "int64", "position_ids buffer")
        p = g.embedding(pidx, "embeddings.position_embeddings", cfg.max_position, E, S * E)
        locs.append(p)
        x = g.add(x, p)
    else:
        locs.append(g.new(B * S * E, md, "zeros_like(inputs_embeds)"))  # position_embeddings = zeros_like
    if cfg.type_vocab_size:
        t_emb = g.embedding(types, "embeddings.token_type_embeddings", cfg.type_vocab_size, E, B * S * E)
        locs.append(t_emb)
        x = g.add(x, t_emb)
    locs.append(x)
    if E != H:
        x = g.linear(x, "embeddings.embed_proj", E, H, bias=False)
        locs.append(x)
    x = g.layer_norm(x, "embeddings.LayerNorm", H)
    m = ones if x.dtype == F32 else g.new(B * S, x.dtype, "mask.to(embeddings.dtype)")
    x = g.op("MulBackward0", [x, None], [(x.numel, x.dtype)], [m], _grads_like)[0]  # embeddings * mask saves mask
    locs += [x, m]
    return g.dropout(x, cfg.dropout), locs


def _position_uses(cfg: ModelConfig) -> list[str]:
    """The position projections disentangled_attention_bias runs, in order: with share_att_key query_proj and
    key_proj (whatever the terms), else pos_key_proj for c2p and pos_query_proj for p2c."""
    terms = cfg.pos_att_type.split("|") if cfg.pos_att_type else []
    if cfg.share_att_key:
        return ["p2c", "c2p"]
    return [t for t in ("c2p", "p2c") if t in terms]


class _Moments:
    """The moments of one DisentangledSelfAttention call (g.point): each op's tensors with the caller's x and mask,
    and what the layers above hold (`held`: known at the last layer, else None)."""

    def __init__(self, g: DebertaGraph, x: T, mask: T, held: list[T] | None) -> None:
        self.g, self.x, self.mask, self.held = g, x, mask, held

    def pt(self, what: str, *ts: T) -> None:
        self.g.point(f"forward: the last layer's {what}", [*ts, self.x, self.mask], self.held)

    def lin(self, what: str, out: T, *ts: T) -> None:  # a Linear's output with its input (or its cast) and casts
        self.pt(what, out, *self.g.linear_temps(), *ts)

    def proj(self, cfg: ModelConfig, pre: str, name: str, *alive: T) -> T:
        """self.transpose_for_scores(self.<name>(hidden_states)); `alive`: the projections made before it."""
        g = self.g
        g.ctx = [*alive, self.x, self.mask], self.held  # a LoRA Linear's inner moments (backward_lora.lora_linear)
        g.last_input, g.last_casts = None, []
        p = g.linear(self.x, pre + name, cfg.hidden_dim, cfg.hidden_dim)
        g.ctx = None
        self.lin(name, p, *alive)
        out = _transpose_for_scores(g, p, cfg.num_heads, g.S)
        if out.st is not p.st:
            self.pt(f"{name} contiguous", p, out, *alive)
        return out


def _attention(g: DebertaGraph, cfg: ModelConfig, x: T, pre: str, mask: T, rel: T | None,
               held: list[T] | None) -> tuple[T, list[T]]:
    """DisentangledSelfAttention.forward: (its context (B, S, H), its locals alive when it returns).

    The moments (the last layer's, where `held` is known; every saved tensor counted besides) follow each op with
    what Python holds then: the op's inputs and output, a statement's temporaries (autocast's casts, the scale's
    .to(dtype), key^T / scale, ~attention_mask, a dropout's noise), the function's locals (query/key/value,
    scale, the scores (not rebound by softmax), rel_att, pos_dropout's output, the bool mask) and the caller's
    x and mask. Where nothing records a node (every layer frozen, no relative term reaching a trained tensor)
    they are the frozen forward's working set, the same in every layer."""
    B, S, A, H = g.B, g.S, cfg.num_heads, cfg.hidden_dim
    m = _Moments(g, x, mask, held)
    q = m.proj(cfg, pre, "query_proj")
    k = m.proj(cfg, pre, "key_proj", q)
    v = m.proj(cfg, pre, "value_proj", q, k)
    c = q.dtype
    s32 = g.new(1, F32, "scale")  # scaled_size_sqrt: sqrt(tensor(D) * scale_factor), float32 0-d
    sc = s32 if c == F32 else g.new(1, c, "scale.to(dtype)")
    kt = g.div0(k, sc)  # key_layer.transpose(-1, -2) / scale: a temporary of the statement
    qkv = [q, k, v, s32]
    m.pt("key / scale", *qkv, sc, kt)
    scores = g.bmm(q, kt, B * A * S * S, c)
    m.pt("q @ k^T", *qkv, sc, kt, scores)
    locs: list[T] = [*qkv]
    dead: list[T] = []
    rel_att: list[T] = []
    if cfg.relative_attention:
        assert rel is not None
        scores, rel_att, dead = _relative(m, cfg, pre, rel, q, k, locs, scores)
    bmask = g.new(B * S * S, "bool", "attention_mask.bool()")  # a local until the function returns
    m.pt("attention_mask.bool()", bmask, scores, *rel_att, *locs, *dead)
    inv = g.new(B * S * S, "bool", "~attention_mask")  # a temporary of the statement
    m.pt("~attention_mask", inv, bmask, scores, *rel_att, *locs, *dead)
    unmasked = scores
    scores = g.masked_fill(scores, inv)
    locs += [bmask, *rel_att]
    m.pt("masked_fill", inv, unmasked, scores, *locs, *dead)
    probs = g.unary(scores, "SoftmaxBackward0", True)
    m.pt("attention softmax", probs, scores, *locs, *dead)
    dropped = g.dropout(probs, cfg.attention_dropout)
    if dropped is not probs and g.last_noise is not None:
        m.pt("attention dropout", probs, g.last_noise, dropped, scores, *locs, *dead)
    ctx = g.bmm(dropped, v, B * S * H, c)
    locs += [scores, dropped]
    m.pt("attention context", ctx, *locs, *dead)
    both = A > 1 and S > 1
    out = g.copy(ctx, both, B > 1 and A > 1 and S > 1)  # permute(...).contiguous(); view's reshape
    if out.st is not ctx.st:
        m.pt("attention context contiguous", ctx, out, *locs, *dead)
    return out, locs


def _relative(m: _Moments, cfg: ModelConfig, pre: str, rel: T, q: T, k: T, locs: list[T],
              scores: T) -> tuple[T, list[T], list[T]]:
    """The relative part of the attention (rel_att = disentangled_attention_bias, added to the scores): (the scores
    after it, rel_att while forward holds it, what stays alive until forward returns: pos_dropout's output and
    noise on a branch no term reaches). Appends pos_dropout's output to `locs`."""
    g = m.g
    terms = _terms(cfg)
    dead: list[T] = []
    if terms:
        r = g.dropout(rel, cfg.dropout)  # pos_dropout
        if r is not rel and g.last_noise is not None:
            m.pt("pos_dropout", rel, g.last_noise, r, *locs, scores)
    else:  # no term reaches the loss: the dropout is recorded on a branch that dies with the layer
        r = g.new(rel.numel, rel.dtype, "pos_dropout") if cfg.dropout else rel
        if cfg.dropout:  # its node keeps the noise where rel_embeddings train (not under LoRA: a temporary)
            noise = g.new(rel.numel, rel.dtype, "noise")
            m.pt("pos_dropout", rel, noise, r, *locs, scores)
            dead += [r, noise] if g.rel_requires_grad else [r]
    locs.append(r)
    kept = len(dead)  # pos_dropout's output and noise (its node's): forward's local
    pos = _positions(m, cfg, pre, r, locs, dead, scores)
    score = _bias_terms(m, cfg, q, k, pos, locs, dead, scores)
    dead = dead[:kept]  # the unused projections die as disentangled_attention_bias returns
    if score is None:
        new = g.add_scalar(scores)  # attention_scores + 0 (rel_att is the int 0)
        m.pt("scores + 0", scores, new, *locs, *dead)
        return new, [], dead
    new = g.add(scores, score)  # the content scores freed once rebound; rel_att: forward's local until it returns
    m.pt("scores + rel_att", scores, new, score, *locs, *dead)
    return new, [score], dead


def _terms(cfg: ModelConfig) -> list[str]:
    """The relative terms that reach the scores (pos_att_type: c2p, p2c)."""
    return cfg.pos_att_type.split("|") if cfg.pos_att_type else []


def _positions(m: _Moments, cfg: ModelConfig, pre: str, r: T, locs: list[T], dead: list[T],
               scores: T) -> dict[str, T]:
    """disentangled_attention_bias's position projections of r (pos_key_layer for c2p, pos_query_layer for p2c),
    each repeated over the batch: {term: (B*A, R, D)}. One that no term uses is recorded on a dead branch, its
    tensors appended to `dead`."""
    g = m.g
    A, H, R = cfg.num_heads, cfg.hidden_dim, rel_rows(cfg)
    pos: dict[str, T] = {}
    for t in _position_uses(cfg):
        key = pre + (("query_proj" if t == "p2c" else "key_proj") if cfg.share_att_key else
                     ("pos_query_proj" if t == "p2c" else "pos_key_proj"))
        live = t in _terms(cfg)
        gg = g if live else _Dead(g, dead)
        g.ctx = [*pos.values(), *locs, *dead, scores, m.x, m.mask], m.held
        g.last_input, g.last_casts = None, []
        pr = gg.linear(r, key, H, H, rows=R)
        g.ctx = None
        m.lin(f"{t} position projection", pr, *pos.values(), *locs, *dead, scores)
        tr = _transpose_for_scores(gg, pr, A, R)
        if tr.st is not pr.st:
            m.pt(f"{t} position contiguous", pr, tr, *pos.values(), *locs, *dead, scores)
        pos[t] = gg.repeat(tr, g.B)
        m.pt(f"{t} position repeat", tr, pos[t], *pos.values(), *locs, *dead, scores)
        dead += [] if live else [pos[t]]
    return pos


def _bias_terms(m: _Moments, cfg: ModelConfig, q: T, k: T, pos: dict[str, T], locs: list[T], dead: list[T],
                scores: T) -> T | None:
    """disentangled_attention_bias's c2p and p2c terms, each a bmm with its position projection, gathered at the
    clamped relative positions and divided by its scale: their sum (None where pos_att_type has neither)."""
    g = m.g
    B, S, A, R, c = g.B, g.S, cfg.num_heads, rel_rows(cfg), q.dtype
    score: T | None = None
    bias: list[T] = []  # disentangled_attention_bias's locals: scale, the indices, the gathered terms
    for t, content in (("c2p", q), ("p2c", k)):
        if t not in _terms(cfg):
            continue
        s2 = g.new(1, F32, "scale")  # `scale` rebound: the last one lives
        bias = [b for b in bias if b.numel != 1] + [s2]
        here = [*bias, *([score] if score is not None else []), *pos.values(), *locs, *dead, scores]
        # c2p: bmm, then the index clamp(relative_pos + att_span, ...); p2c: the index clamp(-r_pos + att_span,
        # ...), then bmm
        att0 = g.bmm(content, pos[t], B * A * S * R, c) if t == "c2p" else None
        first = [att0] if att0 is not None else []
        if att0 is not None:
            m.pt(f"{t} bmm", att0, *here)
        plus = g.new(S * S, "int64", f"{t} relative_pos + att_span")  # (1, 1, S, S) int64
        neg = [g.new(S * S, "int64", "-r_pos")] if t == "p2c" else []
        m.pt(f"{t} index add", *neg, plus, *first, *here)
        idx = g.new(S * S, "int64", f"{t}_pos")  # clamp(...)
        m.pt(f"{t} index clamp", plus, idx, *first, *here)
        if att0 is None:
            att0 = g.bmm(content, pos[t], B * A * S * R, c)
            m.pt(f"{t} bmm", att0, idx, *here)
        att = g.gather(att0, B * A * S * S, idx)
        m.pt(f"{t} gather", att0, att, idx, *here)
        bias += [idx, att]
        here = [*bias, *([score] if score is not None else []), *pos.values(), *locs, *dead, scores]
        s2c = s2 if att.dtype == F32 else g.new(1, att.dtype, "scale.to(dtype)")
        term = g.div0(att, s2c)
        m.pt(f"{t} term", s2c, term, *here)
        if score is None:  # score = 0 + term: a new tensor
            score = g.add_scalar(term)
            m.pt(f"{t} 0 + term", s2c, term, score, *here)
        else:  # score += term: in place
            score = _iadd(g, score, term)
    return score


def _iadd(g: DebertaGraph, a: T, b: T) -> T:
    """score += term on a tensor: add_ in place (AddBackward0 passes the gradient to both)."""
    out = g.add(a, b)
    out.st = a.st
    return out


def _begin_checkpoint(g: DebertaGraph, x: T, mask: T, frame: list[Storage]) -> None:
    """checkpoint(partial(forward, **kwargs), x, mask): _NoopSaveInputs saves x and the mask; the frame's partial
    keeps relative_pos and rel_embeddings (torch/utils/checkpoint.py)."""
    g.begin_region(x)
    for st in [mask.st, *frame]:
        if not st.persistent:
            st.refs += 1
            g.saved.setdefault(id(st), st)
            g.regions[-1].extra.append(st)


def _layer(g: DebertaGraph, cfg: ModelConfig, x: T, i: int, mask: T, rel: T | None,
           held: list[T] | None, frame: list[Storage]) -> T:
    """DebertaV2Layer: attention, SelfOutput (dense, dropout, LayerNorm(h + x)), intermediate, output. The moments
    after each op (as in _attention): its inputs, output and temporaries (a Linear's casts, a LayerNorm's mean and
    rstd, a dropout's noise), what Python holds then: DebertaV2Attention's self_output through SelfOutput, the
    attention output through DebertaV2Output, the intermediate output through its dense."""
    H, I = cfg.hidden_dim, cfg.intermediate_dim
    pre = f"encoder.layer.{i}."
    if g.checkpointing:
        _begin_checkpoint(g, x, mask, frame)

    def pt(what: str, *ts: T) -> None:
        g.point(f"forward: the last layer's {what}", [*ts, x, mask], held)

    def lin(what: str, out: T, *ts: T) -> None:
        pt(what, out, *g.linear_temps(), *ts)

    ctx, locs = _attention(g, cfg, x, pre + "attention.self.", mask, rel, held)
    g.ctx = [x, mask], held
    g.last_input, g.last_casts = None, []
    d = g.linear(ctx, pre + "attention.output.dense", H, H)
    lin("attention output dense", d, ctx)
    g.ctx = None
    a = g.dropout(d, cfg.dropout)
    if a is not d and g.last_noise is not None:
        pt("attention output dropout", d, g.last_noise, a, ctx)
    s1 = g.add(a, x)
    pt("attention residual", a, s1, ctx)
    a = g.layer_norm(s1, pre + "attention.output.LayerNorm", H)
    pt("attention LayerNorm", a, *g.last_stats, s1, ctx)
    g.ctx = [a, x, mask], held
    g.last_input, g.last_casts = None, []
    h = g.linear(a, pre + "intermediate.dense", H, I)
    g.ctx = None
    lin("FFN", h, a)
    pre_act = h
    act = h = _activation(g, h, cfg.hidden_act, lambda what, ts: pt(f"FFN activation: {what}", *ts, a))
    pt("activation", act, pre_act, a)  # rebound on return
    g.ctx = [act, a, x, mask], held
    g.last_input, g.last_casts = None, []
    h = g.linear(h, pre + "output.dense", I, H)
    g.ctx = None
    lin("FFN output", h, act, a)
    o = h
    h = g.dropout(o, cfg.dropout)
    if h is not o and g.last_noise is not None:
        pt("FFN output dropout", o, g.last_noise, h, act, a)
    s2 = g.add(h, a)
    pt("output residual", h, s2, act, a)
    out = g.layer_norm(s2, pre + "output.LayerNorm", H)
    if g.checkpointing:
        g.end_region([out, h, a, act])
    if held is not None:
        g.moment("forward: the last layer's output LayerNorm", [out, *g.last_stats, s2, h, a, x, act, mask, *held])
    del locs
    return out


def deberta_forward(g: DebertaGraph, cfg: ModelConfig, head: str = "none", num_labels: int = 2) -> T:
    """DebertaV2Model(input_ids) and engine.loss_of's loss (last_hidden_state.float().mean())."""
    B, S, H = g.B, g.S, cfg.hidden_dim
    ids = g.persistent(B * S, "int64", "input_ids")
    ones = g.new(B * S, F32, "attention_mask = ones")  # DebertaV2Model.forward's locals until it returns
    types = g.new(B * S, "int64", "token_type_ids = zeros")
    x, _ = _embeddings(g, cfg, ids, ones, types)
    mask = g.new(B * S * S, F32, "get_attention_mask (B, 1, S, S)")
    model_locs = [ones, types, mask]
    rel: T | None = None
    frame: list[Storage] = []  # what a checkpointed layer's frame keeps beside its inputs
    if cfg.relative_attention:
        if cfg.position_buckets > 0:  # build_relative_position's make_log_bucket_position: its last torch.where
            SS = S * S
            i64 = [g.new(S, "int64", "q_ids"), g.new(S, "int64", "k_ids")] + [g.new(SS, "int64") for _ in range(3)]
            fl = [g.new(SS, F32) for _ in range(4)]  # log_pos, type_as(log_pos), log_pos * sign, where's output
            g.moment("forward: the encoder's relative positions (make_log_bucket_position)",
                     [x, *model_locs, *i64, *fl, g.new(SS, "bool", "abs_pos <= mid")])
        model_locs.append(g.new(S * S, "int64", "relative_pos"))
        frame.append(model_locs[-1].st)
        rel = g.param("encoder.rel_embeddings.weight", rel_rows(cfg) * H)
        # native_layer_norm's mean and rstd outlive it only when its node saves them: some input requires grad
        # (LoRA freezes rel_embeddings and encoder.LayerNorm: the statistics die with the call)
        ln_node = any(g.requires(k) for k in ("encoder.rel_embeddings.weight", "encoder.LayerNorm.weight",
                                              "encoder.LayerNorm.bias"))
        g.rel_requires_grad = ln_node if cfg.norm_rel_ebd == "layer_norm" else g.requires("encoder.rel_embeddings.weight")
        if cfg.norm_rel_ebd == "layer_norm" and cfg.pos_att_type:
            rel = g.layer_norm(rel, "encoder.LayerNorm", H)
            model_locs += g.last_stats if ln_node else []
        elif cfg.norm_rel_ebd == "layer_norm":  # a LayerNorm the loss does not reach: its output and statistics
            dead = [g.new(rel.numel, rel.dtype, "LayerNorm"), g.new(rel_rows(cfg), rel.dtype),
                    g.new(rel_rows(cfg), rel.dtype)]
            dead = dead if ln_node else dead[:1]  # its node keeps the statistics where an input requires grad
            model_locs += dead
            frame += [t.st for t in dead[1:]]  # a checkpointed frame keeps the output, its node the statistics
            rel = dead[0]
        model_locs.append(rel)
        frame.append(rel.st)
    outs: list[T] = [x]  # all_hidden_states (output_hidden_states=True): every layer's output until the model returns
    L = cfg.num_layers
    for i in range(L):
        x = _layer(g, cfg, x, i, mask, rel, [*outs, *model_locs] if i == L - 1 else None, frame)
        outs.append(x)
    if head != "none":  # a task model: loss = logits.float().mean()
        hx, logits = _head(g, cfg, x, head, num_labels)
        g.moment("forward: the head", [x, hx, logits, *g.linear_temps()])
        x = logits
    loss = g.sum_mean(x)
    f32 = loss.fn.inputs[0] if loss.fn is not None else None
    g.moment("forward: the loss", [loss, x] + ([f32] if f32 is not None else []))  # mean's 0-d output too
    return loss


def _head(g: DebertaGraph, cfg: ModelConfig, seq: T, head: str, num_labels: int) -> tuple[T, T]:
    """DebertaV2ForSequenceClassification: ContextPooler (hidden_states[:, 0], dropout (pooler_dropout 0), dense,
    ACT2FN[pooler_hidden_act] (gelu)), dropout (cls_dropout None: hidden_dropout_prob), classifier;
    DebertaV2ForTokenClassification: dropout, classifier on every token. (the last Linear's input, the logits)."""
    H, N, B = cfg.hidden_dim, num_labels, g.B
    if head == "classification":
        x = g.linear(_first_token(g, seq), "pooler.dense", H, H, rows=B)
        x = g.dropout(_activation(g, x, "gelu"), cfg.dropout)
        return x, g.linear(x, "classifier", H, N, rows=B)
    if head == "mlm":  # the legacy head (bert_forward._mlm_head): dense H -> E, hidden_act, LayerNorm, tied decoder
        return _mlm_head(g, cfg, seq)
    if head != "token":
        raise ValueError(f"the step's replay has no {head!r} head")
    x = g.dropout(seq, cfg.dropout)
    return x, g.linear(x, "classifier", H, N)


def deberta_peak(cfg: ModelConfig, w: Workload, base: dict[str, int], trainable: Callable[[str], bool] = lambda k: True,
                 adapt: Adapt | None = None, requires: Callable[[str], bool] | None = None) -> tuple[Peak, int]:
    """backward.bert_style_peak for DeBERTa-v2 (its own attention, whatever w.attention): (the step's activation-side
    peak from `base`; saved bytes). adapt: peft LoRA's adapted Linears (backward_lora.adapt). requires:
    requires_grad as built, where it differs from `trainable` (a tensor the loss never reaches, which gets no
    gradient: step._unused)."""
    g = DebertaGraph(cfg, w.forward_dtype, w.batch_size, w.seq_len, trainable, w.checkpointing)
    g.adapt = adapt
    g.requires = requires or trainable
    loss = deberta_forward(g, cfg, w.head, w.num_labels)
    saved = g.saved_bytes()
    start = dict(base)
    start["saved activations"] = start.get("saved activations", 0) + saved
    held = sum(st.nbytes for st in g.held if id(st) not in g.saved)  # the inputs_embeds leaf, unless saved
    start["temporaries"] = start.get("temporaries", 0) + 4 + held  # (its LayerNorm saves it: no position table)
    peak = run_backward(g, loss, start)
    base_total = sum(base.values()) + 4 + held
    return with_forward(peak, g.moments, base, base_total - 4), saved


__all__ = ["deberta_forward", "deberta_peak"]
