"""Activation memory: the bytes PyTorch really keeps for backward, component by component.

Definition (training=True): the bytes of the tensors autograd saves for backward during one
training-mode forward of Hugging Face's model for cfg's family (AutoModel of to_hf_config(cfg),
pooler included where the family has one), called as model(input_ids=ids) with no attention
mask; parameters excluded, each storage counted once. albert_core.engine.measure records exactly this
with torch.autograd.graph.saved_tensors_hooks, and the tests check this module against it on
random configs (every family, every activation, dropout 0 and above, every dtype, eager and
sdpa, checkpointing, training=False).

How it works: a tiny symbolic replay of the forward (replay/symbolic.py: symbolic tensors and ops that
save what their autograd formula saves). Each family's op sequence (embeddings, one layer,
pooler) lives in its family module; this module drives them, merges the saved storages into
Terms and evaluates them. Sizes are polynomials in batch B and sequence S, so one replay gives
exact Python ints for any B and S and a vectorized sweep.

Sharing: cross-layer sharing (ALBERT Sec. 3.1) reuses *weights*; every layer application still
runs its own forward on its own inputs and saves its own activations, so at equal dimensions
every sharing mode saves the same bytes. The one exception is mixed precision: autocast caches
one low-precision copy of each weight per forward (torch/csrc/autograd autocast weight cache),
and those copies, saved by the Linear layers, are one per *stored* weight.

CPU and CUDA differences (dropout masks, LayerNorm statistics, sdpa kernels, autocast lists)
are listed in replay/symbolic.py; CUDA figures follow the PyTorch sources and were not measured here.

training=False: the peak working memory of a no_grad forward beyond weights, see inference_peak.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..choices import ATTENTIONS, DEFAULT_DEVICE, DEVICES, DTYPES
from ..config import ConfigError, ModelConfig, require_choice
from ..families import Family, base, family
from ..families.base import Inference
from ..replay.liveness import Infer, stored_index
from ..replay.symbolic import BYTES, MONOMIALS, Replay, Tensor, evaluate, quadratic, split_dtype, sz

if TYPE_CHECKING:
    import pandas as pd

    from ..workload import Workload

__all__ = ["ATTENTIONS", "DEFAULT_DEVICE", "DEVICES", "DTYPES", "MONOMIALS", "ActivationMemory", "Term",
           "activation_memory", "activation_sweep", "attention_quadratic_memory", "check_inputs",
           "inference_peak", "korthikanti_bytes", "recompute_memory"]


@dataclass(frozen=True)
class Term:
    scope: str  # embeddings | layer | layer (first) | layer (others) | pooler | weights
    component: str  # what it is, e.g. "attention probabilities (softmax output)"
    op: str  # the PyTorch op whose backward saves it
    part: str  # quadratic (grows with S²) | linear (everything else)
    bytes: tuple[int, ...]  # byte coefficients of MONOMIALS for one application
    count: int  # applications (layer applications for per-layer terms)
    min_seq_len: int = 0  # the tensor exists only from this seq_len on (ModernBERT's sdpa sliding-window mask)
    batch_one: bool | None = None  # only at batch size 1 (True) or above (False): a view at B = 1, a copy above

    def applies(self, batch_size: int) -> bool:
        return self.batch_one is None or self.batch_one == (batch_size == 1)

    def each(self, batch_size: int, seq_len: int) -> int:
        """Bytes of one application."""
        live = seq_len >= self.min_seq_len and self.applies(batch_size)
        return evaluate(self.bytes, batch_size, seq_len) if live else 0

    def at(self, batch_size: int, seq_len: int) -> int:
        return self.count * self.each(batch_size, seq_len)


# ---- inputs -----------------------------------------------------------------------------------------
def check_inputs(cfg: Any, w: Workload) -> None:
    """ValueError saying what to change when cfg cannot run w (its batch, sequence, forward dtype, attention, device)."""
    _check_sizes(cfg, w.batch_size, w.seq_len)
    _check_modes(w.forward_dtype, w.attention, w.device)


def _check_sizes(cfg: Any, batch_size: Any, seq_len: Any) -> None:
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


def _check_modes(dtype: str, attention: str, device: str) -> None:
    require_choice("dtype", dtype, DTYPES)
    require_choice("attention", attention, ATTENTIONS)
    require_choice("device", device, DEVICES)


def family_ops(cfg: ModelConfig) -> Family:
    """The family module (albert_core/families/<family>.py) whose replay_* functions are cfg's op sequences."""
    mod = family(cfg.family)
    if not hasattr(mod, "replay_layer"):
        raise ConfigError([f"activation memory is not modelled for family '{cfg.family}' yet: its attention's "
                           "saved tensors are not replayed, so no number is given; parameters and FLOPs are"])
    return mod


# ---- training: the forward, replayed ----------------------------------------------------------------
_CACHE: dict[tuple[object, ...], Any] = {}  # key -> what make() gave for it (terms, or snapshots)
_T = TypeVar("_T")


def _cached(key: tuple[object, ...], make: Callable[[], _T]) -> _T:
    hit: _T | None = _CACHE.get(key)
    if hit is None:
        if len(_CACHE) > 4096:
            _CACHE.clear()
        hit = _CACHE[key] = make()
    return hit


def _flush(out: list[Term], scope: str, count: int, rr: Replay) -> None:
    """Append rr's saved storages as Terms, one per (component, part, condition), ops listed once each."""
    merged: dict[tuple[str, str, tuple[int, bool | None]], tuple[list[int], list[str]]] = {}
    for comp, op, part, b, when in rr.terms():
        coeffs, ops = merged.setdefault((comp, part, when), ([0] * len(MONOMIALS), []))
        coeffs[:] = [x + y for x, y in zip(coeffs, b, strict=True)]
        if op not in ops:
            ops.append(op)
    for (comp, part, when), (coeffs, ops) in merged.items():
        out.append(Term(scope, comp, "; ".join(ops), part, tuple(coeffs), count, *when))


def _run_layer(root: Replay, ops: Family, cfg: ModelConfig, x: Tensor, attention: str,
               checkpointing: bool, index: int) -> tuple[Replay, Tensor]:
    rr = root.sub()
    root.ctx["layer_index"] = index  # for a family whose first layer differs (ModernBERT's has no attn_norm)
    if checkpointing:  # torch.utils.checkpoint (use_reentrant=False): _NoopSaveInputs saves the layer input
        rr.save(x, "checkpointed layer input", "checkpoint (_NoopSaveInputs)")
        return rr, ops.replay_layer(root.sub(), cfg, x, attention)  # inner saves are dropped by the checkpoint
    return rr, ops.replay_layer(rr, cfg, x, attention)


def _layer_terms(out: list[Term], root: Replay, ops: Family, cfg: ModelConfig, x: Tensor, attention: str,
                 checkpointing: bool) -> Tensor:
    """Every layer application is the same except the first when its input dtype differs (or its family's
    first layer has other modules): then the first and the others are replayed apart."""
    L = cfg.layer_applications
    first, y = _run_layer(root, ops, cfg, x, attention, checkpointing, 0)
    if L == 1:
        _flush(out, "layer", 1, first)
        return y
    second, y2 = _run_layer(root, ops, cfg, y, attention, checkpointing, 1)
    if x.dtype == y.dtype and not base.first_layer_differs(ops):
        _flush(out, "layer", L, first)
    else:
        _flush(out, "layer (first)", 1, first)
        _flush(out, "layer (others)", L - 1, second)
    return y2


def _make_terms(cfg: ModelConfig, dtype: str, attention: str, device: str, checkpointing: bool) -> tuple[Term, ...]:
    ops = family_ops(cfg)
    md, amp = split_dtype(dtype)
    root = Replay(device, amp, md)
    root.ctx.update(checkpointing=checkpointing, attention=attention)  # for families whose layers share storages
    out: list[Term] = []
    r = root.sub()
    x = ops.replay_embeddings(r, cfg)
    checkpoint_inputs = base.replay_checkpoint_inputs(ops)
    if checkpointing and checkpoint_inputs is not None:  # one storage handed to every layer
        checkpoint_inputs(r, cfg)
    _flush(out, "embeddings", 1, r)
    y = _layer_terms(out, root, ops, cfg, x, attention, checkpointing)
    r = root.sub()
    ops.replay_pooler(r, cfg, y)
    _flush(out, "pooler", 1, r)
    if amp:
        n = ops.weight_copy_elements(cfg, checkpointing)
        out.append(Term("weights", "autocast weight copies", "aten::addmm (autocast-cached 16-bit weight)",
                        "linear", sz(one=n * BYTES[amp]), 1))
    return tuple(t for t in out if any(t.bytes))


def _terms(cfg: ModelConfig, dtype: str, attention: str, device: str, checkpointing: bool) -> tuple[Term, ...]:
    key = (cfg, dtype, attention, device, checkpointing)
    return _cached(key, lambda: _make_terms(cfg, dtype, attention, device, checkpointing))


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
    per_layer: int  # bytes of one layer application (the largest, where the first one differs)

    def breakdown(self) -> pd.DataFrame:
        """Tidy table: scope, component, part, op, count, bytes_each (one application), bytes (all)."""
        import pandas as pd

        rows = []
        for t in self.terms:
            each = t.each(self.batch_size, self.seq_len)
            rows.append({"scope": t.scope, "component": t.component, "part": t.part, "op": t.op,
                         "count": t.count, "bytes_each": each, "bytes": each * t.count})
        if not self.terms:
            rows.append({"scope": "model", "component": "peak working memory (no_grad forward)",
                         "part": "quadratic" if self.quadratic else "linear", "op": "", "count": 1,
                         "bytes_each": self.total, "bytes": self.total})
        df = pd.DataFrame(rows, columns=["scope", "component", "part", "op", "count", "bytes_each", "bytes"])
        return df.astype({"count": object, "bytes_each": object, "bytes": object})


def activation_memory(cfg: ModelConfig, w: Workload, *, training: bool = True) -> ActivationMemory:
    """Activation memory of cfg's forward under workload w, exact bytes, component by component (module docstring).

    What a forward keeps depends on w's batch_size, seq_len, precision (its forward dtype: Workload.forward_dtype;
    a master copy's run is its cast model's), attention, device and checkpointing; the optimizer, the fine-tuning
    and the GPUs do not change it (the step's peak does: albert_core.step.peak.step_peak(cfg, w)).

    training=True: bytes autograd saves for backward in one forward (what measure.py measures with
    saved_tensors_hooks on the CPU). w.checkpointing: HF's per-layer gradient checkpointing
    (only each layer application's input is kept; one layer is recomputed at a time in backward,
    see recompute_memory). training=False: peak working bytes of a no_grad forward beyond the
    weights (see inference_peak). Sharing modes give the same bytes as no sharing at equal
    dimensions: sharing reuses weights, not activations (module docstring); only autocast's
    weight copies, one per stored weight, differ.
    """
    batch_size, seq_len, dtype, attention, device, checkpointing = (w.batch_size, w.seq_len, w.forward_dtype,
                                                                    w.attention, w.device, w.checkpointing)
    check_inputs(cfg, w)
    if checkpointing and not training:
        raise ValueError("checkpointing only applies to training=True (an inference forward keeps nothing)")
    if not training:
        total, quad = inference_peak(cfg, batch_size=batch_size, seq_len=seq_len, dtype=dtype,
                                     attention=attention, device=device)
        return ActivationMemory(cfg.name, batch_size, seq_len, dtype, attention, device, False, False,
                                total, quad, total - quad, (), 0)
    terms = _terms(cfg, dtype, attention, device, checkpointing)
    total = quad = 0
    per_scope: dict[str, int] = {}  # one application's bytes per layer scope
    for t in terms:
        v = t.at(batch_size, seq_len)
        total += v
        if t.part == "quadratic":
            quad += v
        if t.scope.startswith("layer"):
            per_scope[t.scope] = per_scope.get(t.scope, 0) + v // t.count
    per_layer = max(per_scope.values(), default=0)
    return ActivationMemory(cfg.name, batch_size, seq_len, dtype, attention, device, True, checkpointing,
                            total, quad, total - quad, terms, per_layer)


def recompute_memory(cfg: ModelConfig, w: Workload) -> int:
    """Bytes one layer application saves when checkpointing recomputes it in backward (the extra
    working set of checkpointing; Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost")."""
    return activation_memory(cfg, w.replace(checkpointing=False)).per_layer


def attention_quadratic_memory(cfg: ModelConfig, w: Workload) -> int:
    """The seq_len² part of the training activation memory, all layers: scores/probabilities and their
    dropout masks (0 for sdpa on CUDA, and on the CPU without attention dropout)."""
    return activation_memory(cfg, w).quadratic


def korthikanti_bytes(cfg: ModelConfig, *, batch_size: int, seq_len: int) -> int:
    """Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
    Sec. 4.1, Eq. 1): 34·s·b·h + 5·a·s²·b bytes per layer (16-bit activations, 1-byte dropout masks),
    times the layer applications. A published rule of thumb, shown beside our estimate."""
    s, b, h, a = seq_len, batch_size, cfg.hidden_dim, cfg.num_heads
    return cfg.layer_applications * (34 * s * b * h + 5 * a * s * s * b)


# ---- the sweep: one replay per config, vectorized over seq_len ---------------------------------------
def _config_items(cfgs: Any) -> list[tuple[str, ModelConfig]]:
    if isinstance(cfgs, ModelConfig):
        cfgs = [cfgs]
    return list(cfgs.items()) if isinstance(cfgs, dict) else [(c.name, c) for c in cfgs]


def _part_coefficients(terms: tuple[Term, ...], batch_size: int) -> dict[tuple[str, int], list[int]]:
    """MONOMIALS byte coefficients at this batch size, all applications, per (part, min_seq_len)."""
    acc: dict[tuple[str, int], list[int]] = {}
    for t in terms:
        if not t.applies(batch_size):
            continue
        c = acc.setdefault((t.part, t.min_seq_len), [0] * len(MONOMIALS))
        for i in range(len(MONOMIALS)):
            c[i] += t.bytes[i] * t.count
    return acc


def _sweep_parts(terms: tuple[Term, ...], S: list[int], B: int) -> tuple[list[int], list[int]]:
    """(quadratic, linear) bytes at each seq_len, exact Python ints."""
    import numpy as np

    coeffs = _part_coefficients(terms, B)
    bound = sum(abs(x) for c in coeffs.values() for x in c) * max(B, 1) * max(S) ** 2 + 1
    s = np.asarray(S, dtype=np.int64 if bound < 2**62 else object)  # Python ints when int64 could overflow
    parts = {"quadratic": s * 0, "linear": s * 0}
    for (part, m), c in coeffs.items():  # numpy arrays over seq_len; a term counts from its min_seq_len
        parts[part] = parts[part] + (evaluate(c, B, s) * (s >= m) if m else evaluate(c, B, s))
    return parts["quadratic"].tolist(), parts["linear"].tolist()


def activation_sweep(cfgs: Any, seq_lens: Any, w: Workload) -> pd.DataFrame:
    """Tidy DataFrame (config, seq_len, part, bytes) of training activation memory under w (its batch, precision,
    attention, checkpointing and device; each of seq_lens replaces its seq_len), exact ints.

    cfgs: a ModelConfig, a list of them or a dict name -> ModelConfig. part is "quadratic",
    "linear" or "total". Vectorized over seq_len with numpy int64, falling back to Python ints
    (object dtype) when a value could overflow int64.
    """
    import pandas as pd

    batch_size, dtype, attention, checkpointing, device = (w.batch_size, w.forward_dtype, w.attention,
                                                           w.checkpointing, w.device)
    items = _config_items(cfgs)
    S = [int(s) for s in seq_lens]
    if not S:
        raise ValueError("seq_lens must not be empty")
    _check_modes(dtype, attention, device)
    names: list[str] = []
    values: list[int] = []
    for name, cfg in items:
        for s in (min(S), max(S)):
            _check_sizes(cfg, batch_size, s)
        q, lin = _sweep_parts(_terms(cfg, dtype, attention, device, checkpointing), S, batch_size)
        names += [name] * (3 * len(S))
        values += q + lin + [a + b for a, b in zip(q, lin, strict=True)]
    n = len(S)
    parts = ["quadratic"] * n + ["linear"] * n + ["total"] * n
    return pd.DataFrame({"config": names, "seq_len": S * 3 * len(items), "part": parts * len(items),
                         "bytes": pd.Series(values, dtype=object)})


# ---- training=False: peak working memory of a no_grad forward ---------------------------------------
def _encoder_steps(f: Infer, ops: Inference, cfg: ModelConfig, x: int, emb: int) -> int:
    """BertEncoder loop / AlbertTransformer -> AlbertLayerGroup loops. Steps 0 and 1, then the last step; the steps
    between repeat step 1's allocations, only adding cached weight copies. Inside a step the same holds for a
    group's inner layers: 0, 1 and the last are replayed, the ones between only add their cached copies (each
    snapshot of a skipped layer is one of layer 1's plus fewer cached copies than the last layer holds, so the
    last layer's snapshots are at least as large at every (B, S))."""
    L, inner = cfg.num_layers, cfg.inner_group_num
    for i in _replayed(L):
        if i == L - 1 and L > 3:
            _skipped_casts(f, ops, cfg, (L - 1) * inner - 1)  # steps 2..L-2
        g_in = h = x
        for kk in _replayed(inner):
            if kk == inner - 1 and inner > 3:
                _skipped_casts(f, ops, cfg, i * inner + inner - 2)  # this step's inner layers 2..inner-2
            out = ops.infer_layer(f, cfg, h, i * inner + kk)
            if h != g_in:
                f.free(h)  # AlbertLayerGroup rebinds hidden_states
            h = out
        if g_in != emb:
            f.free(g_in)  # the encoder rebinds hidden_states
        x = h
    return x


def _replayed(n: int) -> list[int]:
    """The loop indexes replayed of n: all up to 3, else 0, 1 and the last (the others repeat 1's allocations)."""
    return list(range(n)) if n <= 3 else [0, 1, n - 1]


def _skipped_casts(f: Infer, ops: Inference, cfg: ModelConfig, last: int) -> None:
    """Autocast casts cached by the layer applications not replayed, up to application `last`: a constant, alive
    from then on (the stored copies they use are contiguous, after those already cast)."""
    if f.amp is None:  # without autocast nothing is cast
        return
    for sub, per_copy in ops.cast_sizes(cfg).items():
        stop = stored_index(cfg, sub, last) + 1
        if stop > f.hi[sub]:
            f.new((sz(one=(stop - f.hi[sub]) * per_copy), f.amp))
            f.hi[sub] = stop


def _inference_snapshots(cfg: ModelConfig, dtype: str, attention: str, device: str, copy_qkv: bool,
                         copy_ctx: bool) -> tuple[tuple[int, ...], ...]:
    """Replays HF's eval forward under torch.no_grad (liveness.py): every candidate peak's coefficients."""
    ops = family_ops(cfg)
    if not isinstance(ops, Inference):
        raise ConfigError([f"the inference peak (training=False) is not modelled for family '{cfg.family}' yet: "
                           "when its code frees each tensor is not replayed, so no number is given; "
                           "use training=True (bytes saved for backward), which is modelled"])
    f = Infer(cfg, dtype, attention, device, copy_qkv, copy_ctx)
    emb, x = ops.infer_embeddings(f, cfg)
    x = _encoder_steps(f, ops, cfg, x, emb)
    ops.infer_pooler(f, cfg, x)
    return tuple(f.m.snapshots)


def inference_peak(cfg: ModelConfig, *, batch_size: int, seq_len: int, dtype: str = "float32",
                   attention: str = "eager", device: str = DEFAULT_DEVICE) -> tuple[int, int]:
    """(peak bytes, of which seq_len² bytes) of a torch.no_grad eval forward beyond the weights.

    Peak, over the forward, of the bytes of tensors it creates that are alive at once (outputs
    included); measured by measure.peak_live_bytes. Under autocast the cached 16-bit weight copies
    count too (they live until the forward ends).
    """
    _check_sizes(cfg, batch_size, seq_len)
    _check_modes(dtype, attention, device)
    B, S = batch_size, seq_len
    copy_qkv = B > 1 and S > 1 and cfg.num_heads > 1  # torch.matmul copies Q, K^T, V only then
    copy_ctx = S > 1 and cfg.num_heads > 1
    key = ("inference", cfg, dtype, attention, device, copy_qkv, copy_ctx)
    snaps = _cached(key, lambda: _inference_snapshots(cfg, dtype, attention, device, copy_qkv, copy_ctx))
    best, best_q = -1, 0
    for c in snaps:
        v = evaluate(c, B, S)
        if v > best:
            best, best_q = v, quadratic(c, B, S)
    return best, best_q
