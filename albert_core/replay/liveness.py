"""The replay of a no_grad eval forward: what each op allocates and when Python drops it.

activations.inference_peak's machinery. Live bytes are MONOMIALS coefficients (symbolic.py); every
allocation is a candidate peak, so the peak over the forward is the largest snapshot at (B, S).
Lifetimes follow transformers 5.23's code: locals live until their function returns,
temporaries die after the op that reads them. Under autocast each Linear casts its bias and
weight once per forward (autocast's weight cache, alive until the forward ends) and its input,
when not already 16-bit, into a temporary. The op sequences per family (embeddings, one layer)
live in albert_core/families/<family>.py as infer_embeddings / infer_layer.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, overload

from .symbolic import BYTES, F32, MONOMIALS, Size, promote, scale, split_dtype, sz

if TYPE_CHECKING:
    from ..config_fields import ConfigFields

Spec = tuple[tuple[int, ...], str]  # a new tensor: its elements (MONOMIALS coefficients) and dtype


class Live:
    """Allocations and frees of one no_grad forward, in order; live bytes as MONOMIALS coefficients."""

    def __init__(self) -> None:
        self.live = [0] * len(MONOMIALS)
        self.snapshots: set[tuple[int, ...]] = set()
        self._n = itertools.count()
        self.sizes: dict[int, tuple[int, ...]] = {}

    def alloc(self, *sizes: tuple[int, ...]) -> int | tuple[int, ...]:
        """One op's new outputs (all allocated before the op returns); the live total is a candidate peak."""
        hs = []
        for size in sizes:
            h = next(self._n)
            self.sizes[h] = size
            self.live = [a + b for a, b in zip(self.live, size, strict=True)]
            hs.append(h)
        self.snapshots.add(tuple(self.live))
        return hs[0] if len(hs) == 1 else tuple(hs)

    def free(self, *hs: int | None) -> None:
        for h in hs:
            if h is not None:
                self.live = [a - b for a, b in zip(self.live, self.sizes.pop(h), strict=True)]


def stored_range(cfg: ConfigFields, sublayer: str, first_step: int, last_step: int) -> tuple[int, int]:
    """[start, stop) of the stored-copy indexes that steps first_step..last_step use (contiguous)."""
    inner = cfg.inner_group_num
    if cfg.sharing in ("all", sublayer):  # step i runs group i // (L / G), copies g·inner + k
        per = cfg.num_layers // cfg.num_groups
        return (first_step // per) * inner, (last_step // per + 1) * inner
    return first_step * inner, (last_step + 1) * inner  # one copy per application


def stored_index(cfg: ConfigFields, sublayer: str, application: int) -> int:
    """Stored copy that layer application j uses (reference.ReferenceModel's layout, HF's for ALBERT)."""
    step, k = divmod(application, cfg.inner_group_num)
    return stored_range(cfg, sublayer, step, step)[0] + k


class Infer:
    """Ops of an eval forward: each allocates its outputs and frees its temporaries."""

    def __init__(self, cfg: ConfigFields, dtype: str, attention: str, device: str, copy_qkv: bool, copy_ctx: bool):
        self.cfg, self.attention, self.copy_qkv, self.copy_ctx = cfg, attention, copy_qkv, copy_ctx
        self.md, self.amp = split_dtype(dtype)
        self.cuda = device == "cuda"
        self.c = self.amp or self.md  # dtype of matmul-like outputs
        self.m = Live()
        self.info: dict[int, tuple[tuple[int, ...], str]] = {}  # handle -> (elements, dtype)
        self.hi = {"attention": 0, "ffn": 0}  # stored copies whose 16-bit casts are cached: indexes below hi
        self.cached: set[str] = set()

    @overload
    def new(self, spec: Spec, /) -> int: ...
    @overload
    def new(self, spec: Spec, spec2: Spec, /) -> tuple[int, int]: ...
    @overload
    def new(self, spec: Spec, spec2: Spec, spec3: Spec, /) -> tuple[int, int, int]: ...
    def new(self, *specs: Spec) -> int | tuple[int, ...]:
        """One op's outputs, each (elements, dtype): a handle, or a tuple of handles for several."""
        hs = self.m.alloc(*[tuple(x * BYTES[d] for x in el) for el, d in specs])
        for h, spec in zip(hs if isinstance(hs, tuple) else (hs,), specs, strict=True):
            self.info[h] = spec
        return hs

    def free(self, *hs: int | None) -> None:
        self.m.free(*hs)

    def el(self, h: int) -> tuple[int, ...]:
        return self.info[h][0]

    def dt(self, h: int) -> str:
        return self.info[h][1]

    def cast_weights(self, key: str, n_in: int, n_out: int) -> None:
        if self.amp and key not in self.cached:  # autocast's cache: bias, then weight, alive to the end
            self.cached.add(key)
            self.new((sz(one=n_out), self.amp))
            self.new((sz(one=n_in * n_out), self.amp))

    def linear(self, x: int, n_in: int, n_out: int, key: str, out_el: Size | None = None,
               in_el: Size | None = None) -> int:
        out_el = out_el or scale(self.el(x), n_out, n_in)
        if not self.amp:
            return self.new((out_el, self.md))
        self.cast_weights(key, n_in, n_out)
        xc = self.new((in_el or self.el(x), self.amp)) if self.dt(x) != self.amp else None  # input cast, temporary
        out = self.new((out_el, self.amp))
        self.free(xc)
        return out

    def layer_linears(self, j: int, sub: str, names: tuple[str, ...]) -> str:
        """Cache key of application j's stored copy of a sublayer; marks it cached."""
        idx = stored_index(self.cfg, sub, j)
        key = f"{sub}{idx}"
        if idx < self.hi[sub]:  # cast by an earlier application (possibly one the replay skipped)
            self.cached.update(f"{key}.{n}" for n in names)
        self.hi[sub] = max(self.hi[sub], idx + 1)
        return key

    def layer_norm(self, x: int, n: int) -> int:
        tmp = None
        if self.amp and self.cuda and self.dt(x) != F32:  # CUDA autocast runs layer_norm in float32: a temporary
            tmp = x = self.new((self.el(x), F32))
        d = self.dt(x)
        stat = F32 if self.cuda else (F32 if d != self.md else d)  # CPU: param dtype when input and weight differ
        rows = scale(self.el(x), 1, n)
        out, mean, rstd = self.new((self.el(x), d), (rows, stat), (rows, stat))
        self.free(mean, rstd, tmp)
        return out

    def add(self, a: int, b: int) -> int:
        return self.new((self.el(a), promote(self.dt(a), self.dt(b))))

    def chain(self, n: int, el: tuple[int, ...], d: str, first: int) -> int:
        """n elementwise ops in a row, each reading only the previous result (which then dies)."""
        t = first
        for _ in range(n):
            t2 = self.new((el, d))
            self.free(t)
            t = t2
        return t

    def attention_core(self) -> tuple[int, int | None]:
        """eager_attention_forward or sdpa on the (B, S, H) projections: (context, probabilities or None)."""
        A, H, c = self.cfg.num_heads, self.cfg.hidden_dim, self.c
        TH, SQ = sz(bs=H), sz(bss=A)
        if self.attention == "sdpa":  # flash (CPU or CUDA) / memory-efficient (CUDA): output, float32 logsumexp
            pad = 31 * A if self.cuda and c == F32 else 0  # memory-efficient pads S up to 32·k
            out, lse = self.new((TH, c), (sz(bs=A, b=pad), F32))
            self.free(lse)
            return out, None
        # torch.matmul reshapes the (B,A,S,D) views to (B·A,S,D): copies unless B, A or S is 1 (then views)
        c1 = (self.new((TH, c)), self.new((TH, c))) if self.copy_qkv else ()  # Q and K^T copies
        scores = self.new((SQ, c))  # bmm
        self.free(*c1)
        scaled = self.chain(1, SQ, c, scores)  # * scaling
        tmp = self.new((SQ, F32)) if self.amp and self.cuda and c != F32 else None  # CUDA autocast: softmax in f32
        probs = self.new((SQ, self.dt(tmp) if tmp is not None else c))  # softmax; dropout is the identity in eval
        self.free(scaled, tmp)
        return self.probs_times_v(probs), probs

    def probs_times_v(self, probs: int) -> int:
        """matmul(probs, V) and the transpose(1, 2).contiguous() copy."""
        TH, c = sz(bs=self.cfg.hidden_dim), self.c
        pc = self.new((self.el(probs), self.amp)) if self.amp and self.dt(probs) != self.amp else None  # autocast cast
        cv = self.new((TH, c)) if self.copy_qkv else None  # V copy
        o = self.new((TH, c))  # bmm
        self.free(cv, pc)
        if not self.copy_ctx:  # (B,S,A,D) is already contiguous when A or S is 1
            return o
        ctx = self.new((TH, c))  # transpose(1, 2).contiguous() copy
        self.free(o)
        return ctx

    def activation(self, x: int) -> int:
        """HF ACT2FN[hidden_act] op by op on the FFN's (B, S, I) input; returns its output."""
        fn = _ACTIVATIONS.get(self.cfg.hidden_act)
        if fn is None:
            raise ValueError(f"no activation model for hidden_act {self.cfg.hidden_act!r}")
        return fn(self, sz(bs=self.cfg.intermediate_dim), self.dt(x))


# ---- HF's activation functions: allocations and frees ----------------------------------------------
def _one_op(f: Infer, TI: Size, d: str) -> int:
    return f.new((TI, d))  # gelu, relu, tanh, silu: one output


def _gelu_new(f: Infer, TI: Size, d: str) -> int:
    """0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*pow(x,3))))"""
    a = f.new((TI, d))
    p = F32 if f.amp and f.cuda else d  # CUDA autocast runs pow in float32
    xc = f.new((TI, F32)) if p != d else None
    t = f.new((TI, p))  # pow
    f.free(xc)
    t = f.chain(5, TI, p, t)  # 0.044715*p, x+., c*., tanh, 1+.
    y = f.new((TI, promote(d, p)))
    f.free(t, a)
    return y


def _gelu_python(f: Infer, TI: Size, d: str) -> int:
    """x*0.5*(1+erf(x/sqrt(2)))"""
    a = f.new((TI, d))
    t = f.chain(2, TI, d, f.new((TI, d)))  # x / sqrt(2), then erf, 1+.
    y = f.new((TI, d))
    f.free(t, a)
    return y


def _gelu_fast(f: Infer, TI: Size, d: str) -> int:
    """0.5*x*(1+tanh(x*0.7978845608*(1+0.044715*x*x)))"""
    a, b, cc = f.new((TI, d)), f.new((TI, d)), f.new((TI, d))
    e = f.chain(2, TI, d, cc)  # cc * x, 1 + .
    g = f.new((TI, d))  # b * e
    f.free(b, e)
    h = f.chain(2, TI, d, g)  # tanh, 1 + .
    y = f.new((TI, d))
    f.free(a, h)
    return y


def _quick_gelu(f: Infer, TI: Size, d: str) -> int:
    """x * sigmoid(1.702 * x)"""
    s_ = f.chain(1, TI, d, f.new((TI, d)))  # 1.702 * x, sigmoid
    y = f.new((TI, d))
    f.free(s_)
    return y


_ACTIVATIONS = {"gelu": _one_op, "relu": _one_op, "tanh": _one_op, "silu": _one_op, "gelu_new": _gelu_new,
                "gelu_python": _gelu_python, "gelu_fast": _gelu_fast, "quick_gelu": _quick_gelu}
