"""The symbolic replay of a training forward: tensors as sizes, ops that save what autograd saves.

Every tensor is a (size, dtype) with a storage identity; each op below saves what its PyTorch
autograd formula saves (one-line source comment on each) and a storage saved twice counts once.
Sizes are polynomials in batch B and sequence S, coefficients of MONOMIALS, so one replay gives
exact Python ints for any B and S. The op sequences of each model family (embeddings, one layer,
pooler) live in albert_core/families/<family>.py and call these ops; activations.py drives them.

device: what differs between the CPU (measured here) and CUDA (modelled from PyTorch's sources):
- dropout: CPU's at::dropout multiplies by a float noise tensor and saves it (input dtype);
  CUDA's fused at::native_dropout saves a bool mask (1 byte per element).
- LayerNorm statistics (mean, rstd): CUDA keeps them in float32 (acc_type); CPU in the input
  dtype unless input and weight dtypes differ (then float32).
- sdpa: CPU uses _scaled_dot_product_flash_attention_for_cpu when there is no attention dropout
  and the math path when there is; CUDA flash (16-bit) or memory-efficient (float32) kernels.
- autocast: CPU autocast runs only matmul-like ops in 16 bits; CUDA also softmax, layer_norm and
  pow in float32.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from numpy.typing import NDArray
from dataclasses import dataclass

BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int64": 8, "int32": 4, "bool": 1}
MONOMIALS = ("B·S²", "S²", "B·S", "S", "B", "1")  # a size is a 6-tuple of coefficients of these
F32 = "float32"
Size = tuple[int, int, int, int, int, int]
QUADRATIC = (0, 1)  # indexes of the monomials that grow with S²


@dataclass(frozen=True)
class Tensor:
    id: int  # storage identity: views share it
    size: Size  # elements, coefficients of MONOMIALS
    dtype: str


def sz(bss: int = 0, bs: int = 0, s: int = 0, b: int = 0, one: int = 0, ss: int = 0) -> Size:
    """Elements of a tensor as coefficients of MONOMIALS, e.g. sz(bs=H) for a (B, S, H) tensor."""
    return (bss, ss, bs, s, b, one)


def scale(size: tuple[int, ...], mul: int, div: int) -> Size:
    return tuple(c * mul // div for c in size)  # type: ignore[return-value]


def promote(a: str, b: str) -> str:
    """torch's type promotion between the dtypes that meet here (bf16 and fp16 never meet)."""
    if a == b:
        return a
    return F32 if F32 in (a, b) else a


def split_dtype(dtype: str) -> tuple[str, str | None]:
    """(weight dtype, autocast dtype or None) of a DTYPES value."""
    if dtype == "mixed_bf16":
        return F32, "bfloat16"
    if dtype == "mixed_fp16":
        return F32, "float16"
    return dtype, None


@overload
def evaluate(c: Sequence[int], batch_size: int, seq_len: int) -> int: ...
@overload
def evaluate(c: Sequence[int], batch_size: int, seq_len: NDArray[Any]) -> NDArray[Any]: ...
def evaluate(c: Sequence[int], batch_size: int, seq_len: int | NDArray[Any]) -> int | NDArray[Any]:
    """The value of a MONOMIALS polynomial at B, S (S an int, or a numpy array of them: a sweep)."""
    B, S = batch_size, seq_len
    return c[0] * B * S * S + c[1] * S * S + c[2] * B * S + c[3] * S + c[4] * B + c[5]


def quadratic(c: tuple[int, ...], batch_size: int, seq_len: int) -> int:
    """The S² part of a MONOMIALS polynomial at B, S."""
    return (c[0] * batch_size + c[1]) * seq_len * seq_len


class Replay:
    """Records saved storages (once each) while a forward is replayed symbolically."""

    def __init__(self, device: str, amp: str | None, model_dtype: str, ids: itertools.count[int] | None = None):
        self.device = device
        self.amp = amp  # autocast low-precision dtype, or None
        self.md = model_dtype  # dtype of the weights
        self.saved: dict[int, tuple[str, str, str, Size, str, tuple[int, bool | None]]] = {}
        self._ids = ids or itertools.count(1)  # share one identity space across a whole forward
        self.ctx: dict[str, Any] = {}  # tensors a family's embeddings hand to its layers (shared by sub())
        self.skip: set[int] = set()  # storages not to count: parameters, or saved once for all layers
        self.params: set[int] = set()  # parameters used as activations (DeBERTa's rel_embeddings table)

    def sub(self) -> Replay:
        """A new recorder over the same identity space (one per scope: embeddings, a layer, pooler)."""
        r = Replay(self.device, self.amp, self.md, self._ids)
        r.ctx, r.skip, r.params = self.ctx, self.skip, self.params
        return r

    def new(self, size: tuple[int, ...], dtype: str) -> Tensor:
        return Tensor(next(self._ids), tuple(size), dtype)  # type: ignore[arg-type]

    def param(self, size: tuple[int, ...]) -> Tensor:
        """A parameter read as a tensor: never counted (measure excludes parameters)."""
        t = self.new(size, self.md)
        self.params.add(t.id)
        self.skip.add(t.id)
        return t

    def save(self, t: Tensor, component: str, op: str, min_seq_len: int = 0, batch_one: bool | None = None) -> None:
        """Count t's storage once. It exists only from seq_len min_seq_len on, and only at batch size 1
        (batch_one True) or above 1 (False) when batch_one is given (a view at B = 1, a copy above)."""
        if t.id in self.saved or t.id in self.skip or not any(t.size):
            return
        part = "quadratic" if t.size[0] or t.size[1] else "linear"
        self.saved[t.id] = (component, op, part, t.size, t.dtype, (min_seq_len, batch_one))

    def terms(self) -> list[tuple[str, str, str, Size, tuple[int, bool | None]]]:
        """(component, op, part, byte coefficients, (min_seq_len, batch_one)) of every saved storage, in order."""
        return [(comp, op, part, tuple(c * BYTES[dt] for c in size), w)  # type: ignore[misc]
                for comp, op, part, size, dt, w in self.saved.values()]

    # ---- ops, each saving what its autograd formula saves ------------------------------------------
    def index(self, size: Size, component: str, op: str, dtype: str = "int64") -> Tensor:
        """An integer index tensor that aten::embedding saves (EmbeddingBackward0 saves indices)."""
        t = self.new(size, dtype)
        self.save(t, component, op)
        return t

    def linear(self, x: Tensor, n_in: int, n_out: int, component: str, rows: tuple[int, ...] | None = None) -> Tensor:
        """nn.Linear: addmm saves its input (and the weight: a parameter, or autocast's cached copy,
        counted once per stored weight by the family's weight_copy_elements). rows: the input's rows
        when x is a larger storage that the input is a view of (the pooler's first token)."""
        rows = scale(x.size, 1, n_in) if rows is None else rows
        if self.amp and x.dtype != self.amp and x.id not in self.params:  # autocast casts the input, saved
            x = self.new(x.size, self.amp)  # (a parameter's cast is autocast's cached weight copy, counted apart)
        self.save(x, component, "aten::addmm (input)")
        return self.new(scale(rows, n_out, 1), self.amp or x.dtype)

    def layer_norm(self, x: Tensor, n: int, component: str) -> Tensor:
        """aten::native_layer_norm saves input, weight, bias (parameters), mean and rstd (one per row)."""
        rows = scale(x.size, 1, n)
        if self.amp and self.device == "cuda" and x.dtype != F32:  # CUDA autocast: layer_norm in float32 list
            x = self.new(x.size, F32)
        self.save(x, component, "aten::native_layer_norm (input)")  # skipped when x is a parameter
        if self.device == "cuda":
            stat = F32  # CUDA: acc_type of the input
        else:  # CPU: param_scalar_type; float32 when input and weight dtypes differ (autocast)
            stat = F32 if x.dtype != self.md else x.dtype
        self.save(self.new(rows, stat), component, "aten::native_layer_norm (mean)")
        self.save(self.new(rows, stat), component, "aten::native_layer_norm (rstd)")
        return self.new(x.size, x.dtype)

    def dropout(self, x: Tensor, p: float, component: str) -> Tensor:
        """nn.Dropout in training: p == 0 returns the input and saves nothing."""
        if p == 0:
            return x
        if self.device == "cuda":  # at::native_dropout saves a bool mask
            self.save(self.new(x.size, "bool"), component, "aten::native_dropout (bool mask)")
        else:  # CPU at::dropout: input * (bernoulli noise / (1-p)); MulBackward0 saves the noise
            self.save(self.new(x.size, x.dtype), component, "aten::mul (dropout noise)")
        return self.new(x.size, x.dtype)

    def add(self, a: Tensor, b: Tensor) -> Tensor:
        """a + b saves nothing; the result takes the promoted dtype."""
        return self.new(a.size, promote(a.dtype, b.dtype))

    def scalar(self, x: Tensor) -> Tensor:
        """x * c, x + c, x / c with a Python number: saves nothing."""
        return self.new(x.size, x.dtype)

    def mul(self, a: Tensor, b: Tensor, component: str) -> Tensor:
        """a * b with both requiring grad: MulBackward0 saves both."""
        self.save(a, component, "aten::mul (self)")
        self.save(b, component, "aten::mul (other)")
        return self.new(a.size, promote(a.dtype, b.dtype))

    def unary_saves_input(self, x: Tensor, op: str, component: str, fp32_on_cuda_amp: bool = False) -> Tensor:
        if fp32_on_cuda_amp and self.amp and self.device == "cuda" and x.dtype != F32:
            x = self.new(x.size, F32)  # CUDA autocast float32 list (pow)
        self.save(x, component, op + " (input)")
        return self.new(x.size, x.dtype)

    def unary_saves_result(self, x: Tensor, op: str, component: str) -> Tensor:
        y = self.new(x.size, x.dtype)
        self.save(y, component, op + " (result)")
        return y

    def activation(self, x: Tensor, name: str) -> Tensor:
        """HF ACT2FN[name] op by op (transformers/activations.py)."""
        fn = _ACTIVATIONS.get(name)
        if fn is None:
            raise ValueError(f"no activation model for hidden_act {name!r}")
        return fn(self, x, "activation function")


# ---- HF's activation functions, op by op -------------------------------------------------------------
def _saves_input(r: Replay, x: Tensor, c: str, name: str) -> Tensor:
    return r.unary_saves_input(x, f"aten::{name}", c)  # GeluBackward0 / SiluBackward0 save the input


def _saves_result(r: Replay, x: Tensor, c: str, name: str) -> Tensor:
    return r.unary_saves_result(x, f"aten::{name}", c)  # ReluBackward0 / TanhBackward0 save the result


def _gelu_new(r: Replay, x: Tensor, c: str) -> Tensor:
    """0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*pow(x,3))))"""
    a = r.scalar(x)  # 0.5 * x
    p = r.unary_saves_input(x, "aten::pow", c, fp32_on_cuda_amp=True)  # PowBackward0 saves self
    d = r.scalar(r.add(x, r.scalar(p)))  # sqrt(2/pi) * (x + 0.044715 * p)
    t = r.unary_saves_result(d, "aten::tanh", c)  # TanhBackward0 saves result
    return r.mul(a, r.scalar(t), c)  # (0.5x) * (1 + t) saves both


def _gelu_python(r: Replay, x: Tensor, c: str) -> Tensor:
    """x*0.5*(1+erf(x/sqrt(2)))"""
    a = r.scalar(x)
    e = r.unary_saves_input(r.scalar(x), "aten::erf", c)  # ErfBackward0 saves self
    return r.mul(a, r.scalar(e), c)


def _gelu_fast(r: Replay, x: Tensor, c: str) -> Tensor:
    """0.5*x*(1+tanh(x*0.7978845608*(1+0.044715*x*x)))"""
    a = r.scalar(x)  # 0.5 * x
    b = r.scalar(x)  # x * 0.7978845608
    cx = r.mul(r.scalar(x), x, c)  # (0.044715 * x) * x saves both
    f = r.mul(b, r.scalar(cx), c)  # b * (1 + ...) saves both
    t = r.unary_saves_result(f, "aten::tanh", c)
    return r.mul(a, r.scalar(t), c)


def _quick_gelu(r: Replay, x: Tensor, c: str) -> Tensor:
    """x * sigmoid(1.702 * x)"""
    s = r.unary_saves_result(r.scalar(x), "aten::sigmoid", c)  # SigmoidBackward0 saves result
    return r.mul(x, s, c)


_ACTIVATIONS = {
    "gelu": lambda r, x, c: _saves_input(r, x, c, "gelu"),
    "silu": lambda r, x, c: _saves_input(r, x, c, "silu"),
    "relu": lambda r, x, c: _saves_result(r, x, c, "relu"),
    "tanh": lambda r, x, c: _saves_result(r, x, c, "tanh"),
    "gelu_new": _gelu_new,
    "gelu_python": _gelu_python,
    "gelu_fast": _gelu_fast,
    "quick_gelu": _quick_gelu,
}


# ---- attention -----------------------------------------------------------------------------------------
def attention_core(r: Replay, num_heads: int, p: float, q: Tensor, k: Tensor, v: Tensor, attention: str) -> Tensor:
    """Scores, softmax, dropout, probs @ V (eager_attention_forward or sdpa) on (B, S, H) projections.

    Returns the (B, S, H) context the output dense reads."""
    cpu_math = attention == "sdpa" and r.device == "cpu" and p > 0
    if attention == "sdpa" and not cpu_math:
        return sdpa_fused(r, num_heads, p, q, k, v)
    return eager_core(r, num_heads, p, q, cpu_math)


def sdpa_fused(r: Replay, A: int, p: float, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """A fused sdpa kernel: saves q, k, v, its output and a float32 logsumexp; no S×S tensor."""
    if r.device == "cpu":  # _scaled_dot_product_flash_attention_for_cpu saves q, k, v, out, logsumexp
        lse = r.new(sz(bs=A), F32)  # (B, A, S) float32
    else:  # CUDA flash (16-bit) / memory-efficient (float32): logsumexp, efficient pads S to 32
        lse = r.new(sz(bs=A), F32) if q.dtype != F32 else r.new(sz(bs=A, b=31 * A), F32)
    for t, name in ((q, "Q"), (k, "K"), (v, "V")):
        r.save(t, "Q/K/V", f"aten::_scaled_dot_product_*_attention ({name})")
    out = r.new(q.size, q.dtype)  # (B, S, A, D) storage: transpose(1, 2).contiguous() is a no-op
    r.save(out, "context (output projection input)", "aten::_scaled_dot_product_*_attention (output)")
    r.save(lse, "attention statistics (logsumexp)", "aten::_scaled_dot_product_*_attention (logsumexp)")
    if r.device == "cuda" and p > 0:  # Philox seed and offset, int64 scalars
        r.save(r.new(sz(one=1), "int64"), "attention statistics (logsumexp)", "philox seed")
        r.save(r.new(sz(one=1), "int64"), "attention statistics (logsumexp)", "philox offset")
    return out


def eager_core(r: Replay, A: int, p: float, q: Tensor, cpu_math: bool) -> Tensor:
    """eager_attention_forward, or CPU sdpa's math path (same ops; 16-bit inputs upcast to float32)."""
    tok, sq = q.size, sz(bss=A)  # elements of (B, S, H) and of (B, A, S, S)
    dt = F32 if cpu_math else q.dtype
    if r.amp and not cpu_math:
        dt = r.amp
    # torch.matmul on (B,A,S,D) transposed views: expand + reshape copies, BmmBackward0 saves both
    r.save(r.new(tok, dt), "Q/K/V", "aten::bmm (Q, reshaped copy)")
    r.save(r.new(tok, dt), "Q/K/V", "aten::bmm (K^T, reshaped copy)")
    scores = r.new(sq, dt)  # (B, A, S, S); "* scaling" saves nothing
    if r.amp and r.device == "cuda" and not cpu_math:  # CUDA autocast: softmax in the float32 list
        scores = r.new(sq, F32)
    return probs_times_v(r, scores, p, tok, dt, q.dtype if cpu_math else dt, cpu_math)


def probs_times_v(r: Replay, scores: Tensor, p: float, tok: Size, dt: str, out_dt: str, cpu_math: bool) -> Tensor:
    """softmax (saves its result), dropout, then matmul(probs, V) saving probs and V's reshaped copy."""
    probs = r.unary_saves_result(scores, "aten::_softmax", "attention probabilities (softmax output)")
    probs = r.dropout(probs, p, "attention dropout mask")
    if r.amp and not cpu_math and probs.dtype != r.amp:  # matmul under autocast casts probs to 16 bits
        probs = r.new(scores.size, r.amp)
    r.save(probs, "attention probabilities (bmm input: dropped or cast)", "aten::bmm (probs)")
    r.save(r.new(tok, dt), "Q/K/V", "aten::bmm (V, reshaped copy)")
    return r.new(tok, out_dt)  # transpose(1, 2).contiguous(): a copy, saved by the output dense
