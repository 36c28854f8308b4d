"""DeBERTa-v2's graph for the backward replay (backward_deberta.py records its forward on it): graph.Graph with the
ops DisentangledSelfAttention adds (gathers, scatters, repeats, addmm), their backward formulas, and the ops of a
branch the loss does not reach (_Dead). No torch here.
"""

from __future__ import annotations

from collections.abc import Callable

from ..replay.symbolic import F32
from .backward_lora import Adapter, Adapters
from .graph import Engine, Graph, Node, Storage, T, _grads_like, _pass


def _zeros_scatter(e: Engine, n: Node, g: list[Storage | None]) -> list[Storage | None]:
    """GatherBackward0: gather_backward's grad.new_zeros(self.sizes()), then scatter_add out of place (a tensor
    subclass, FakeTensor, takes the out-of-place branch: FunctionsManual.cpp), the zeros freed."""
    t = n.inputs[0]
    if t is None:
        return [None, None]
    zeros = e.alloc(t.nbytes)
    out = e.grad_for(t)
    e.unref(zeros)
    return [out, None]


def _repeat_sum(e: Engine, n: Node, g: list[Storage | None]) -> list[Storage | None]:
    """RepeatBackward0 with a repeat above 1: repeat_backward's grad.reshape(...).sum(repeated dims), a new tensor."""
    return [e.grad_for(t) if t is not None else None for t in n.inputs]


def _addmm_formula(e: Engine, n: Node, g: list[Storage | None]) -> list[Storage | None]:
    """AddmmBackward0 over addmm(bias, mat1, mat2): grad.sum(0), grad.mm(W), x^T.mm(grad), in the formula's
    order (mat1, mat2, self); the outputs go on in the inputs' order (bias, mat1, mat2)."""
    b, x, W = n.inputs
    gx = e.grad_for(x) if x is not None else None
    gW = e.grad_for(W) if W is not None else None
    gb = e.grad_for(b, late=True) if b is not None else None  # grad itself, summed by validate_outputs' sum_to
    return [gb, gx, gW]


class DebertaGraph(Graph):
    """Graph with DeBERTa's extra ops."""

    requires: Callable[[str], bool] = staticmethod(lambda k: True)  # requires_grad as built (deberta_peak)
    rel_requires_grad = False  # rel_embeddings (after its LayerNorm) requires grad, whether or not the loss reads it

    def linear(self, x: T, key: str, n_in: int, n_out: int, bias: bool = True, rows: int | None = None,
               wkey: str | None = None, bkey: str | None = None) -> T:
        """nn.Linear on a contiguous 3-d input with a bias: aten::linear's _flatten_nd_linear, input.reshape
        (ViewBackward0), weight.t() (TBackward0), addmm(bias, x, W^T): the bias gradient goes straight to its
        AccumulateGrad, the weight's through TBackward0 (run next: the higher sequence number), the input's
        through ViewBackward0; this order settles where a shared weight's second gradient is added (share_att_key
        uses query_proj and key_proj twice). Without a bias: Graph.linear (matmul). A peft lora.Linear: the hook
        (backward_lora.lora_linear), its base layer back here."""
        if self.adapt is not None and wkey is None:  # peft tuners/lora/layer.py Linear.forward
            adapted = self.adapt(self, x, key, n_in, n_out, bias, rows)
            if adapted is not None:
                return adapted
        if not bias:
            return super().linear(x, key, n_in, n_out, bias, rows, wkey, bkey)
        rows = x.numel // n_in if rows is None else rows
        wkey, bkey = wkey or f"{key}.weight", bkey or f"{key}.bias"
        W = self.param(wkey, n_in * n_out)
        b = self.param(bkey, n_out)
        if self.amp:
            b = self._cached(bkey, b)
            W = self._cached(wkey, W)
            x = self.cast(x, self.amp)
        self.last_input = x
        self.last_casts = [b, W]  # a frozen one's autocast cast: a temporary unless saved (Graph.linear)
        out_dt = self.amp or x.dtype
        saved = ([x] if W.fn is not None else []) + ([W] if x.fn is not None else [])
        xv = self._view_node("ViewBackward0", x)
        Wt = self._view_node("TBackward0", W)
        return self.op("AddmmBackward0", [b, xv, Wt], [(rows * n_out, out_dt)], saved, _addmm_formula)[0]

    def _view_node(self, name: str, t: T) -> T:
        """A view's node (its backward passes the gradient on): the same storage."""
        v = self.op(name, [t], [(t.numel, t.dtype)], [], _pass)[0]
        v.st = t.st
        return v

    def copy_if(self, x: T, copies: bool) -> T:
        """.contiguous() of a permuted view: a copy (CloneBackward0 passes the gradient) when not contiguous."""
        if not copies:
            return self.view(x)
        return self.op("CloneBackward0", [x], [(x.numel, x.dtype)], [], _pass)[0]

    def reshape_grad(self, x: T, grad_copies: bool) -> T:
        """A view whose backward (ViewBackward0: grad.reshape) copies a gradient laid out otherwise."""
        if not grad_copies:
            return self.view(x)
        return self.view(self.op("ViewBackward0", [x], [(x.numel, x.dtype)], [], _grads_like)[0])

    def div0(self, x: T, divisor: T) -> T:
        """x / a 0-d tensor: DivBackward0 saves the divisor (other) and allocates grad / other."""
        return self.op("DivBackward0", [x, None], [(x.numel, x.dtype)], [divisor], _grads_like)[0]

    def repeat(self, x: T, times: int) -> T:
        """x.repeat(times, 1, 1): a new tensor; RepeatBackward0 sums the repeats (reshape only when times is 1)."""
        return self.op("RepeatBackward0", [x], [(x.numel * times, x.dtype)], [], _repeat_sum if times > 1 else _pass)[0]

    def gather(self, x: T, numel: int, index: T) -> T:
        """torch.gather(x, -1, index): GatherBackward0 saves self and the index."""
        return self.op("GatherBackward0", [x, None], [(numel, x.dtype)], [x, index], _zeros_scatter)[0]

    def add_scalar(self, x: T) -> T:
        """0 + x (Python's int.__radd__ falls to Tensor.__radd__: add(x, 0), a new tensor); AddBackward1 passes."""
        return self.op("AddBackward1", [x], [(x.numel, x.dtype)], [], _pass)[0]

    def masked_fill(self, x: T, mask: T) -> T:
        """x.masked_fill(mask, value): MaskedFillBackward0 saves the mask; grad.masked_fill(mask, 0) is new."""
        return self.op("MaskedFillBackward0", [x], [(x.numel, x.dtype)], [mask], _grads_like)[0]


class _Dead:
    """The ops of a branch the loss does not reach (a position projection no term uses): no nodes, their outputs
    plain tensors the moments hold while the attention runs."""

    def __init__(self, g: DebertaGraph, dead: list[T]):
        self.g, self.dead = g, dead

    def linear(self, x: T, key: str, n_in: int, n_out: int, rows: int) -> T:
        out = self.g.new(rows * n_out, self.g.amp or x.dtype, key)
        self.g.last_input, self.g.last_casts = None, []
        if self.g.amp:  # autocast's casts of the input, the weight and the bias, per call: temporaries
            self.g.last_input = self.g.new(x.numel, self.g.amp, key + " input cast")
            self.g.last_casts = [self.g.new(n_in * n_out, self.g.amp), self.g.new(n_out, self.g.amp)]
        a = self.g.adapt.linear(key) if isinstance(self.g.adapt, Adapters) else None
        return out if a is None else self._lora(x, key, out, rows, n_out, a)

    def _lora(self, x: T, key: str, result: T, rows: int, n_out: int, a: Adapter) -> T:
        """peft lora.Linear.forward on the unused branch (backward_lora.lora_linear's ops): the adapter's weights
        train, so its mms record nodes that save their inputs (lora_A's, after autocast's cast; lora_A's output
        for lora_B), alive with the branch's output (kept in `dead`); every other tensor a temporary."""
        g, ctx = self.g, self.g.ctx
        g.ctx = None

        def moment(what: str, *alive: T) -> None:
            if ctx is not None:
                g.point(f"forward: the last layer's LoRA {key.rsplit('.', 1)[-1]} ({what}, unused)", [x, *alive, *ctx[0]],
                        ctx[1])

        moment("base layer", result, *g.linear_temps())
        xa = x if x.dtype == g.md else g.new(x.numel, g.md, "x.to(lora_A dtype)")  # _cast_input_dtype
        moment("input cast", result, xa)
        d = xa
        if a.dropout:  # nn.Dropout: input * noise, the noise a temporary (the input needs no gradient)
            noise, d = g.new(xa.numel, xa.dtype, "lora dropout noise"), g.new(xa.numel, xa.dtype, "lora dropout")
            moment("dropout", result, xa, noise, d)
        xc = g.new(d.numel, g.amp, "lora_A input cast") if g.amp and d.dtype != g.amp else d  # saved by lora_A's mm
        h_a = g.new(rows * a.r, g.amp or d.dtype, "lora_A")  # saved by lora_B's mm
        moment("lora_A", result, xa, d, xc, h_a)
        h_b = g.new(rows * n_out, h_a.dtype, "lora_B")
        moment("lora_B", result, xa, xc, h_a, h_b)
        s = g.new(h_b.numel, h_b.dtype, "* scaling")
        moment("scaling", result, xa, xc, h_a, h_b, s)
        out = g.new(result.numel, result.dtype if result.dtype == s.dtype else F32, "result + lora")
        moment("sum", result, xa, xc, h_a, s, out)
        self.dead += [t for t in (xc, h_a) if t is not x]
        g.ctx, g.last_input, g.last_casts = ctx, None, []  # the base layer's casts died with its call
        return out

    def repeat(self, x: T, times: int) -> T:
        return self.g.new(x.numel * times, x.dtype, "repeat")

    def copy_if(self, x: T, copies: bool) -> T:
        return self.g.new(x.numel, x.dtype, "contiguous") if copies else x

    def reshape_grad(self, x: T, grad_copies: bool) -> T:
        return x
