"""The forwards of the BERT-style families (BERT, ALBERT, RoBERTa, DistilBERT, ELECTRA; transformers 5.23
modeling_*.py), recorded on graph.Graph as autograd records them, with the moments Python holds: what the family's
Step (families/base.py) says of its embeddings, projection, layers, pooler and heads. backward.py replays them.

No torch here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ..config import ModelConfig
from ..families import family
from ..replay.symbolic import F32
from .graph import SEQ_MAX, Graph, Node, T, _accumulate, _grads_like

# ---- the forwards of the BERT-style families (HF transformers 5.23 modeling_*.py), recorded -----------------
_ACT_SAVES_RESULT = {"relu": True, "tanh": True, "gelu": False, "silu": False}


def _activation(g: Graph, x: T, name: str, point: Callable[[str, list[T]], None] | None = None) -> T:
    """ACT2FN[name] (transformers/activations.py) op by op, as albert_core.replay.symbolic replays its saves. point(what,
    alive): a moment after each op, `alive` the tensors the expression holds then (its input x aside): Python
    evaluates left to right and drops a temporary once the op reading it returns."""
    def pt(what: str, *alive: T) -> None:
        if point is not None:
            point(f"{name} ({what})", [x, *alive])

    if name in _ACT_SAVES_RESULT:  # GeluBackward0 / SiluBackward0 save the input, Relu/Tanh the result
        y = g.unary(x, f"{name.capitalize()}Backward0", _ACT_SAVES_RESULT[name])
        pt("output", y)
        return y
    op = _COMPOSED.get(name)
    if op is None:
        raise ValueError(f"no backward model for hidden_act {name!r}")
    return op(g, x, pt)


Point = Callable[..., None]  # pt(what, *the tensors alive beside the input)


def _half_times_one_plus(g: Graph, a: T, f: T, name: str, pt: Point) -> T:
    """The GELU approximations' tail, a * (1 + f) with a = 0.5 * x: a new tensor, then the product (MulBackward0
    saves both factors)."""
    t = g.plus(f)
    pt(f"1 + {name}", a, f, t)
    y = g.mul(a, t)
    pt("output", a, t, y)
    return y


def _gelu_new(g: Graph, x: T, pt: Point) -> T:
    """0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*pow(x,3))))"""
    a = g.scalar(x)
    pt("0.5 * x", a)
    p = g.unary(x, "PowBackward0", False, temps=2)  # pow_backward: grad * (3 * self.pow(2)), 2 temporaries
    pt("pow", a, p)
    p2 = g.scalar(p)
    pt("0.044715 * pow", a, p, p2)
    s_ = g.add(x, p2)
    pt("x + .", a, p2, s_)
    d = g.scalar(s_)
    pt("sqrt(2/pi) * .", a, s_, d)
    t0 = g.unary(d, "TanhBackward0", True)
    pt("tanh", a, d, t0)
    return _half_times_one_plus(g, a, t0, "tanh", pt)


def _gelu_python(g: Graph, x: T, pt: Point) -> T:
    """x*0.5*(1+erf(x/sqrt(2)))"""
    a = g.scalar(x)
    pt("x * 0.5", a)
    d = g.scalar(x)
    pt("x / sqrt(2)", a, d)
    e0 = g.unary(d, "ErfBackward0", False, temps=4)  # 2/sqrt(pi) * exp(-(self.pow(2))) * grad
    pt("erf", a, d, e0)
    return _half_times_one_plus(g, a, e0, "erf", pt)


def _gelu_fast(g: Graph, x: T, pt: Point) -> T:
    """0.5*x*(1+tanh(x*0.7978845608*(1+0.044715*x*x)))"""
    a = g.scalar(x)
    pt("0.5 * x", a)
    b = g.scalar(x)
    pt("x * 0.7978845608", a, b)
    c0 = g.scalar(x)
    pt("0.044715 * x", a, b, c0)
    c1 = g.mul(c0, x)
    pt("0.044715 * x * x", a, b, c0, c1)
    c = g.plus(c1)
    pt("1 + .", a, b, c1, c)
    f = g.mul(b, c)
    pt("x * 0.7978845608 * .", a, b, c, f)
    t0 = g.unary(f, "TanhBackward0", True)
    pt("tanh", a, f, t0)
    return _half_times_one_plus(g, a, t0, "tanh", pt)


def _quick_gelu(g: Graph, x: T, pt: Point) -> T:
    """x * sigmoid(1.702 * x)"""
    s0 = g.scalar(x)
    pt("1.702 * x", s0)
    sg = g.unary(s0, "SigmoidBackward0", True)
    pt("sigmoid", s0, sg)
    y = g.mul(x, sg)
    pt("output", sg, y)
    return y


_COMPOSED: dict[str, Callable[[Graph, T, Point], T]] = {
    "gelu_new": _gelu_new, "gelu_python": _gelu_python, "gelu_fast": _gelu_fast, "quick_gelu": _quick_gelu}


def _embeddings(g: Graph, cfg: ModelConfig, ids: T, positions_new: bool, types_new: int | None,
                pos_rows: int) -> T:
    """BertEmbeddings.forward: word + token_type (+ position) lookups, LayerNorm, dropout. positions_new:
    RoBERTa's create_position_ids_from_input_ids makes a (B, S) int64 tensor; types_new: elements of the
    token_type_ids gather (None: no segment table)."""
    B, S, E = g.B, g.S, cfg.embedding_dim
    V = cfg.vocab_size
    x = g.embedding(ids, "embeddings.word_embeddings", V, E, B * S * E)  # saves the indices
    if g.checkpointing and x.fn is None:  # activation_checkpointing_enable -> enable_input_require_grads: the
        x.st.refs += 1  # frozen lookup's output made a leaf that requires grad (its AccumulateGrad holds it)
        x.st.cat = "temporaries"
        x.fn = Node(SEQ_MAX, "AccumulateGrad(inputs_embeds)", [], [], _accumulate, param="inputs_embeds")
        g.held.append(x.st)
    locs = [x]  # BertEmbeddings.forward's locals
    pos = g.new(B * S, "int64", "position_ids") if positions_new else None
    if types_new is not None:
        tt = g.new(types_new, "int64", "token_type_ids")  # torch.gather of the buffer: a new tensor
        t_emb = g.embedding(tt, "embeddings.token_type_embeddings", cfg.type_vocab_size, E, B * S * E)
        locs += [tt, t_emb]
        x = g.add(x, t_emb)
    pidx = pos if pos is not None else g.persistent(S, "int64", "position_ids buffer")
    p = g.embedding(pidx, "embeddings.position_embeddings", pos_rows, E, (B if positions_new else 1) * S * E)
    x = g.add(x, p)
    locs += [p, x] + ([pos] if pos is not None else [])
    summed, x = x, g.layer_norm(x, "embeddings.LayerNorm", E)
    g.point("forward: the embeddings' LayerNorm", [x, *g.last_stats, *locs], [])  # a frozen lookup saves none
    locs.remove(summed)  # dropped when `embeddings` is rebound to the LayerNorm's output
    out = g.dropout(x, cfg.dropout)
    if out is not x:  # input * noise: the LayerNorm's output, the noise and the product, the lookups still held
        g.point("forward: the embeddings' dropout", [x, *([g.last_noise] if g.last_noise else []), out, *locs], [])
    return out


def _dropped(g: Graph, x: T, out: T) -> list[T]:
    """What a dropout's product leaves alive beside its input: the noise and the product (nothing at p == 0)."""
    return [] if out is x or g.last_noise is None else [g.last_noise, out]


def _attention_eager(g: Graph, cfg: ModelConfig, q: T, k: T, v: T, alive: list[T],
                     held: list[T] | None = None) -> T:
    """eager_attention_forward: matmul(q, k^T) * scaling, softmax, dropout, matmul(probs, v),
    transpose(1, 2).contiguous(). torch.matmul reshapes the (B, A, S, D) views to (B·A, ...): copies unless
    B, A or S is 1; backward's view/reshape of a transposed gradient copies (A and S above 1 for Q and V,
    B and S above 1 for K, whose gradient reaches its Linear transposed). The moments after each op: its
    inputs and output, matmul's copies until it returns, `attn_weights` freed when rebound, the caller's
    q, k, v and `alive`."""
    B, S, A, H = g.B, g.S, cfg.num_heads, cfg.hidden_dim
    fwd = B > 1 and A > 1 and S > 1

    def pt(what: str, *ts: T) -> None:
        g.point(f"forward: the last layer's attention ({what})", [q, k, v, *ts, *alive], held)

    qr = g.copy(q, fwd, False)
    kr = g.copy(k, fwd, False)
    raw = g.bmm(qr, kr, B * A * S * S, g.c)
    pt("q @ k^T", qr, kr, raw)
    scores = g.scalar(raw)  # * scaling
    pt("scaling", raw, scores)
    probs = g.unary(scores, "SoftmaxBackward0", True)  # _softmax_backward_data(grad, output)
    pt("softmax", scores, probs)
    dropped = g.dropout(probs, cfg.attention_dropout)
    pt("dropout", probs, *_dropped(g, probs, dropped))
    g.attn_weights = dropped  # returned beside the output: a local of the caller
    vr = g.copy(v, fwd, False)
    ctx = g.bmm(dropped, vr, B * S * H, g.c)
    pt("probs @ v", dropped, vr, ctx)
    out = g.copy(ctx, A > 1 and S > 1, B > 1 and A > 1 and S > 1)  # contiguous(); UnsafeViewBackward0's reshape
    pt("contiguous", dropped, ctx, out)
    return out


def _attention_sdpa(g: Graph, cfg: ModelConfig, q: T, k: T, v: T, alive: list[T],
                    held: list[T] | None = None) -> T:
    """CPU sdpa without attention dropout: _scaled_dot_product_flash_attention_for_cpu saves q, k, v (views of
    the projections), its (B, S, A, D)-laid output and a float32 logsumexp (B, A, S); its backward allocates
    grad_q, grad_k, grad_v in q's layout, so no view backward copies. The moment: its output and logsumexp (dropped
    as sdpa returns), q, k, v and `alive`."""
    B, S, A, H = g.B, g.S, cfg.num_heads, cfg.hidden_dim
    lse = g.new(B * A * S, F32, "logsumexp")
    node_out = g.op("ScaledDotProductFlashAttentionForCpuBackward0", [q, k, v], [(B * S * H, q.dtype)],
                    [q, k, v, lse], _grads_like)[0]
    if node_out.fn is not None:  # the node also saves its own output
        g.keep(node_out.fn, node_out.st)
    g.point("forward: the last layer's attention (sdpa)", [q, k, v, node_out, lse, *alive], held)
    return node_out


def _attention_math(g: Graph, cfg: ModelConfig, q: T, k: T, v: T, alive: list[T],
                    held: list[T] | None = None) -> T:
    """CPU sdpa with attention dropout: _scaled_dot_product_attention_math (aten/src/ATen/native/transformers/
    attention.cpp): 16-bit q, k, v upcast to float32 (query, key, value in turn), q * sqrt(scale) and
    k^T * sqrt(scale), matmul, _safe_softmax (saves its result), dropout, matmul with v, .to(the query dtype);
    then sdpa_attention_forward's transpose(1, 2).contiguous(). The moments after each op: the function's
    locals (query_acc, key_acc, value_acc, query, attn: the old attn freed when assigned), a full-expression's
    temporaries (the scaled key and matmul's copies until the statement ends), the returned tuple's second
    element (attn.to(...), made first: GCC evaluates the arguments right to left), q, k, v and `alive`."""
    B, S, A, H = g.B, g.S, cfg.num_heads, cfg.hidden_dim
    fwd = B > 1 and A > 1 and S > 1

    def pt(what: str, *ts: T) -> None:
        g.point(f"forward: the last layer's attention ({what})", [q, k, v, *ts, *alive], held)

    qa = g.cast(q, F32)
    pt("query to float32", qa)
    ka = g.cast(k, F32)
    pt("key to float32", qa, ka)
    va = g.cast(v, F32)
    pt("value to float32", qa, ka, va)
    accs = [qa, ka, va]
    query = g.scalar(qa)  # query_acc * scaling_factor (a local until the function returns)
    pt("scaled query", *accs, query)
    kt = g.scalar(ka)  # key_acc.transpose(-2, -1) * scaling_factor: a temporary of the statement
    pt("scaled key", *accs, query, kt)
    qs = g.copy(query, fwd, False)  # matmul's reshape
    ks = g.copy(kt, fwd, False)
    scores = g.bmm(qs, ks, B * A * S * S, F32)
    pt("q @ k^T", *accs, query, kt, qs, ks, scores)
    probs = g.unary(scores, "SafeSoftmaxBackward0", True)  # _softmax_backward_data(grad, result)
    pt("softmax", *accs, query, scores, probs)
    dropped = g.dropout(probs, cfg.attention_dropout)
    pt("dropout", *accs, query, probs, *_dropped(g, probs, dropped))
    attn = g.cast(dropped, q.dtype)  # the returned attention weights, in the query dtype (sdpa drops them)
    pt("weights to the query dtype", *accs, query, dropped, attn)
    g.attn_weights = None
    vr = g.copy(va, fwd, False)
    ctx32 = g.bmm(dropped, vr, B * S * H, F32)
    pt("probs @ v", *accs, query, dropped, attn, vr, ctx32)
    ctx = g.cast(ctx32, q.dtype)
    # the math function's float32 locals and the projections BertSelfAttention still holds
    g.point("forward: the last layer's attention", [q, k, v, *accs, query, dropped, attn, ctx32, ctx, *alive], held)
    out = g.copy(ctx, A > 1 and S > 1, B > 1 and A > 1 and S > 1)
    pt("contiguous", ctx, out)
    return out


def _projection(g: Graph, x: T, key: str, H: int, grad_copies: bool) -> T:
    p = g.linear(x, key, H, H)
    return g.copy(p, False, grad_copies)  # .view(B, S, A, D): ViewBackward0 reshapes a transposed gradient


def _qkv_attention(g: Graph, cfg: ModelConfig, x: T, pre: str, names: dict[str, str], held: list[T] | None,
                   sdpa: bool) -> tuple[T, T, T, T]:
    """_bert_layer's Q, K and V projections and its attention (eager, sdpa's flash kernel or its math path with
    attention dropout), with their moments: (q, k, v, the context)."""
    H, S, A, B = cfg.hidden_dim, g.S, cfg.num_heads, g.B

    def lin(what: str, out: T, *ts: T) -> None:  # a Linear's output with its input (or its cast) and casts
        g.point(f"forward: the last layer's {what}", [out, *g.linear_temps(), *ts, x], held)

    qv_copy, k_copy = (A > 1 and S > 1, B > 1 and S > 1) if not sdpa or cfg.attention_dropout > 0 else (False, False)
    g.ctx = [], held
    q = _projection(g, x, pre + names["q"], H, qv_copy)
    lin("query", q)
    g.ctx = [q], held
    k = _projection(g, x, pre + names["k"], H, k_copy)
    lin("key", k, q)
    g.ctx = [q, k], held
    v = _projection(g, x, pre + names["v"], H, qv_copy)
    lin("value", v, q, k)
    g.ctx = None
    g.attn_weights = None
    if not sdpa:
        ctx = _attention_eager(g, cfg, q, k, v, [x], held)
    else:
        ctx = _attention_math(g, cfg, q, k, v, [x], held) if cfg.attention_dropout > 0 \
            else _attention_sdpa(g, cfg, q, k, v, [x], held)
    return q, k, v, ctx


def _bert_layer(g: Graph, cfg: ModelConfig, x: T, pre: str, style: LayerStyle, held: list[T] | None = None,
                sdpa: bool = False) -> T:
    """BertLayer (RobertaLayer, ElectraLayer), AlbertLayer or DistilBERT's TransformerBlock: Q/K/V, attention,
    dense, dropout, LayerNorm of the residual sum, FFN (dropout in BERT's), LayerNorm.

    The moments (recorded where `held`, the callers' tensors, is known: the last layer) follow each op: its
    inputs, its output and its temporaries (a Linear's autocast casts, a LayerNorm's mean and rstd, a dropout's
    noise), with what Python still holds then: the layer's input x, the attention weights (the layer's `_`),
    BertAttention's context through BertSelfOutput, AlbertAttention's q, k, v through its dense and LayerNorm,
    DistilBERT's q, k, v and context through out_lin, BertLayer's intermediate output through BertOutput; a local
    rebound is freed once the new value exists. Where no op of the layer records a node (every layer frozen)
    nothing is saved and these moments are the frozen forward's working set, the same in every frozen layer."""
    H = cfg.hidden_dim
    names, _, residual_first, attn_dropout = style
    bert = names is _BERT_NAMES
    if g.checkpointing:  # GradientCheckpointingLayer: checkpoint(layer.__call__, x, use_reentrant=False)
        g.begin_region(x)

    def pt(what: str, *ts: T) -> None:
        g.point(f"forward: the last layer's {what}", [*ts, x], held)

    def lin(what: str, out: T, *ts: T) -> None:  # a Linear's output with its input (or its cast) and casts
        pt(what, out, *g.linear_temps(), *ts)

    q, k, v, ctx = _qkv_attention(g, cfg, x, pre, names, held, sdpa)
    w: list[T] = [g.attn_weights] if g.attn_weights is not None else []  # eager's: the layer's `_` holds them
    qkv = [] if bert else [q, k, v]  # AlbertAttention's and DistilBertSelfAttention's locals
    g.ctx = [*w, *qkv, x], held
    d = g.linear(ctx, pre + names["dense"], H, H)
    lin("attention output dense", d, ctx, *w, *qkv)
    g.ctx = None
    keep = [ctx] if bert else []  # BertAttention holds the context through BertSelfOutput; ALBERT rebinds it
    if names is _DISTILBERT_NAMES:
        qkv = []  # DistilBertSelfAttention returned
    a = d
    if attn_dropout:  # DistilBERT's TransformerBlock has none on the attention output
        a = g.dropout(d, cfg.dropout)
        pt("attention output dropout", d, *_dropped(g, d, a), *keep, *w, *qkv)
    d = a
    s_ = g.add(x, a) if residual_first else g.add(a, x)
    pt("attention residual", d, s_, *keep, *w, *qkv)
    a = g.layer_norm(s_, pre + names["ln1"], H)
    # the attention's LayerNorm: its output, the dense (dropout) output, the attention weights returned beside
    # the context; BertAttention's self_outputs still hold the context, AlbertAttention's locals q, k, v
    pt("attention LayerNorm", a, *g.last_stats, s_, d, *keep, *w, *qkv)
    return _bert_ffn(g, cfg, x, a, pre, style, w, held)


def _bert_ffn(g: Graph, cfg: ModelConfig, x: T, a: T, pre: str, style: LayerStyle, w: list[T],
              held: list[T] | None) -> T:
    """_bert_layer's FFN on the attention's output a: dense, activation, dense (dropout in BERT's), LayerNorm of the
    residual sum, with their moments (x the layer's input, w the attention weights the layer still holds)."""
    H, I, names = cfg.hidden_dim, cfg.intermediate_dim, style.names

    def pt(what: str, *ts: T) -> None:
        g.point(f"forward: the last layer's {what}", [*ts, x], held)

    g.ctx = [a, *w, x], held
    h = g.linear(a, pre + names["ffn"], H, I)
    pt("FFN", h, *g.linear_temps(), a, *w)
    act = h = _activation(g, h, cfg.hidden_act, lambda what, ts: pt(f"FFN activation: {what}", *ts, a, *w))
    inter = [h] if names is _BERT_NAMES else []  # BertLayer.feed_forward_chunk holds intermediate_output
    g.ctx = [act, a, *w, x], held
    h = g.linear(h, pre + names["ffn_out"], I, H)
    g.ctx = None
    pt("FFN output", h, *g.linear_temps(), act, a, *w)
    o = h
    if style.ffn_dropout:
        h = g.dropout(o, cfg.dropout)
        pt("FFN output dropout", o, *_dropped(g, o, h), *inter, a, *w)
    s2 = g.add(h, a)
    pt("output residual", h, s2, *inter, a, *w)
    out = g.layer_norm(s2, pre + names["ln2"], H)
    if g.checkpointing:
        g.end_region([out, h, a, *inter])
    if held is not None:  # the last layer's output LayerNorm: its locals and what the callers hold
        g.moment("forward: the last layer's output LayerNorm", [out, *g.last_stats, s2, h, a, x, *inter, *w, *held])
    return out


_BERT_NAMES = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
               "dense": "attention.output.dense", "ln1": "attention.output.LayerNorm",
               "ffn": "intermediate.dense", "ffn_out": "output.dense", "ln2": "output.LayerNorm"}
_DISTILBERT_NAMES = {"q": "attention.q_lin", "k": "attention.k_lin", "v": "attention.v_lin", "dense": "attention.out_lin",
                     "ln1": "sa_layer_norm", "ffn": "ffn.lin1", "ffn_out": "ffn.lin2", "ln2": "output_layer_norm"}
_ALBERT_NAMES = {"q": "attention.query", "k": "attention.key", "v": "attention.value", "dense": "attention.dense",
                 "ln1": "attention.LayerNorm", "ffn": "ffn", "ffn_out": "ffn_output", "ln2": "full_layer_layer_norm"}


class LayerStyle(NamedTuple):
    """What differs between the BERT-style layers _bert_layer records (Step.layer names one)."""

    names: dict[str, str]  # the layer's module names
    ffn_dropout: bool  # dropout after the FFN
    residual_first: bool  # the residual added as x + a
    attn_dropout: bool  # dropout on the attention output


_LAYERS = {"BertLayer": LayerStyle(_BERT_NAMES, True, False, True),
           "AlbertLayerGroup": LayerStyle(_ALBERT_NAMES, False, True, True),
           "TransformerBlock": LayerStyle(_DISTILBERT_NAMES, True, False, False)}


def _first_token(g: Graph, x: T) -> T:
    """sequence_output[:, 0]: a view whose backward (select_backward) allocates zeros of the whole output."""
    first = g.op("SelectBackward0", [x], [(g.B * x.numel // (g.B * g.S), x.dtype)], [], _grads_like)[0]
    first.st = x.st  # a view: an op saving it saves the whole storage
    return first


def _mlm_head(g: Graph, cfg: ModelConfig, seq: T) -> tuple[T, T]:
    """*ForMaskedLM's head on the sequence output: dense (H -> E for ALBERT and ELECTRA's generator), the
    activation (config.hidden_act; RobertaLMHead's gelu, ElectraGeneratorPredictions' get_activation("gelu")),
    LayerNorm, then the decoder, whose weight is the word-embedding table (tied) and whose bias is the head's
    own `bias`: (the decoder's input, the (B, S, V) logits)."""
    m = family(cfg.family).STEP.mlm
    if m is None:
        raise ValueError(f"the step's replay has no MLM head for family {cfg.family!r}")
    H, E, V = cfg.hidden_dim, cfg.embedding_dim, cfg.vocab_size
    W = E if m.e_wide else H  # the head's width: an E-wide head's decoder reads the E-wide table
    x = g.linear(seq, m.dense, H, W)
    x = _activation(g, x, m.activation or cfg.hidden_act)
    x = g.layer_norm(x, m.norm, W)
    return x, g.linear(x, m.decoder, W, V, wkey="embeddings.word_embeddings.weight", bkey=m.bias)


def _head(g: Graph, cfg: ModelConfig, seq: T, pooled: T | None, head: str, num_labels: int) -> tuple[T, T]:
    """The task model's head on the base model's outputs (transformers 5.23 *For{SequenceClassification,
    TokenClassification}): (the last Linear's input, the logits)."""
    st, H, N, B = family(cfg.family).STEP, cfg.hidden_dim, num_labels, g.B
    if head == "mlm":
        return _mlm_head(g, cfg, seq)
    if head not in ("classification", "token"):
        raise ValueError(f"the step's replay has no {head!r} head")
    rows: int | None = B
    p = cfg.dropout if st.classifier_dropout is None else st.classifier_dropout  # ALBERT: classifier_dropout_prob
    if head == "classification":
        if st.classifier == "pooled":  # pooled output, dropout, classifier
            assert pooled is not None
            x, key = g.dropout(pooled, p), "classifier"
        elif st.classifier == "pre_classifier":  # DistilBERT: hidden_state[:, 0], pre_classifier, ReLU, dropout
            x = g.unary(g.linear(_first_token(g, seq), "pre_classifier", H, H, rows=B), "ReluBackward0", True)
            x, key = g.dropout(x, 0.2), "classifier"  # seq_classif_dropout 0.2
        else:  # Roberta/ElectraClassificationHead: features[:, 0], dropout, dense, tanh/gelu, dropout, out_proj
            x = g.linear(g.dropout(_first_token(g, seq), cfg.dropout), "classifier.dense", H, H, rows=B)
            x = g.unary(x, "TanhBackward0", True) if st.classifier == "tanh" else g.unary(x, "GeluBackward0", False)
            x, key = g.dropout(x, cfg.dropout), "classifier.out_proj"
    else:  # token: dropout, classifier on every token
        x, key, rows = g.dropout(seq, p), "classifier", None
    return x, g.linear(x, key, H, N, rows=rows)


class Encoder(NamedTuple):
    """A family's own encoder recording (mpnet_forward.ENCODER): what the encoder makes once and holds through every
    layer (start(g, cfg, the callers' tensors)), and its layer (layer(g, cfg, x, prefix, that tensor, the callers' tensors or None))."""

    start: Callable[[Graph, ModelConfig, list[T]], T]
    layer: Callable[[Graph, ModelConfig, T, str, T, list[T] | None], T]


def bert_style_forward(g: Graph, cfg: ModelConfig, attention: str = "eager", head: str = "none",
                       num_labels: int = 2, encoder: Encoder | None = None) -> T:
    """BertModel / RobertaModel / ElectraModel / AlbertModel / MPNetModel (input_ids only; encoder: the family's own
    encoder recording) and engine.loss_of's loss."""
    B, S, H = g.B, g.S, cfg.hidden_dim
    fam = family(cfg.family)
    st = fam.STEP
    ids = g.persistent(B * S, "int64", "input_ids")
    types = (B * S if st.positions_from_ids else S) if cfg.type_vocab_size else None  # the token_type_ids gather
    pos_rows = next(m.n_in for m in fam.embedding_modules(cfg) if m.path == "embeddings.position_embeddings")
    x = _embeddings(g, cfg, ids, st.positions_from_ids, types, pos_rows)
    emb = x  # BertModel's embedding_output: alive until the model returns
    if st.projection is not None and any(m.path == st.projection for m in fam.other_modules(cfg)):
        x = g.linear(x, st.projection, cfg.embedding_dim, H)  # AlbertModel's E -> H mapping, ElectraModel's project
        if st.projection_rebinds:  # ELECTRA rebinds hidden_states
            emb = x
    L, sdpa = cfg.num_layers, attention == "sdpa"
    style = _LAYERS.get(st.layer, _LAYERS["BertLayer"])
    enc = encoder.start(g, cfg, [emb]) if encoder is not None else None  # held by the encoder until it returns
    for i in range(L):
        last = i == L - 1
        if encoder is not None and enc is not None:
            x = encoder.layer(g, cfg, x, fam.layer_prefix(cfg, i, 0), enc, [emb, enc] if last else None)
        elif st.layer == "AlbertLayerGroup":  # AlbertTransformer: layer step i runs group int(i / (L / G)), all its inner layers
            grp, group_in = int(i / (L / cfg.num_groups)), x
            for kk in range(cfg.inner_group_num):
                held = [emb, group_in] if last and kk == cfg.inner_group_num - 1 else None
                x = _bert_layer(g, cfg, x, fam.layer_prefix(cfg, grp, kk), style, held, sdpa)
        else:
            x = _bert_layer(g, cfg, x, fam.layer_prefix(cfg, i, 0), style, [emb] if last else None, sdpa)
    seq = x
    # the pooler (dense + tanh on sequence_output[:, 0]) where the model keeps it: task models drop it but for
    pooled = None  # BERT's and ALBERT's sequence classification (add_pooling_layer=False)
    if st.pooler is not None and head not in fam.POOLER_DROPPED_FOR:
        lin = g.linear(_first_token(g, x), st.pooler, H, H, rows=B)  # a frozen dense's casts: temporaries of the call
        g.moment("forward: the pooler's dense", [seq, emb, *g.linear_temps(), lin])
        pooled = g.unary(lin, "TanhBackward0", True)
        g.moment("forward: the pooler", [seq, emb, lin, pooled])
    if head != "none":  # a task model: loss = logits.float().mean()
        x, logits = _head(g, cfg, seq, pooled, head, num_labels)
        alive = [seq, x, logits] + ([pooled] if pooled is not None else [])  # the model's outputs, the head's x
        g.moment("forward: the head", alive + g.linear_temps())
        loss = g.sum_mean(logits)
        f32 = loss.fn.inputs[0] if loss.fn is not None else None
        g.moment("forward: the loss", [loss, logits] + ([f32] if f32 is not None else []))  # mean's 0-d output
        return loss
    loss = g.sum_mean(seq)
    f32 = loss.fn.inputs[0] if loss.fn is not None else None
    g.moment("forward: the loss", [loss, seq] + ([pooled] if pooled is not None else []) + ([f32] if f32 is not None else []))
    if pooled is not None:
        loss = g.add(loss, g.sum_mean(pooled))
    return loss
