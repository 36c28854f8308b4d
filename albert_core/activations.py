"""Activation memory: the bytes PyTorch really keeps for backward, component by component.

Definition (training=True): the bytes of the tensors autograd saves for backward during one
training-mode forward of Hugging Face's BertModel/AlbertModel built from to_hf_config(cfg)
(pooler included), called as model(input_ids=ids) with no attention mask; parameters excluded,
each storage counted once. albert_core.measure records exactly this with
torch.autograd.graph.saved_tensors_hooks, and the tests check this module against it on random
configs (both families, every activation, dropout 0 and above, every dtype, eager and sdpa,
checkpointing, training=False).

How it works: a tiny symbolic replay of the forward. Every tensor is a (shape, dtype) with an
identity; each op saves what its PyTorch autograd formula saves (one-line source comment on
each), and a storage saved twice counts once. Sizes are polynomials in batch B and sequence S
(monomials B·S², B·S, S, B, 1), so one replay gives exact Python ints for any B and S and a
vectorized sweep.

Sharing: cross-layer sharing (ALBERT Sec. 3.1) reuses *weights*; every layer application still
runs its own forward on its own inputs and saves its own activations, so at equal dimensions
every sharing mode saves the same bytes. The one exception is mixed precision: autocast caches
one low-precision copy of each weight per forward (torch/csrc/autograd autocast weight cache),
and those copies, saved by the Linear layers, are one per *stored* weight.

device: what differs between the CPU (measured here) and CUDA (modelled, not measured here):
- dropout: CPU's at::dropout multiplies by a float noise tensor and saves it (input dtype);
  CUDA's fused at::native_dropout saves a bool mask (1 byte per element).
- LayerNorm statistics (mean, rstd): CUDA keeps them in float32 (acc_type); CPU in the input
  dtype unless input and weight dtypes differ (then float32).
- sdpa: CPU uses _scaled_dot_product_flash_attention_for_cpu when there is no attention dropout
  (saves q, k, v, output and a float32 logsumexp B·A·S) and the math path when there is (it
  materializes the S×S scores like eager, in float32 for 16-bit inputs). CUDA uses the flash
  kernel for 16-bit inputs (logsumexp B·A·S float32) and the memory-efficient kernel for float32
  (logsumexp padded to a multiple of 32 positions), never an S×S tensor; dropout there is
  regenerated from a Philox seed (2 int64 tensors) instead of stored.
- autocast (dtype "mixed_bf16"/"mixed_fp16"): CPU autocast runs only matmul-like ops (linear,
  matmul, bmm, sdpa) in 16 bits and leaves softmax, LayerNorm and pow in the input dtype; CUDA
  autocast also runs softmax, layer_norm and pow in float32 (their outputs are float32).
CUDA figures follow the PyTorch sources and the autocast op reference; no GPU was available to
measure them here (benchmarks/cuda_peak.py checks them where one is).

training=False: the peak working memory of a no_grad forward beyond weights, see inference_peak.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .config import ModelConfig, require_choice
from .params import stored_copies

if TYPE_CHECKING:
    import pandas as pd

DTYPES = ("float32", "bfloat16", "float16", "mixed_bf16", "mixed_fp16")
ATTENTIONS = ("eager", "sdpa")
DEVICES = ("cuda", "cpu")
DEFAULT_DEVICE = "cuda"  # what people plan memory for; "cpu" is what albert_core.measure measures here
_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int64": 8, "bool": 1}
MONOMIALS = ("B·S²", "B·S", "S", "B", "1")  # a size is a 5-tuple of coefficients of these
F32 = "float32"


# ---- symbolic tensors -------------------------------------------------------------------------------
@dataclass(frozen=True)
class _T:
    id: int  # storage identity: views share it
    size: tuple[int, int, int, int, int]  # elements, coefficients of MONOMIALS
    dtype: str


@dataclass(frozen=True)
class Term:
    scope: str  # embeddings | layer | layer (first) | layer (others) | pooler | weights
    component: str  # what it is, e.g. "attention probabilities (softmax output)"
    op: str  # the PyTorch op whose backward saves it
    part: str  # quadratic (grows with S²) | linear (everything else)
    bytes: tuple[int, int, int, int, int]  # byte coefficients of MONOMIALS for one application
    count: int  # applications (layer applications for per-layer terms)

    def at(self, batch_size: int, seq_len: int) -> int:
        B, S = batch_size, seq_len
        c = self.bytes
        return self.count * (c[0] * B * S * S + c[1] * B * S + c[2] * S + c[3] * B + c[4])


def _sz(bss: int = 0, bs: int = 0, s: int = 0, b: int = 0, one: int = 0) -> tuple[int, int, int, int, int]:
    return (bss, bs, s, b, one)


class _Replay:
    """Records saved storages (once each) while the forward is replayed symbolically."""

    def __init__(self, device: str, amp: str | None, model_dtype: str):
        self.device = device
        self.amp = amp  # autocast low-precision dtype, or None
        self.md = model_dtype  # dtype of the weights
        self.saved: dict[int, tuple[str, str, str, tuple[int, ...], str]] = {}
        self.order: list[int] = []
        self._ids = itertools.count(1)

    def new(self, size: tuple[int, ...], dtype: str) -> _T:
        return _T(next(self._ids), tuple(size), dtype)  # type: ignore[arg-type]

    def save(self, t: _T, component: str, op: str) -> None:
        if t.id in self.saved or not any(t.size):
            return
        part = "quadratic" if t.size[0] else "linear"
        self.saved[t.id] = (component, op, part, t.size, t.dtype)
        self.order.append(t.id)

    def terms(self) -> list[tuple[str, str, str, tuple[int, ...]]]:
        out = []
        for i in self.order:
            comp, op, part, size, dtype = self.saved[i]
            out.append((comp, op, part, tuple(c * _BYTES[dtype] for c in size)))
        return out

    # ---- ops, each saving what its autograd formula saves ------------------------------------------
    def linear(self, x: _T, n_in: int, n_out: int, component: str, rows: tuple[int, ...] | None = None) -> _T:
        """nn.Linear: addmm saves its input (and the weight: a parameter, or autocast's cached copy,
        counted once per stored weight in _weight_copy_bytes). rows: the input's rows when x is a
        larger storage that the input is a view of (the pooler's first token)."""
        rows = _scale(x.size, 1, n_in) if rows is None else rows
        if self.amp and x.dtype != self.amp:  # autocast casts the input to a new 16-bit tensor, saved
            x = self.new(x.size, self.amp)
        self.save(x, component, "aten::addmm (input)")
        return self.new(_scale(rows, n_out, 1), self.amp or x.dtype)

    def layer_norm(self, x: _T, n: int, component: str) -> _T:
        """aten::native_layer_norm saves input, weight, bias (parameters), mean and rstd (one per row)."""
        rows = _scale(x.size, 1, n)
        if self.amp and self.device == "cuda" and x.dtype != F32:  # CUDA autocast: layer_norm in float32 list
            x = self.new(x.size, F32)
        self.save(x, component, "aten::native_layer_norm (input)")
        if self.device == "cuda":
            stat = F32  # CUDA: acc_type of the input
        else:  # CPU: param_scalar_type; float32 when input and weight dtypes differ (autocast)
            stat = F32 if x.dtype != self.md else x.dtype
        self.save(self.new(rows, stat), component, "aten::native_layer_norm (mean)")
        self.save(self.new(rows, stat), component, "aten::native_layer_norm (rstd)")
        return self.new(x.size, x.dtype)

    def dropout(self, x: _T, p: float, component: str) -> _T:
        """nn.Dropout in training: p == 0 returns the input and saves nothing."""
        if p == 0:
            return x
        if self.device == "cuda":  # at::native_dropout saves a bool mask
            self.save(self.new(x.size, "bool"), component, "aten::native_dropout (bool mask)")
        else:  # CPU at::dropout: input * (bernoulli noise / (1-p)); MulBackward0 saves the noise
            self.save(self.new(x.size, x.dtype), component, "aten::mul (dropout noise)")
        return self.new(x.size, x.dtype)

    def add(self, a: _T, b: _T) -> _T:
        """a + b saves nothing; the result takes the promoted dtype."""
        return self.new(a.size, _promote(a.dtype, b.dtype))

    def scalar(self, x: _T) -> _T:
        """x * c, x + c, x / c with a Python number: saves nothing."""
        return self.new(x.size, x.dtype)

    def mul(self, a: _T, b: _T, component: str) -> _T:
        """a * b with both requiring grad: MulBackward0 saves both."""
        self.save(a, component, "aten::mul (self)")
        self.save(b, component, "aten::mul (other)")
        return self.new(a.size, _promote(a.dtype, b.dtype))

    def unary_saves_input(self, x: _T, op: str, component: str, fp32_on_cuda_amp: bool = False) -> _T:
        if fp32_on_cuda_amp and self.amp and self.device == "cuda" and x.dtype != F32:
            x = self.new(x.size, F32)  # CUDA autocast float32 list (pow)
        self.save(x, component, op + " (input)")
        return self.new(x.size, x.dtype)

    def unary_saves_result(self, x: _T, op: str, component: str) -> _T:
        y = self.new(x.size, x.dtype)
        self.save(y, component, op + " (result)")
        return y

    def activation(self, x: _T, name: str) -> _T:
        """HF ACT2FN[name] op by op (transformers/activations.py)."""
        c = "activation function"
        if name in ("gelu", "silu"):  # F.gelu / F.silu: GeluBackward0 / SiluBackward0 save the input
            return self.unary_saves_input(x, f"aten::{name}", c)
        if name in ("relu", "tanh"):  # ReluBackward0 / TanhBackward0 save the result
            return self.unary_saves_result(x, f"aten::{name}", c)
        if name == "gelu_new":  # 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*pow(x,3))))
            a = self.scalar(x)  # 0.5 * x
            p = self.unary_saves_input(x, "aten::pow", c, fp32_on_cuda_amp=True)  # PowBackward0 saves self
            d = self.scalar(self.add(x, self.scalar(p)))  # sqrt(2/pi) * (x + 0.044715 * p)
            t = self.unary_saves_result(d, "aten::tanh", c)  # TanhBackward0 saves result
            return self.mul(a, self.scalar(t), c)  # (0.5x) * (1 + t) saves both
        if name == "gelu_python":  # x*0.5*(1+erf(x/sqrt(2)))
            a = self.scalar(x)
            e = self.unary_saves_input(self.scalar(x), "aten::erf", c)  # ErfBackward0 saves self
            return self.mul(a, self.scalar(e), c)
        if name == "gelu_fast":  # 0.5*x*(1+tanh(x*0.7978845608*(1+0.044715*x*x)))
            a = self.scalar(x)  # 0.5 * x
            b = self.scalar(x)  # x * 0.7978845608
            cx = self.mul(self.scalar(x), x, c)  # (0.044715 * x) * x saves both
            f = self.mul(b, self.scalar(cx), c)  # b * (1 + ...) saves both
            t = self.unary_saves_result(f, "aten::tanh", c)
            return self.mul(a, self.scalar(t), c)
        if name == "quick_gelu":  # x * sigmoid(1.702 * x)
            s = self.unary_saves_result(self.scalar(x), "aten::sigmoid", c)  # SigmoidBackward0 saves result
            return self.mul(x, s, c)
        raise ValueError(f"no activation model for hidden_act {name!r}")


def _scale(size: tuple[int, ...], mul: int, div: int) -> tuple[int, ...]:
    return tuple(c * mul // div for c in size)


def _promote(a: str, b: str) -> str:
    if a == b:
        return a
    return F32 if F32 in (a, b) else a  # bf16+fp16 never meet here


# ---- the forward, replayed --------------------------------------------------------------------------
def check_inputs(cfg: Any, batch_size: Any, seq_len: Any, dtype: str, attention: str, device: str) -> None:
    """ValueError saying what to change when the arguments of an estimate or a measurement are invalid."""
    if not isinstance(cfg, ModelConfig):
        raise ValueError(f"cfg must be a ModelConfig, got {type(cfg).__name__}")
    for name, v in (("batch_size", batch_size), ("seq_len", seq_len)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a whole number of at least 1, got {v!r}")
    if seq_len > cfg.max_position:
        raise ValueError(
            f"seq_len ({seq_len}) must be at most max_position ({cfg.max_position}): the position embedding "
            "has no rows beyond it; raise max_position or shorten the sequence"
        )
    _check_modes(dtype, attention, device)


def _check_modes(dtype: str, attention: str, device: str) -> None:
    require_choice("dtype", dtype, DTYPES)
    require_choice("attention", attention, ATTENTIONS)
    require_choice("device", device, DEVICES)


def _dtypes(dtype: str) -> tuple[str, str | None]:
    """(weight dtype, autocast dtype or None)."""
    if dtype == "mixed_bf16":
        return F32, "bfloat16"
    if dtype == "mixed_fp16":
        return F32, "float16"
    return dtype, None


def _attention_core(r: _Replay, cfg: ModelConfig, q: _T, k: _T, v: _T, attention: str) -> _T:
    """Scores, softmax, dropout, probs @ V. Returns the (B, S, H) context the output dense reads."""
    A = cfg.num_heads
    tok = q.size  # elements of a (B, S, H) tensor
    sq = _sz(bss=A)  # elements of (B, A, S, S)
    p = cfg.attention_dropout
    cpu_math = attention == "sdpa" and r.device == "cpu" and p > 0
    if attention == "sdpa" and not cpu_math:
        if r.device == "cpu":  # _scaled_dot_product_flash_attention_for_cpu saves q, k, v, out, logsumexp
            lse = r.new(_sz(bs=A), F32)  # (B, A, S) float32
        else:  # CUDA flash (16-bit) / memory-efficient (float32): logsumexp, efficient pads S to 32
            lse = r.new(_sz(bs=A), F32) if q.dtype != F32 else r.new(_sz(bs=A, b=31 * A), F32)
        for t, name in ((q, "Q"), (k, "K"), (v, "V")):
            r.save(t, "Q/K/V", f"aten::_scaled_dot_product_*_attention ({name})")
        out = r.new(tok, q.dtype)  # (B, S, A, D) storage: transpose(1, 2).contiguous() is a no-op
        r.save(out, "context (output projection input)", "aten::_scaled_dot_product_*_attention (output)")
        r.save(lse, "attention statistics (logsumexp)", "aten::_scaled_dot_product_*_attention (logsumexp)")
        if r.device == "cuda" and p > 0:  # Philox seed and offset, int64 scalars
            r.save(r.new(_sz(one=1), "int64"), "attention statistics (logsumexp)", "philox seed")
            r.save(r.new(_sz(one=1), "int64"), "attention statistics (logsumexp)", "philox offset")
        return out
    # eager_attention_forward, or CPU sdpa's math path (same ops; 16-bit inputs upcast to float32)
    dt = F32 if cpu_math else q.dtype
    if r.amp and not cpu_math:
        dt = r.amp
    # torch.matmul on (B,A,S,D) transposed views: expand + reshape copies, BmmBackward0 saves both
    r.save(r.new(tok, dt), "Q/K/V", "aten::bmm (Q, reshaped copy)")
    r.save(r.new(tok, dt), "Q/K/V", "aten::bmm (K^T, reshaped copy)")
    scores = r.new(sq, dt)  # (B, A, S, S); "* scaling" saves nothing
    if r.amp and r.device == "cuda" and not cpu_math:  # CUDA autocast: softmax in the float32 list
        scores = r.new(sq, F32)
    probs = r.unary_saves_result(scores, "aten::_softmax", "attention probabilities (softmax output)")
    probs = r.dropout(probs, p, "attention dropout mask")
    if r.amp and not cpu_math and probs.dtype != r.amp:  # matmul under autocast casts probs to 16 bits
        probs = r.new(sq, r.amp)
    r.save(probs, "attention probabilities (bmm input: dropped or cast)", "aten::bmm (probs)")
    r.save(r.new(tok, dt), "Q/K/V", "aten::bmm (V, reshaped copy)")
    out_dt = q.dtype if cpu_math else dt  # math path casts back to the input dtype
    return r.new(tok, out_dt)  # transpose(1, 2).contiguous(): a copy, saved by the output dense


def _layer(r: _Replay, cfg: ModelConfig, x: _T, attention: str) -> _T:
    """One layer application (BertLayer / AlbertLayer); x is the (B, S, H) layer input."""
    H, I = cfg.hidden_dim, cfg.intermediate_dim
    qs = [r.linear(x, H, H, "layer input (Q/K/V projections)") for _ in range(3)]  # query, key, value
    ctx = _attention_core(r, cfg, *qs, attention)
    a = r.linear(ctx, H, H, "context (output projection input)")
    a = r.dropout(a, cfg.dropout, "residual dropout masks")  # BertSelfOutput.dropout / AlbertAttention.output_dropout
    a = r.layer_norm(r.add(a, x), H, "LayerNorms")  # LayerNorm(dense + residual)
    h = r.linear(a, H, I, "FFN input")
    h = r.activation(h, cfg.hidden_act)
    h = r.linear(h, I, H, "FFN output projection input")
    if cfg.family == "bert":  # BertOutput.dropout; AlbertLayer applies none
        h = r.dropout(h, cfg.dropout, "residual dropout masks")
    return r.layer_norm(r.add(h, a), H, "LayerNorms")


def _embeddings(r: _Replay, cfg: ModelConfig) -> _T:
    E, P = cfg.embedding_dim, cfg.max_position
    c = "embeddings: index tensors"
    r.save(r.new(_sz(bs=1), "int64"), c, "aten::embedding (input_ids)")
    r.save(r.new(_sz(s=1), "int64"), c, "aten::embedding (token_type_ids: gather of the (1, P) buffer, (1, S))")
    r.save(r.new(_sz(one=P), "int64"), c, "aten::embedding (position_ids: a view of the (1, P) buffer)")
    x = r.new(_sz(bs=E), r.md)  # word + token_type + position embeddings (weights' dtype; autocast leaves it)
    x = r.layer_norm(x, E, "embeddings: LayerNorm")
    return r.dropout(x, cfg.dropout, "embeddings: dropout mask")


_CACHE: dict[tuple, tuple[Term, ...]] = {}


def _weight_copy_bytes(cfg: ModelConfig, checkpointing: bool) -> int:
    """Bytes of autocast's cached 16-bit weight copies that Linear layers save: one per stored weight.

    Under checkpointing the layers' copies are made inside the checkpointed region, whose saved
    tensors are dropped, so only the E→H projection's and the pooler's remain.
    """
    E, H, I = cfg.embedding_dim, cfg.hidden_dim, cfg.intermediate_dim
    n = H * H  # pooler.dense
    if cfg.factorized:
        n += E * H  # embedding_hidden_mapping_in
    if not checkpointing:
        n += stored_copies(cfg, "attention") * 4 * H * H + stored_copies(cfg, "ffn") * 2 * H * I
    return 2 * n


def _terms(cfg: ModelConfig, dtype: str, attention: str, device: str, checkpointing: bool) -> tuple[Term, ...]:
    key = (cfg, dtype, attention, device, checkpointing)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    md, amp = _dtypes(dtype)
    ids = itertools.count(1)
    L = cfg.layer_applications
    out: list[Term] = []

    def replay() -> _Replay:
        rr = _Replay(device, amp, md)
        rr._ids = ids  # one identity space across the whole forward
        return rr

    def flush(scope: str, count: int, rr: _Replay) -> None:
        merged: dict[tuple[str, str], list] = {}
        for comp, op, part, b in rr.terms():
            acc = merged.setdefault((comp, part), [[0] * 5, []])
            acc[0] = [x + y for x, y in zip(acc[0], b, strict=True)]
            if op not in acc[1]:
                acc[1].append(op)
        for (comp, part), (b, ops) in merged.items():
            out.append(Term(scope, comp, "; ".join(ops), part, tuple(b), count))

    # embeddings and ALBERT's E->H projection
    r = replay()
    x = _embeddings(r, cfg)
    if cfg.factorized:  # AlbertTransformer.embedding_hidden_mapping_in
        x = r.linear(x, cfg.embedding_dim, cfg.hidden_dim, "embeddings: E→H projection input")
    flush("embeddings", 1, r)

    def run_layer(x_in: _T) -> tuple[_Replay, _T]:
        rr = replay()
        if checkpointing:  # torch.utils.checkpoint (use_reentrant=False): _NoopSaveInputs saves the layer input
            rr.save(x_in, "checkpointed layer input", "checkpoint (_NoopSaveInputs)")
            return rr, _layer(replay(), cfg, x_in, attention)  # inner saves are dropped by the checkpoint
        return rr, _layer(rr, cfg, x_in, attention)

    # layers: every application is the same except when the first one's input dtype differs
    first, y = run_layer(x)
    if L > 1:
        second, y2 = run_layer(y)
        if x.dtype == y.dtype:
            flush("layer", L, first)
        else:
            flush("layer (first)", 1, first)
            flush("layer (others)", L - 1, second)
        y = y2
    else:
        flush("layer", 1, first)

    # pooler: BertPooler / AlbertModel.pooler on sequence_output[:, 0]
    pr = replay()
    H = cfg.hidden_dim
    if amp and y.dtype != amp:
        first_tok = pr.new(_sz(b=H), y.dtype)  # autocast casts a copy of the (B, H) slice
    else:
        first_tok = y  # a view of sequence_output: its whole (B, S, H) storage is saved
    pooled = pr.linear(first_tok, H, H, "pooler", rows=_sz(b=1))
    pr.unary_saves_result(pooled, "aten::tanh", "pooler")
    flush("pooler", 1, pr)
    if amp:
        out.append(Term("weights", "autocast weight copies", "aten::addmm (autocast-cached 16-bit weight)",
                        "linear", _sz(one=_weight_copy_bytes(cfg, checkpointing)), 1))
    terms = tuple(t for t in out if any(t.bytes))
    if len(_CACHE) > 4096:
        _CACHE.clear()
    _CACHE[key] = terms
    return terms


# ---- public API -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ActivationMemory:
    """Bytes kept for backward (training) or peak working bytes (inference); exact ints."""

    config: str  # cfg.name
    batch_size: int
    seq_len: int
    dtype: str
    attention: str
    device: str
    training: bool
    checkpointing: bool
    total: int  # bytes
    quadratic: int  # bytes that grow with seq_len² (attention scores, probabilities, their dropout masks)
    linear: int  # everything else (grows with seq_len, plus constants such as position_ids)
    terms: tuple[Term, ...]  # the components; empty for training=False
    per_layer: int  # bytes of one layer application (the first one where later ones differ)

    def breakdown(self) -> pd.DataFrame:
        """Tidy table: scope, component, part, op, count, bytes_each (one application), bytes (all)."""
        import pandas as pd

        rows = []
        for t in self.terms:
            each = Term(t.scope, t.component, t.op, t.part, t.bytes, 1).at(self.batch_size, self.seq_len)
            rows.append({"scope": t.scope, "component": t.component, "part": t.part, "op": t.op,
                         "count": t.count, "bytes_each": each, "bytes": each * t.count})
        if not self.terms:
            rows.append({"scope": "model", "component": "peak working memory (no_grad forward)",
                         "part": "quadratic" if self.quadratic else "linear", "op": "", "count": 1,
                         "bytes_each": self.total, "bytes": self.total})
        df = pd.DataFrame(rows, columns=["scope", "component", "part", "op", "count", "bytes_each", "bytes"])
        return df.astype({"count": object, "bytes_each": object, "bytes": object})


def activation_memory(cfg: ModelConfig, *, batch_size: int, seq_len: int, dtype: str = "float32",
                      attention: str = "eager", training: bool = True, checkpointing: bool = False,
                      device: str = DEFAULT_DEVICE) -> ActivationMemory:
    """Activation memory of cfg, exact bytes, component by component (see the module docstring).

    training=True: bytes autograd saves for backward in one forward (what measure.py measures with
    saved_tensors_hooks on the CPU). checkpointing=True: HF's per-layer gradient checkpointing
    (only each layer application's input is kept; one layer is recomputed at a time in backward,
    see recompute_memory). training=False: peak working bytes of a no_grad forward beyond the
    weights (see inference_peak). Sharing modes give the same bytes as no sharing at equal
    dimensions: sharing reuses weights, not activations (module docstring); only autocast's
    weight copies, one per stored weight, differ.
    """
    check_inputs(cfg, batch_size, seq_len, dtype, attention, device)
    if checkpointing and not training:
        raise ValueError("checkpointing only applies to training=True (an inference forward keeps nothing)")
    if not training:
        total, quad = inference_peak(cfg, batch_size=batch_size, seq_len=seq_len, dtype=dtype,
                                     attention=attention, device=device)
        return ActivationMemory(cfg.name, batch_size, seq_len, dtype, attention, device, False, False,
                                total, quad, total - quad, (), 0)
    terms = _terms(cfg, dtype, attention, device, checkpointing)
    total = quad = per_layer = 0
    for t in terms:
        v = t.at(batch_size, seq_len)
        total += v
        if t.part == "quadratic":
            quad += v
        if t.scope in ("layer", "layer (first)"):
            per_layer += v // t.count
    return ActivationMemory(cfg.name, batch_size, seq_len, dtype, attention, device, True, checkpointing,
                            total, quad, total - quad, terms, per_layer)


def recompute_memory(cfg: ModelConfig, *, batch_size: int, seq_len: int, dtype: str = "float32",
                     attention: str = "eager", device: str = DEFAULT_DEVICE) -> int:
    """Bytes one layer application saves when checkpointing recomputes it in backward (the extra
    working set of checkpointing; Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost")."""
    am = activation_memory(cfg, batch_size=batch_size, seq_len=seq_len, dtype=dtype, attention=attention,
                           device=device)
    return am.per_layer


def attention_quadratic_memory(cfg: ModelConfig, batch_size: int, seq_len: int, dtype: str = "float32", *,
                               attention: str = "eager", device: str = DEFAULT_DEVICE,
                               checkpointing: bool = False) -> int:
    """The seq_len² part of the training activation memory, all layers: scores/probabilities and their
    dropout masks (0 for sdpa on CUDA, and on the CPU without attention dropout)."""
    return activation_memory(cfg, batch_size=batch_size, seq_len=seq_len, dtype=dtype, attention=attention,
                             device=device, checkpointing=checkpointing).quadratic


def korthikanti_bytes(cfg: ModelConfig, *, batch_size: int, seq_len: int) -> int:
    """Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
    Sec. 4.1, Eq. 1): 34·s·b·h + 5·a·s²·b bytes per layer (16-bit activations, 1-byte dropout masks),
    times the layer applications. A published rule of thumb, shown beside our estimate."""
    s, b, h, a = seq_len, batch_size, cfg.hidden_dim, cfg.num_heads
    return cfg.layer_applications * (34 * s * b * h + 5 * a * s * s * b)


def activation_sweep(cfgs: Any, seq_lens: Any, batch_size: int = 1, dtype: str = "float32",
                     attention: str = "eager", checkpointing: bool = False,
                     device: str = DEFAULT_DEVICE) -> pd.DataFrame:
    """Tidy DataFrame (config, seq_len, part, bytes) of training activation memory, exact ints.

    cfgs: a ModelConfig, a list of them or a dict name -> ModelConfig. part is "quadratic",
    "linear" or "total". Vectorized over seq_len with numpy int64, falling back to Python ints
    (object dtype) when a value could overflow int64.
    """
    import numpy as np
    import pandas as pd

    if isinstance(cfgs, ModelConfig):
        cfgs = [cfgs]
    items = list(cfgs.items()) if isinstance(cfgs, dict) else [(c.name, c) for c in cfgs]
    S = [int(s) for s in seq_lens]
    if not S:
        raise ValueError("seq_lens must not be empty")
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"batch_size must be a whole number of at least 1, got {batch_size!r}")
    _check_modes(dtype, attention, device)
    frames = []
    for name, cfg in items:
        for s in (min(S), max(S)):
            check_inputs(cfg, batch_size, s, dtype, attention, device)
        terms = _terms(cfg, dtype, attention, device, checkpointing)
        B = batch_size
        quad_c = [0] * 5
        lin_c = [0] * 5
        for t in terms:
            acc = quad_c if t.part == "quadratic" else lin_c
            for i in range(5):
                acc[i] += t.bytes[i] * t.count
        smax = max(S)
        bound = sum(abs(c) for c in quad_c + lin_c) * max(B, 1) * smax * smax + 1
        if bound < 2**62:
            s_arr = np.asarray(S, dtype=np.int64)
        else:
            s_arr = np.asarray(S, dtype=object)

        def ev(c: list[int], s: Any = s_arr, B: int = B) -> Any:
            return c[0] * B * s * s + c[1] * B * s + c[2] * s + c[3] * B + c[4]

        q, lin = ev(quad_c), ev(lin_c)
        n = len(S)
        frames.append(pd.DataFrame({
            "config": [name] * (3 * n),
            "seq_len": S * 3,
            "part": ["quadratic"] * n + ["linear"] * n + ["total"] * n,
            "bytes": [int(v) for v in q] + [int(v) for v in lin] + [int(a) + int(b) for a, b in zip(q, lin, strict=True)],
        }))
    df = pd.concat(frames, ignore_index=True)
    return df.astype({"bytes": object})



# ---- training=False: peak working memory of a no_grad forward ---------------------------------------
class _Live:
    """Allocations and frees of one no_grad forward, in order; live bytes as MONOMIALS coefficients."""

    def __init__(self) -> None:
        self.live = [0, 0, 0, 0, 0]
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


def _stored_range(cfg: ModelConfig, sublayer: str, first_step: int, last_step: int) -> tuple[int, int]:
    """[start, stop) of the stored-copy indexes that steps first_step..last_step use (contiguous)."""
    inner = cfg.inner_group_num
    if cfg.sharing in ("all", sublayer):  # step i runs group i // (L / G), copies g·inner + k
        per = cfg.num_layers // cfg.num_groups
        return (first_step // per) * inner, (last_step // per + 1) * inner
    return first_step * inner, (last_step + 1) * inner  # one copy per application


def _inference_snapshots(cfg: ModelConfig, dtype: str, attention: str, device: str, copy_qkv: bool,
                         copy_ctx: bool) -> tuple[tuple[int, ...], ...]:
    """Replays HF's eval forward under torch.no_grad: what each op allocates and when Python drops it.

    Lifetimes follow transformers 5.23's code: locals live until their function returns (q, k, v
    until BertSelfAttention/AlbertAttention returns, the attention probabilities until the layer
    returns, embedding_output until the model returns), temporaries die after the op that reads them.
    Under autocast each Linear casts its bias and weight once per forward (autocast's weight cache,
    alive until the forward ends) and its input, when not already 16-bit, into a temporary.
    """
    md, amp = _dtypes(dtype)
    cuda = device == "cuda"
    c = amp or md  # dtype of matmul-like outputs
    E, H, I, A = cfg.embedding_dim, cfg.hidden_dim, cfg.intermediate_dim, cfg.num_heads
    m = _Live()
    info: dict[int, tuple[tuple[int, ...], str]] = {}  # handle -> (elements, dtype)

    def new(*specs: tuple[tuple[int, ...], str]) -> Any:
        hs = m.alloc(*[tuple(x * _BYTES[d] for x in el) for el, d in specs])
        hs_t = hs if isinstance(hs, tuple) else (hs,)
        for h, spec in zip(hs_t, specs, strict=True):
            info[h] = spec
        return hs

    def el(h: int) -> tuple[int, ...]:
        return info[h][0]

    def dt(h: int) -> str:
        return info[h][1]

    TH, TI, TE, SQ = _sz(bs=H), _sz(bs=I), _sz(bs=E), _sz(bss=A)
    hi = {"attention": 0, "ffn": 0}  # stored copies whose 16-bit casts are cached: indexes below hi
    cached: set[str] = set()

    def cast_weights(key: str, n_in: int, n_out: int) -> None:
        if amp and key not in cached:  # autocast's cache: bias, then weight, alive to the end
            cached.add(key)
            new((_sz(one=n_out), amp))
            new((_sz(one=n_in * n_out), amp))

    def linear(x: int, n_in: int, n_out: int, key: str, out_el: tuple[int, ...] | None = None,
               in_el: tuple[int, ...] | None = None) -> int:
        out_el = out_el or _scale(el(x), n_out, n_in)
        if not amp:
            return new((out_el, md))
        cast_weights(key, n_in, n_out)
        xc = new((in_el or el(x), amp)) if dt(x) != amp else None  # the input's cast, a temporary
        out = new((out_el, amp))
        m.free(xc)
        return out

    def layer_linears(j: int, sub: str) -> str:
        """Cache key of application j's stored copy of a sublayer; marks it cached."""
        idx = _stored_index(cfg, sub, j)
        key = f"{sub}{idx}"
        if idx < hi[sub]:  # cast by an earlier application (possibly one the replay skipped)
            names = ("q", "k", "v", "dense") if sub == "attention" else ("ffn", "ffn_output")
            cached.update(f"{key}.{n}" for n in names)
        hi[sub] = max(hi[sub], idx + 1)
        return key

    def layer_norm(x: int, n: int) -> int:
        tmp = None
        if amp and cuda and dt(x) != F32:  # CUDA autocast runs layer_norm in float32: a cast temporary
            tmp = x = new((el(x), F32))
        d = dt(x)
        stat = F32 if cuda else (F32 if d != md else d)  # CPU: param dtype when input and weight differ
        rows = _scale(el(x), 1, n)
        out, mean, rstd = new((el(x), d), (rows, stat), (rows, stat))
        m.free(mean, rstd, tmp)
        return out

    def add(a: int, b: int) -> int:
        return new((el(a), _promote(dt(a), dt(b))))

    # embeddings (BertEmbeddings / AlbertEmbeddings.forward); embedding is on no autocast list
    tt = new((_sz(s=1), "int64"))  # gather: token_type_ids (1, S)
    we = new((TE, md))  # inputs_embeds
    te = new((TE, md))  # token_type_embeddings
    e1 = new((TE, md))  # inputs_embeds + token_type_embeddings
    pe = new((_sz(s=E), md))  # position_embeddings (1, S, E)
    e2 = new((TE, md))  # + position_embeddings
    m.free(e1)
    emb = layer_norm(e2, E)  # dropout is the identity in eval
    m.free(e2, tt, we, te, pe)  # locals of the embeddings' forward; emb lives until the model returns
    x = linear(emb, E, H, "mapping") if cfg.factorized else emb  # embedding_hidden_mapping_in

    def attention_core() -> tuple[int, int | None]:
        """Returns (context, probabilities or None)."""
        if attention == "sdpa":  # flash (CPU or CUDA) / memory-efficient (CUDA): output, float32 logsumexp
            pad = 31 * A if cuda and c == F32 else 0  # memory-efficient pads S up to 32·k
            out, lse = new((TH, c), (_sz(bs=A, b=pad), F32))
            m.free(lse)
            return out, None
        # torch.matmul reshapes the (B,A,S,D) views to (B·A,S,D): copies unless B, A or S is 1 (then views)
        c1 = (new((TH, c)), new((TH, c))) if copy_qkv else ()  # Q and K^T copies
        scores = new((SQ, c))  # bmm
        m.free(*c1)
        scaled = new((SQ, c))  # * scaling
        m.free(scores)
        tmp = new((SQ, F32)) if amp and cuda and c != F32 else None  # CUDA autocast: softmax in float32
        probs = new((SQ, dt(tmp) if tmp is not None else c))  # softmax; dropout is the identity in eval
        m.free(scaled, tmp)
        pc = new((SQ, amp)) if amp and dt(probs) != amp else None  # matmul under autocast casts probs
        cv = new((TH, c)) if copy_qkv else None  # V copy
        o = new((TH, c))  # bmm
        m.free(cv, pc)
        if not copy_ctx:  # (B,S,A,D) is already contiguous when A or S is 1
            return o, probs
        ctx = new((TH, c))  # transpose(1, 2).contiguous() copy
        m.free(o)
        return ctx, probs

    def ffn_activation(x: int) -> int:
        act, d = cfg.hidden_act, dt(x)
        if act in ("gelu", "relu", "tanh", "silu"):
            return new((TI, d))
        if act == "gelu_new":  # 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*pow(x,3))))
            a = new((TI, d))
            f = F32 if amp and cuda else d  # CUDA autocast runs pow in float32
            xc = new((TI, F32)) if f != d else None
            t = new((TI, f))  # pow
            m.free(xc)
            for _ in range(5):  # 0.044715*p, x+., c*., tanh, 1+.
                t2 = new((TI, f))
                m.free(t)
                t = t2
            y = new((TI, _promote(d, f)))
            m.free(t, a)
            return y
        if act == "gelu_python":  # x*0.5*(1+erf(x/sqrt(2)))
            a = new((TI, d))
            t = new((TI, d))  # x / sqrt(2)
            for _ in range(2):  # erf, 1+.
                t2 = new((TI, d))
                m.free(t)
                t = t2
            y = new((TI, d))
            m.free(t, a)
            return y
        if act == "gelu_fast":  # 0.5*x*(1+tanh(x*0.7978845608*(1+0.044715*x*x)))
            a, b, cc = new((TI, d)), new((TI, d)), new((TI, d))
            dd = new((TI, d))  # cc * x
            m.free(cc)
            e = new((TI, d))  # 1 + dd
            m.free(dd)
            f = new((TI, d))  # b * e
            m.free(b, e)
            g = new((TI, d))  # tanh
            m.free(f)
            h = new((TI, d))  # 1 + g
            m.free(g)
            y = new((TI, d))
            m.free(a, h)
            return y
        if act == "quick_gelu":  # x * sigmoid(1.702 * x)
            a = new((TI, d))
            s_ = new((TI, d))
            m.free(a)
            y = new((TI, d))
            m.free(s_)
            return y
        raise ValueError(f"no activation model for hidden_act {act!r}")

    def bert_layer(xin: int, j: int) -> int:
        ka, kf = layer_linears(j, "attention"), layer_linears(j, "ffn")
        q, k, v = (linear(xin, H, H, f"{ka}.{n}") for n in "qkv")
        ctx, probs = attention_core()
        m.free(q, k, v)  # BertSelfAttention returns
        d = linear(ctx, H, H, f"{ka}.dense")  # BertSelfOutput.dense
        s_ = add(d, xin)  # + input_tensor
        a1 = layer_norm(s_, H)
        m.free(s_, d, ctx)
        xi = linear(a1, H, I, f"{kf}.ffn")  # BertIntermediate.dense
        y = ffn_activation(xi)
        m.free(xi)
        d2 = linear(y, I, H, f"{kf}.ffn_output")  # BertOutput.dense
        s2 = add(d2, a1)
        out = layer_norm(s2, H)
        m.free(s2, d2, y, probs, a1)  # BertOutput, feed_forward_chunk, BertLayer return
        return out

    def albert_layer(xin: int, j: int) -> int:
        ka, kf = layer_linears(j, "attention"), layer_linears(j, "ffn")
        q, k, v = (linear(xin, H, H, f"{ka}.{n}") for n in "qkv")
        ctx, probs = attention_core()
        d = linear(ctx, H, H, f"{ka}.dense")  # the context dies when attn_output is rebound
        m.free(ctx)
        s_ = add(xin, d)  # hidden_states + attn_output
        a1 = layer_norm(s_, H)
        m.free(s_, d, q, k, v)  # AlbertAttention returns
        xi = linear(a1, H, I, f"{kf}.ffn")  # ffn
        y = ffn_activation(xi)
        m.free(xi)
        o = linear(y, I, H, f"{kf}.ffn_output")  # ffn_output
        m.free(y)
        s2 = add(o, a1)  # ffn_output + attention_output
        out = layer_norm(s2, H)
        m.free(s2, o, a1, probs)  # AlbertLayer returns
        return out

    # encoder: BertEncoder loop / AlbertTransformer -> AlbertLayerGroup loops. Steps 0 and 1, then the
    # last step; the steps between repeat step 1's allocations, only adding cached weight copies
    L = cfg.num_layers
    layer = bert_layer if cfg.family == "bert" else albert_layer
    inner = cfg.inner_group_num
    steps = list(range(L)) if L <= 3 else [0, 1, L - 1]
    for i in steps:
        if amp and i == L - 1 and L > 3:  # casts cached by steps 2..L-2: a constant, already alive
            sizes = {"attention": 4 * (H * H + H), "ffn": H * I + I + I * H + H}
            for sub, per_copy in sizes.items():
                stop = _stored_range(cfg, sub, 0, L - 2)[1]
                if stop > hi[sub]:
                    new((_sz(one=(stop - hi[sub]) * per_copy), amp))
                    hi[sub] = stop
        g_in = x
        h = g_in
        for kk in range(inner):
            out = layer(h, i * inner + kk)
            if h != g_in:
                m.free(h)  # AlbertLayerGroup rebinds hidden_states
            h = out
        if g_in != emb:
            m.free(g_in)  # the encoder rebinds hidden_states
        x = h
    # pooler dense on sequence_output[:, 0] (a view; autocast casts a (B, H) copy), then tanh
    pd_ = linear(x, H, H, "pooler", out_el=_sz(b=H), in_el=_sz(b=H))
    new((_sz(b=H), dt(pd_)))
    m.free(pd_)
    return tuple(m.snapshots)


def _stored_index(cfg: ModelConfig, sublayer: str, application: int) -> int:
    """Stored copy that layer application j uses (reference.ReferenceModel's layout, HF's for ALBERT)."""
    step, k = divmod(application, cfg.inner_group_num)
    return _stored_range(cfg, sublayer, step, step)[0] + k


def inference_peak(cfg: ModelConfig, *, batch_size: int, seq_len: int, dtype: str = "float32",
                   attention: str = "eager", device: str = DEFAULT_DEVICE) -> tuple[int, int]:
    """(peak bytes, of which seq_len² bytes) of a torch.no_grad eval forward beyond the weights.

    Peak, over the forward, of the bytes of tensors it creates that are alive at once (outputs
    included); measured by measure.peak_live_bytes. Under autocast the cached 16-bit weight copies
    count too (they live until the forward ends).
    """
    check_inputs(cfg, batch_size, seq_len, dtype, attention, device)
    B, S = batch_size, seq_len
    copy_qkv = B > 1 and S > 1 and cfg.num_heads > 1  # torch.matmul copies Q, K^T, V only then
    copy_ctx = S > 1 and cfg.num_heads > 1
    key = ("inference", cfg, dtype, attention, device, copy_qkv, copy_ctx)
    snaps = _CACHE.get(key)
    if snaps is None:
        snaps = _CACHE[key] = _inference_snapshots(cfg, dtype, attention, device, copy_qkv, copy_ctx)
    best, best_q = -1, 0
    for c in snaps:
        v = c[0] * B * S * S + c[1] * B * S + c[2] * S + c[3] * B + c[4]
        if v > best:
            best, best_q = v, c[0] * B * S * S
    return best, best_q
