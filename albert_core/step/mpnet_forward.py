"""MPNet's encoder (transformers 5.23 modeling_mpnet.py) recorded on graph.Graph for the training step's replay: the
relative attention bias computed once a forward, and MPNetLayer's own eager attention, op by op with the moments
Python holds. bert_forward.bert_style_forward runs the rest (embeddings, pooler, heads, loss); backward.py replays.

What differs from BertLayer's recording (bert_forward._bert_layer):
- MPNetEncoder.compute_position_bias: the (S, S) bucket indices (saved by the lookup), the (S, S, A) lookup,
  permute/unsqueeze/expand views and .contiguous(): a (B, A, S, S) tensor the encoder holds through every layer.
  Its backward: the layers' gradients summed in the clone's input buffer (out of place, InputBuffer::accumulate),
  expand's sum over the batch, and embedding_dense_backward's contiguous copy of the permuted gradient.
- MPNetSelfAttention: scores = q @ k^T / sqrt(d), the bias added in place (AddBackward0: no new storage; under
  autocast validate_outputs casts the bias's gradient to float32), softmax, dropout, @ v, permute().contiguous(),
  then its own output Linear `o`, all while q, k, v, the scores and the probabilities are still its locals.
- MPNetAttention: LayerNorm(dropout(o) + x), `o` held by self_outputs until it returns. No attention weights are
  returned (output_attentions False).

No torch here.
"""

from __future__ import annotations

from ..config import ModelConfig
from ..replay.symbolic import F32
from .bert_forward import Encoder, _activation, _dropped, _projection
from .graph import Engine, Formula, Graph, Node, Storage, T, _add_formula, _pass


def relative_bias(g: Graph, cfg: ModelConfig, held: list[T]) -> T:
    """MPNetEncoder.compute_position_bias: the (B, A, S, S) bias, in the weights' dtype (embedding: no autocast).
    relative_position_bucket's (S, S) temporaries are moments of their own (int64 and float32, several alive at once:
    on small batches and heads the step's peak); `held`: the callers' tensors (the embedding output)."""
    B, S, A = g.B, g.S, cfg.num_heads
    SS = S * S

    def pt(what: str, *ts: T) -> None:
        g.moment(f"forward: the relative position bias ({what})", [*ts, *held])

    base = [g.new(S, "int64"), g.new(S, "int64"), g.new(SS, "int64")]  # context_position, memory_position, their
    n = g.new(SS, "int64")  # difference; n = -relative_position
    pt("-relative_position", *base, n)
    lt = g.new(SS, "bool")
    lg = g.new(SS, "int64")
    pt("(n < 0).to(torch.long)", *base, n, lt, lg)
    m = g.new(SS, "int64")
    pt("* num_buckets", *base, n, lg, m)
    ret = g.new(SS, "int64", "relative position buckets")  # 0 + ...: the tensor the buckets are added into
    pt("ret +=", *base, n, m, ret)
    n2 = g.new(SS, "int64")
    pt("torch.abs(n)", *base, ret, n, n2)
    live = [*base, ret, n2, g.new(SS, "bool")]  # is_small = n < max_exact
    f = g.new(SS, F32)  # n.float(), then / max_exact, log, / log(max_distance / max_exact), * (num_buckets - max_exact)
    for what in ("/ max_exact", "torch.log", "/ math.log(max_distance / max_exact)", "* (num_buckets - max_exact)"):
        f2 = g.new(SS, F32)
        pt(what, *live, f, f2)
        f = f2
    lg = g.new(SS, "int64")
    pt(".to(torch.long)", *live, f, lg)
    val = g.new(SS, "int64")
    pt("max_exact +", *live, lg, val)
    full, mn = g.new(SS, "int64"), g.new(SS, "int64")
    pt("torch.min(val_if_large, torch.full_like(...))", *live, val, full, mn)
    pt("ret += torch.where(is_small, n, val_if_large)", *live, mn, g.new(SS, "int64"))  # added in place into ret
    W = g.param("encoder.relative_attention_bias.weight", cfg.relative_attention_num_buckets * A)
    looked = g.op("EmbeddingBackward0", [ret, W], [(SS * A, g.md)], [ret], _embedding_permuted)[0]
    pt("lookup", *base, ret, looked)
    one = g.op("ExpandBackward0", [looked], [(A * SS, g.md)], [], _sum_over_batch(B))[0]  # permute, unsqueeze,
    one.st = looked.st  # expand: views of the lookup, expand's backward sums over the batch
    bias = g.op("CloneBackward0", [one], [(B * A * SS, g.md)], [], _pass)[0]  # .contiguous()
    pt(".contiguous()", *base, ret, looked, bias)
    return bias


def _embedding_permuted(e: Engine, n: Node, g: list[Storage | None]) -> list[Storage | None]:
    """embedding_dense_backward: grad.contiguous() of the permuted (S, S, A) gradient (a copy), then the table's
    gradient (index_add into zeros), the copy freed as it returns."""
    _, W = n.inputs
    looked_numel = g[0].nbytes if g[0] is not None else 0
    tmp = e.alloc(looked_numel)
    gw = e.grad_for(W) if W is not None else None
    e.unref(tmp)
    return [None, gw]


def _sum_over_batch(B: int) -> Formula:
    """ExpandBackward0: at::sum_to(grad, (1, A, S, S)): a new tensor when B > 1, the gradient itself when B == 1."""
    def f(e: Engine, n: Node, g: list[Storage | None]) -> list[Storage | None]:
        t = n.inputs[0]
        if t is None or g[0] is None:
            return [None]
        return [e.ref(g[0])] if B == 1 else [e.grad_for(t)]
    return f


def _add_inplace(g: Graph, scores: T, bias: T) -> T:
    """scores += bias (add_.Tensor): AddBackward0 on scores' storage, the output scores' dtype; the gradient goes to
    both (graph._add_formula: the bias's cast to float32 by validate_outputs under autocast)."""
    res = g.op("AddBackward0", [scores, bias], [(scores.numel, scores.dtype)], [], _add_formula)[0]
    res.st = scores.st  # in place: the same storage
    return res


def _self_attention(g: Graph, cfg: ModelConfig, x: T, pre: str, bias: T, held: list[T] | None) -> T:
    """MPNetSelfAttention: q, k, v; q @ k^T / sqrt(d), the bias added in place, softmax, dropout, @ v, the contiguous
    copy, then its own output Linear o, while q, k, v, the scores and probabilities are still its locals: o."""
    H, S, A, B = cfg.hidden_dim, g.S, cfg.num_heads, g.B
    fwd = B > 1 and A > 1 and S > 1

    def pt(what: str, *ts: T) -> None:
        g.point(f"forward: the last layer's {what}", [*ts, x], held)

    qv_copy, k_copy = A > 1 and S > 1, B > 1 and S > 1
    q = _projection(g, x, pre + "attention.attn.q", H, qv_copy)
    pt("q", q, *g.linear_temps())
    k = _projection(g, x, pre + "attention.attn.k", H, k_copy)
    pt("k", k, *g.linear_temps(), q)
    v = _projection(g, x, pre + "attention.attn.v", H, qv_copy)
    pt("v", v, *g.linear_temps(), q, k)
    qkv = [q, k, v]
    qr, kr = g.copy(q, fwd, False), g.copy(k, fwd, False)  # matmul's reshapes
    raw = g.bmm(qr, kr, B * A * S * S, g.c)
    pt("attention (q @ k^T)", *qkv, qr, kr, raw)
    scores = g.scalar(raw)  # / math.sqrt(head size): DivBackward1, grad / c
    pt("attention (/ sqrt(d))", *qkv, raw, scores)
    scores = _add_inplace(g, scores, bias)
    probs = g.unary(scores, "SoftmaxBackward0", True)
    pt("attention (softmax)", *qkv, scores, probs)
    dropped = g.dropout(probs, cfg.attention_dropout)
    pt("attention (dropout)", *qkv, scores, probs, *_dropped(g, probs, dropped))
    vr = g.copy(v, fwd, False)
    ctx = g.bmm(dropped, vr, B * S * H, g.c)
    pt("attention (probs @ v)", *qkv, scores, dropped, vr, ctx)
    c = g.copy(ctx, A > 1 and S > 1, B > 1 and A > 1 and S > 1)  # permute(0, 2, 1, 3).contiguous(), view
    pt("attention (contiguous)", *qkv, scores, dropped, ctx, c)
    att = [*qkv, scores, dropped, c]  # its locals until it returns
    g.ctx = [*att, x], held
    o = g.linear(c, pre + "attention.attn.o", H, H)
    pt("attention output o", o, *g.linear_temps(), *att)
    g.ctx = None
    return o


def mpnet_layer(g: Graph, cfg: ModelConfig, x: T, pre: str, bias: T, held: list[T] | None) -> T:
    """MPNetLayer at prefix `pre` on x, the bias held by the encoder; the moments where `held` (the callers' tensors,
    the bias among them) is known: the last layer."""
    H, I = cfg.hidden_dim, cfg.intermediate_dim

    def pt(what: str, *ts: T) -> None:
        g.point(f"forward: the last layer's {what}", [*ts, x], held)

    o = _self_attention(g, cfg, x, pre, bias, held)
    d = g.dropout(o, cfg.dropout)  # MPNetAttention: LayerNorm(dropout(o) + x), o held by self_outputs
    pt("attention output dropout", o, *_dropped(g, o, d))
    s_ = g.add(d, x)
    pt("attention residual", o, d, s_)
    a = g.layer_norm(s_, pre + "attention.LayerNorm", H)
    pt("attention LayerNorm", a, *g.last_stats, s_, o)
    g.ctx = [a, x], held
    h = g.linear(a, pre + "intermediate.dense", H, I)
    pt("FFN", h, *g.linear_temps(), a)
    act = h = _activation(g, h, cfg.hidden_act, lambda what, ts: pt(f"FFN activation: {what}", *ts, a))
    g.ctx = [act, a, x], held
    h = g.linear(h, pre + "output.dense", I, H)
    g.ctx = None
    pt("FFN output", h, *g.linear_temps(), act, a)
    o2 = h
    h = g.dropout(o2, cfg.dropout)
    pt("FFN output dropout", o2, *_dropped(g, o2, h), act, a)
    s2 = g.add(h, a)
    pt("output residual", h, s2, act, a)
    out = g.layer_norm(s2, pre + "output.LayerNorm", H)
    if held is not None:  # the last layer's output LayerNorm: its locals and what the callers hold
        g.moment("forward: the last layer's output LayerNorm", [out, *g.last_stats, s2, h, a, x, act, *held])
    return out


ENCODER = Encoder(relative_bias, mpnet_layer)
