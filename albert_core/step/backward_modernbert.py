"""ModernBertModel's training forward, recorded for backward.py's replay (transformers 5.23 modeling_modernbert.py).

Pre-LN layers (attn_norm is nn.Identity in layer 0), Wqkv -> view -> unbind -> rotary q and k (float32 math,
cast back) -> attention (eager, CPU sdpa's flash kernel, or with attention dropout its math path) -> Wo ->
out_drop, then mlp_norm -> Wi -> chunk -> act(input) * gate -> drop -> Wo; final_norm. No torch here.

Gradient checkpointing (activation_checkpointing_enable: GradientCheckpointingLayer's
checkpoint(partial(forward, self, attention_mask=..., position_embeddings=...), x, use_reentrant=False)): each
layer a Graph region. _NoopSaveInputs saves x; the frame's partial keeps the layer type's mask (sliding layers)
and cos, sin until the layer's last saving node has run. Its saves are packed, not kept: the forward's moments
count what the layer's Python holds (every moment lists it, saved or not), the backward recomputes the layer
when its first node that saved anything (a parameter too: every saved tensor is packed) runs, up to the last
pack: mlp.Wo's mm (or its lora_B), whose inputs are packed before it runs (_stop). enable_input_require_grads
hooks tok_embeddings (get_input_embeddings): a frozen lookup's output becomes a leaf that requires grad, saved
by the embeddings' norm. ModernBERT-base 4 x 2,048 mixed bf16 sdpa AdamW: 2,763,691,520 B in the last layer's
rotary, equal to the engine (before: the lower-bound candidates, 14.8% over in the wrong phase); 130 random
checkpointed configs equal to the byte.

Every layer frozen (a linear probe): a frozen layer saves nothing, so the peak lies inside one's forward, where
only Python's locals and each op's transient outputs are alive. Every moment lists those already (the
checkpointed recomputation needs them), the activation's ops too; the last layer of each attention type
records them (a sliding layer adds its mask: eager's float32 masked scores alive through softmax(...).to(...),
sdpa's mask in the query dtype), as does the embeddings' norm and dropout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..config import ModelConfig
from ..replay.symbolic import F32
from .backward import run_backward, with_forward
from .bert_forward import _activation, _first_token
from .graph import SEQ_MAX, Adapt, Graph, Node, Peak, T, _accumulate, _grads_like, _pass

if TYPE_CHECKING:
    from ..workload import Workload


def _norm(g: Graph, x: T, key: str, n: int, bias: bool) -> T:
    """nn.LayerNorm(bias=norm_bias): native_layer_norm saves input, mean, rstd; its backward allocates
    grad_input, grad_weight and (with a bias) grad_bias (derivatives.yaml native_layer_norm)."""
    W = g.param(f"{key}.weight", n)
    b = g.param(f"{key}.bias", n) if bias else None
    rows = x.numel // n
    stat = F32 if x.dtype != g.md else x.dtype
    mean, rstd = g.new(rows, stat), g.new(rows, stat)
    g.last_stats = [mean, rstd]
    return g.op("NativeLayerNormBackward0", [x, W, b], [(x.numel, x.dtype)], [x, mean, rstd], _grads_like)[0]


def _views(g: Graph, x: T, name: str, n: int, numel: int) -> list[T]:
    """unbind / chunk: n views of x's storage under one node whose backward stacks (unbind_backward) or cats
    (split_backward) the n gradients into one new tensor of x's size."""
    outs = g.op(name, [x], [(numel, x.dtype)] * n, [], _grads_like)
    for o in outs:
        o.st = x.st
    return outs


def _mul_const(g: Graph, x: T, c: T) -> T:
    """x * c, c needing no gradient: MulBackward0 saves c (other) for grad * other."""
    dt = x.dtype if x.dtype == c.dtype else F32
    return g.op("MulBackward0", [x, None], [(x.numel, dt)], [c], _grads_like)[0]


class _Live:
    """The last layer's forward moments: g.moment with the tensors Python holds (the callers' `held`)."""

    def __init__(self, g: Graph, held: list[T] | None, label: str = "the last layer's"):
        self.g, self.held, self.label = g, held, label

    def __call__(self, name: str, *alive: T | None) -> None:
        """A moment of the layer: a forward moment in the last layer, and inside a checkpointed layer a moment of
        its recomputation (Graph.point). `alive`: every tensor the layer's Python holds then, saved or not (a
        checkpointed forward keeps no saved tensor)."""
        self.g.point(f"forward: {self.label} {name}", [t for t in alive if t is not None], self.held)

    def linear(self, name: str, x: T, key: str, n_in: int, n_out: int, bias: bool, *alive: T | None) -> T:
        """A Linear: its input, autocast's casts of it and of a frozen weight (temporaries unless saved) and its
        output. A peft lora.Linear (Graph.adapt) records its own moments inside, with what the layer holds (g.ctx,
        as bert_forward._bert_layer's)."""
        g = self.g
        if self.held is not None or g.region is not None:
            g.ctx = [t for t in alive if t is not None], self.held
        out = g.linear(x, key, n_in, n_out, bias)
        g.ctx = None
        self(name, x, g.last_input, *g.last_casts, out, *alive)
        return out

    def dropout(self, name: str, x: T, p: float, *alive: T | None) -> T:
        """CPU at::dropout: noise = bernoulli(1 - p) / (1 - p), x * noise (MulBackward0 saves the noise)."""
        if p == 0:
            return x
        g = self.g
        noise = g.new(x.numel, x.dtype, "dropout noise")
        self(name, x, noise, *alive)
        out = g.op("MulBackward0", [x, None], [(x.numel, x.dtype)], [noise], _grads_like)[0]
        self(name, x, noise, out, *alive)
        return out


def _rotary(g: Graph, q: T, cos: T, sin: T, lv: _Live, *alive: T | None) -> T:
    """apply_rotary_pos_emb's q_embed or k_embed: (q.float() * cos) + (rotate_half(q.float()) * sin), float32;
    rotate_half: cat((-x2, x1)) of the two halves (SliceBackward0: slice_backward's zeros of the input size;
    NegBackward0: grad.neg(); CatBackward0: narrowed views of the gradient)."""
    n = q.numel
    qf = g.cast(q, F32)
    a = _mul_const(g, qf, cos)
    lv("rotary", qf, a, *alive)
    qf = g.cast(q, F32)  # q.float() again: a second copy of a 16-bit q
    x1 = g.op("SliceBackward0", [qf], [(n // 2, F32)], [], _grads_like)[0]
    x2 = g.op("SliceBackward0", [qf], [(n // 2, F32)], [], _grads_like)[0]
    x1.st = x2.st = qf.st  # views
    neg = g.op("NegBackward0", [x2], [(n // 2, F32)], [], _grads_like)[0]
    rot = g.op("CatBackward0", [neg, x1], [(n, F32)], [], _pass)[0]
    lv("rotary", a, qf, neg, rot, *alive)
    b = _mul_const(g, rot, sin)
    lv("rotary", a, rot, b, *alive)
    s = g.add(a, b)
    lv("rotary", a, b, s, *alive)
    return s


def _eager(g: Graph, cfg: ModelConfig, q: T, k: T, v: T, mask: T | None, lv: _Live, *alive: T | None) -> T:
    """eager_attention_forward: matmul(q, k^T) * scaling (+ the sliding-window mask), softmax in float32, cast to
    the query dtype, dropout, matmul with v, transpose(1, 2).contiguous(). q and k (rotary outputs: q.float()
    keeps the transposed view's (B, S, A, D) order, empty_like's preserve_format) are copied by matmul's reshape
    unless B, A or S is 1; v, a view of Wqkv's (B, S, 3, A, D) output, unless B or A is 1; the context's
    gradient reaches bmm transposed (a copy where B, A and S are above 1)."""
    B, S, A, H = g.B, g.S, cfg.num_heads, cfg.hidden_dim
    c, fwd = q.dtype, B > 1 and A > 1 and S > 1
    qc, kc = g.copy(q, fwd, False), g.copy(k, fwd, False)
    s0 = g.bmm(qc, kc, B * A * S * S, c)
    lv("attention scores", qc, kc, s0, *alive)  # matmul's copies, until it returns
    scores = g.scalar(s0)
    lv("attention scores", s0, scores, *alive)
    if mask is not None:
        s0, scores = scores, g.add(scores, mask)
        lv("attention scores", s0, scores, *alive)
    s32 = g.cast(scores, F32)
    probs = g.unary(s32, "SoftmaxBackward0", True)  # softmax(dtype=float32): _softmax saves its result
    lv("softmax", scores, s32, probs, *alive)
    pc = g.cast(probs, c)
    lv("softmax", scores, probs, pc, *alive)  # attn_weights (the scores) rebound only as the statement ends
    probs = lv.dropout("attention dropout", pc, cfg.attention_dropout, *alive)
    vr = g.copy(v, B > 1 and A > 1, False)
    ctx = g.bmm(probs, vr, B * S * H, c)
    lv("attention context", probs, vr, ctx, *alive)
    out = g.copy(ctx, A > 1 and S > 1, B > 1 and A > 1 and S > 1)
    lv("attention context", probs, ctx, out, *alive)
    g.attn_weights = probs
    return out


def _sdpa(g: Graph, cfg: ModelConfig, q: T, k: T, v: T, mask: T | None, lv: _Live, *alive: T | None) -> T:
    """CPU sdpa without dropout: _scaled_dot_product_flash_attention_for_cpu saves q, k, v, the mask converted
    to the query dtype, its output (laid (B, S, A, D): the transpose back is contiguous) and a float32
    logsumexp; its backward allocates grad_q, grad_k, grad_v."""
    B, S, A, H = g.B, g.S, cfg.num_heads, cfg.hidden_dim
    lse = g.new(B * A * S, F32, "logsumexp")
    fm = [g.new(B * S * S, q.dtype, "mask")] if mask is not None else []
    out = g.op("ScaledDotProductFlashAttentionForCpuBackward0", [q, k, v], [(B * S * H, q.dtype)],
               [q, k, v, lse, *fm], _grads_like)[0]
    if out.fn is not None:
        g.keep(out.fn, out.st)
    lv("attention", lse, out, *fm, *alive)
    g.attn_weights = None
    return out


def _math(g: Graph, cfg: ModelConfig, q: T, k: T, v: T, mask: T | None, lv: _Live, *alive: T | None) -> T:
    """CPU sdpa with attention dropout: _scaled_dot_product_attention_math: 16-bit q, k, v upcast to float32,
    q * sqrt(scale) and k^T * sqrt(scale), matmul (reshapes as eager's), the mask added in
    place, _safe_softmax (saves its result), dropout, matmul with v (a copy unless B or A is 1), .to(dtype)."""
    B, S, A, H = g.B, g.S, cfg.num_heads, cfg.hidden_dim
    fm = g.new(B * S * S, q.dtype, "mask") if mask is not None else None  # convert_boolean_attn_mask
    qa, ka, va = g.cast(q, F32), g.cast(k, F32), g.cast(v, F32)
    qs, ks = g.scalar(qa), g.scalar(ka)
    fwd = B > 1 and A > 1 and S > 1  # q, k and a 16-bit v's float copy keep the (B, S, A, D) order
    qc, kc = g.copy(qs, fwd, False), g.copy(ks, fwd, False)
    scores = g.bmm(qc, kc, B * A * S * S, F32)
    lv("attention scores", fm, qa, ka, va, qs, ks, qc, kc, scores, *alive)
    if fm is not None:  # attn.add_(mask): AddBackward0 passes the gradient
        scores = g.op("AddBackward0", [scores, None], [(scores.numel, F32)], [], _pass)[0]
    probs = g.unary(scores, "SafeSoftmaxBackward0", True)
    lv("softmax", fm, qa, ka, va, qs, scores, probs, *alive)
    probs = lv.dropout("attention dropout", probs, cfg.attention_dropout, fm, qa, ka, va, qs, *alive)
    attn = g.cast(probs, q.dtype)  # the returned attention weights, in the query dtype (sdpa drops them)
    vr = g.copy(va, B > 1 and A > 1 and (S > 1 or va is v), False)
    ctx32 = g.bmm(probs, vr, B * S * H, F32)
    lv("attention context", fm, qa, ka, va, qs, probs, attn, vr, ctx32, *alive)
    ctx = g.cast(ctx32, q.dtype)
    lv("attention context", fm, qa, ka, va, qs, probs, attn, ctx32, ctx, *alive)
    g.attn_weights = None
    return g.copy(ctx, A > 1 and S > 1, B > 1 and A > 1 and S > 1)


def _layer(g: Graph, cfg: ModelConfig, x: T, i: int, attention: str, rope: dict[str, tuple[T, T]],
           mask: T | None, held: list[T] | None) -> T:
    """ModernBertEncoderLayer: x + out_drop(Wo(attn(attn_norm(x)))), then x + mlp(mlp_norm(x))."""
    H, I = cfg.hidden_dim, cfg.intermediate_dim
    pre, nb = f"layers.{i}.", cfg.norm_bias
    lv = _Live(g, None if held is None else [x, *held], "the last layer's" if i == cfg.num_layers - 1 else
               f"layer {i}'s")
    local = bool(i % cfg.global_attn_every_n_layers)
    cos, sin = rope["sliding_attention" if local else "full_attention"]
    m = mask if local else None
    if g.checkpointing:  # GradientCheckpointingLayer: checkpoint(partial(forward, self, attention_mask=...,
        g.begin_region(x)  # position_embeddings=...), x): _NoopSaveInputs saves x, the frame's partial keeps
        for st in [*([m.st] if m is not None else []), cos.st, sin.st]:  # the mask and the layer type's cos, sin
            st.refs += 1
            g.saved.setdefault(id(st), st)
            g.regions[-1].extra.append(st)
    h = x if i == 0 else _norm(g, x, pre + "attn_norm", H, nb)
    lv("attn_norm", h)
    qkv = lv.linear("Wqkv", h, pre + "attn.Wqkv", H, 3 * H, cfg.attention_bias)
    q, k, v = _views(g, qkv, "UnbindBackward0", 3, qkv.numel // 3)
    qe = _rotary(g, q, cos, sin, lv, h, qkv)
    ke = _rotary(g, k, cos, sin, lv, h, qkv, qe)
    q = g.cast(qe, q.dtype)  # return q_embed.to(original_dtype), k_embed.to(original_dtype): both casts last
    lv("rotary", h, qkv, qe, ke, q)
    k = g.cast(ke, k.dtype)
    lv("rotary", h, qkv, qe, ke, q, k)
    attn = _eager if attention == "eager" else _sdpa if cfg.attention_dropout == 0 else _math
    ctx = attn(g, cfg, q, k, v, m, lv, h, qkv, q, k)
    w = g.attn_weights  # eager's attention weights: held by the layer's `_` until it returns
    a = lv.linear("Wo", ctx, pre + "attn.Wo", H, H, cfg.attention_bias, h, qkv, q, k, w)
    a = lv.dropout("out_drop", a, cfg.attention_dropout, h, qkv, q, k, ctx, w)  # inside the attention's forward
    # (whose attn_output, Wo's input, lives until it is rebound)
    x2 = g.add(x, a)  # attn_output stays a local of the layer until it returns
    lv("residual", a, x2, w)
    hn = _norm(g, x2, pre + "mlp_norm", H, nb)
    lv("mlp_norm", a, x2, hn, w)
    wi = lv.linear("Wi", hn, pre + "mlp.Wi", H, 2 * I, cfg.mlp_bias, a, x2, w)
    inp, gate = _views(g, wi, "SplitBackward0", 2, wi.numel // 2)
    act = _activation(g, inp, cfg.hidden_act, lambda what, alive: lv(f"activation: {what}", *alive, a, x2, hn, wi, w))
    lv("activation", a, x2, hn, wi, act, w)
    y = g.mul(act, gate)
    lv("gate", a, x2, hn, wi, act, y, w)
    y = lv.dropout("mlp dropout", y, cfg.dropout, a, x2, hn, wi, w)  # input, gate: views of wi, MLP's locals
    y = lv.linear("Wo", y, pre + "mlp.Wo", I, H, cfg.mlp_bias, a, x2, hn, wi, w)
    out = g.add(x2, y)
    lv("residual", a, x2, y, out, w)
    if g.checkpointing:
        _stop(g)
    return out


def _stop(g: Graph) -> None:
    """The checkpointed layer's forward returned. Its recomputation stops (_StopRecomputationError) as the last
    saved tensor is packed (a parameter too: mlp.Wo's mm, or its LoRA's lora_B), before that op runs: the locals
    of the first moment after it, less that op's outputs, which the unwinding drops; the later moments are not
    recomputed."""
    assert g.region is not None
    r = g.regions[g.region]
    stop = next((j for j, n in enumerate(r.marks) if n == r.packs), len(r.points))
    alive = [t for t in r.points[stop][1] if id(t.st) not in r.fresh] if stop < len(r.points) else []
    r.points, r.marks = r.points[:stop], r.marks[:stop]
    g.end_region(alive)


def _head(g: Graph, cfg: ModelConfig, seq: T, head: str, num_labels: int) -> T:
    """ModernBertFor{Sequence,Token}Classification's logits (ModernBertForMaskedLM's: the same head on every
    token, then the tied decoder): last_hidden_state[:, 0] (classifier_pooling "cls")
    or every token, ModernBertPredictionHead (dense without a bias, classifier_activation gelu, norm),
    drop (classifier_dropout 0.0: nn.Dropout(0) returns its input), classifier (with a bias)."""
    H = cfg.hidden_dim
    lv = _Live(g, [seq])  # the base model's outputs, held by the task model's forward
    z = _first_token(g, seq) if head == "classification" else seq
    d = lv.linear("head", z, "head.dense", H, H, False)
    a = _activation(g, d, "gelu")
    lv("head", d, a)
    n = _norm(g, a, "head.norm", H, cfg.norm_bias)
    lv("head", a, n)
    if head == "mlm":  # ModernBertForMaskedLM: decoder(head(last_hidden_state)), decoder.weight tied to the token
        # embeddings (_tied_weights_keys), its bias decoder_bias (True): (B, S, V) logits
        logits = g.linear(n, "decoder", H, cfg.vocab_size, True, wkey="embeddings.tok_embeddings.weight",
                          bkey="decoder.bias")
        lv("head", n, g.last_input, logits)
        return logits
    logits = lv.linear("head", n, "classifier", H, num_labels, True)
    return logits


def forward(g: Graph, cfg: ModelConfig, attention: str = "eager", head: str = "none", num_labels: int = 2) -> T:
    """ModernBertModel(input_ids) (or a task model's logits) and engine.loss_of's loss (its .float().mean())."""
    B, S, H = g.B, g.S, cfg.hidden_dim
    ids = g.persistent(B * S, "int64", "input_ids")
    x = g.embedding(ids, "embeddings.tok_embeddings", cfg.vocab_size, H, B * S * H)
    if g.checkpointing and x.fn is None:  # activation_checkpointing_enable -> enable_input_require_grads on
        x.st.refs += 1  # get_input_embeddings (tok_embeddings): the frozen lookup's output made a leaf that
        x.st.cat = "temporaries"  # requires grad, held by its AccumulateGrad (and saved by the norm)
        x.fn = Node(SEQ_MAX, "AccumulateGrad(inputs_embeds)", [], [], _accumulate, param="inputs_embeds")
        g.held.append(x.st)
    e = x
    x = _norm(g, x, "embeddings.norm", H, cfg.norm_bias)
    g.point("forward: the embeddings' norm", [ids, e, x, *g.last_stats], [])
    if cfg.dropout:  # self.drop(self.norm(...)): the lookup dropped as the norm returns
        x = _Live(g, [ids], "the embeddings'").dropout("dropout", x, cfg.dropout)
    n, L = cfg.global_attn_every_n_layers, cfg.num_layers
    kinds = {"full_attention"} | ({"sliding_attention"} if n > 1 and L > 1 else set())
    D = H // cfg.num_heads
    rope = {t: (g.new(S * D, x.dtype, "cos"), g.new(S * D, x.dtype, "sin")) for t in sorted(kinds)}
    pos = g.new(S, "int64", "position_ids")  # torch.arange(seq_len).unsqueeze(0): alive until forward returns
    # (held too: mask_kwargs' inputs_embeds, the embeddings' output)
    mask = None  # create_bidirectional_sliding_window_mask (built for any layer types): None below the half window
    if S >= cfg.local_attention // 2:
        # masking_utils.sdpa_mask: arange(batch), arange(1), the kv and q indices (arange + offset), then the
        # sliding_window_bidirectional_overlay's (q_idx - kv_idx).abs() over (1, 1, S, S) int64: both alive
        idx = [g.new(B, "int64", "batch_arange"), g.new(1, "int64", "head_arange"), g.new(S, "int64", "kv_idx"),
               g.new(S, "int64", "q_idx"), g.new(1, "bool", "new_ones(())")]
        g.moment("forward: the sliding-window mask (|q_idx - kv_idx|)",
                 [x, pos, *idx, g.new(S * S, "int64", "q_idx - kv_idx"), g.new(S * S, "int64", ".abs()")])
        # sdpa_mask's bool (1, 1, S, S), expanded to B (a view); eager_mask's torch.where: (B, 1, S, S), hidden dtype
        mask = g.new(B * S * S, x.dtype) if attention == "eager" else g.new(S * S, "bool")
    held = [x, pos, *([mask] if mask is not None else []), *[t for cs in rope.values() for t in cs]]
    # the last layer of each attention type records its moments: a frozen layer saves nothing, so where no layer
    # trains (a linear probe) the peak lies inside one, a sliding one's working set the larger (its mask)
    last = set({i % n > 0: i for i in range(L)}.values())
    for i in range(L):
        x = _layer(g, cfg, x, i, attention, rope, mask, held if i in last else None)
    y = _norm(g, x, "final_norm", H, cfg.norm_bias)
    g.moment("forward: the final norm", [x, y, *held])
    if head != "none":
        y = _head(g, cfg, y, head, num_labels)
    y32 = g.cast(y, F32)
    loss = g.op("MeanBackward0", [y32], [(1, F32)], [], _grads_like)[0]
    g.moment("forward: the loss", [loss, y, y32])  # the model has returned; mean's 0-d output
    return loss


def modelled(mode: str, head: str) -> bool:
    """Where this recording applies: the base model, a classification head or MLM, eager or CPU sdpa, with or
    without checkpointing, fully trained, frozen embeddings or layers, BitFit, LoRA; every layer frozen too (a
    linear probe, frozen-layers:L: nothing saved in a frozen layer, the peak inside one's forward, which the last
    global and the last sliding-window layer's moments follow op by op; ModernBERT-base 16 x 512 mixed bf16
    frozen-layers:22 classification:2: sdpa 830,517,784 B in a sliding layer's rotary, eager 1,262,268,952 B in
    the softmax, equal to the engine, before the lower-bound candidates' 874,226,200 B, +5.3% and -30.7%)."""
    return head in ("none", "classification", "token", "mlm") and mode in ("full", "frozen-embeddings",
                                                                        "frozen-layers", "bitfit", "lora")


def peak(cfg: ModelConfig, w: Workload, base: dict[str, int], trainable: Callable[[str], bool] = lambda k: True,
         adapt: Adapt | None = None) -> tuple[Peak, int]:
    """backward.bert_style_peak for ModernBERT: (the step's activation-side peak from `base`, saved bytes).
    adapt: peft LoRA's adapted Linears (backward_lora.adapt), through Graph.linear's hook."""
    g = Graph(cfg, w.forward_dtype, w.batch_size, w.seq_len, trainable, w.checkpointing)
    g.adapt = adapt
    loss = forward(g, cfg, w.attention, w.head, w.num_labels)
    saved = g.saved_bytes()
    held = sum(st.nbytes for st in g.held if id(st) not in g.saved)  # the inputs_embeds leaf, unless saved
    start = dict(base)
    start["saved activations"] = start.get("saved activations", 0) + saved
    start["temporaries"] = start.get("temporaries", 0) + 4 + held  # the 0-d loss
    pk = run_backward(g, loss, start)
    base_total = sum(base.values()) + held
    return with_forward(pk, g.moments, base, base_total), saved  # the forward's moments, before the loss exists


__all__ = ["forward", "modelled", "peak"]
