"""The training step's backward, replayed op by op: what autograd allocates and frees, and when.

step.step_peak's backward candidate. A forward is recorded as autograd would record it (a node per
differentiable op, with its sequence number, the tensors it saves and the inputs it sends gradients to);
then torch/csrc/autograd/engine.cpp's single-threaded CPU loop is replayed on it:

* the ready queue runs the ready node with the highest sequence number first (ReadyQueue's CompareNodeTaskTime);
  AccumulateGrad nodes have sequence number UINT64_MAX (torch/csrc/autograd/functions/accumulate_grad.h),
  so a parameter's gradient is stored as soon as it exists;
* a node runs (call_function: its backward formula allocates its outputs, derivatives.yaml), then its input
  gradients are dropped, then its saved tensors are released (Node::release_variables, retain_graph=False),
  then each output goes to the next node's InputBuffer; a second gradient for the same slot is added out of
  place (InputBuffer::accumulate: old + new, both freed), and validate_outputs casts a gradient to its input's
  dtype first (a new tensor: the residual adds under autocast);
* AccumulateGrad steals the first gradient of a parameter (set_to_none: p.grad is None at step 2) and adds
  later ones in place (ALBERT's shared layers), freeing them.

Sizes are concrete ints at (batch, seq_len). No torch here.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from ..config import ModelConfig
from ..families import family
from .symbolic import BYTES, F32, split_dtype

SEQ_MAX = 1 << 64  # AccumulateGrad's sequence_nr: UINT64_MAX (accumulate_grad.h)


class Storage:
    """One storage: its bytes, the holders that keep it alive and its engine category."""

    __slots__ = ("nbytes", "refs", "cat", "persistent", "label")

    def __init__(self, nbytes: int, cat: str, label: str, persistent: bool = False):
        self.nbytes, self.refs, self.cat, self.persistent, self.label = nbytes, 0, cat, persistent, label


@dataclass(eq=False)
class T:
    """A tensor of the forward: its storage, elements, dtype and the node that made it (None for a leaf)."""

    st: Storage
    numel: int
    dtype: str
    fn: Node | None = None
    slot: int = 0  # which output of fn

    @property
    def nbytes(self) -> int:
        return self.numel * BYTES[self.dtype]


Formula = Callable[["Engine", "Node", list["Storage | None"]], list["Storage | None"]]
Adapt = Callable[["Graph", T, str, int, int, bool, "int | None"], "T | None"]  # (g, x, key, in, out, bias, rows)


@dataclass(eq=False)
class Node:
    seq: int
    name: str
    inputs: list[T | None]  # the forward inputs gradients go to (None: needs none)
    saved: list[Storage]
    formula: Formula
    outputs: int = 1
    param: object = None  # AccumulateGrad: the parameter's key
    out_dtype: str = F32
    region: int | None = None  # the checkpointed layer whose forward made it
    packed: bool = False  # inside a checkpointed region: it saved something (a parameter too: a holder)
    clone: bool = False  # AccumulateGrad whose gradient arrives transposed: copied (clone_obey_contract), not stolen


@dataclass(eq=False)
class Region:
    """One torch.utils.checkpoint(use_reentrant=False) call: its input (kept by _NoopSaveInputs), the storages
    its nodes save (recomputed in backward), the locals alive when recomputation stops, autocast's casts."""

    input: Storage
    saves: dict[int, Storage] = field(default_factory=dict)
    refs: dict[int, int] = field(default_factory=dict)
    alive: list[T] = field(default_factory=list)
    casts: list[T] = field(default_factory=list)
    cache: dict[str, T] = field(default_factory=dict)  # its forward's autocast casts by parameter key
    points: list[tuple[list[int], list[T]]] = field(default_factory=list)  # (saves so far, locals) in order
    extra: list[Storage] = field(default_factory=list)  # more inputs its frame keeps (backward_deberta.py)
    packs: int = 0  # tensors packed so far (parameters too: every saved tensor gets a holder)
    marks: list[int] = field(default_factory=list)  # packs at each of `points`
    fresh: set[int] = field(default_factory=set)  # the outputs of the op of the last pack, if it saved inputs only
    pending: int = 0  # its nodes that packed a tensor, still to run
    done: bool = False

    def __lt__(self, other: Node) -> bool:  # heapq ties: never compared meaningfully
        return id(self) < id(other)


@dataclass
class Peak:
    total: int
    at: dict[str, int]
    where: str


class Engine:
    """The live bytes of one backward by category; the peak and where it happened."""

    def __init__(self, base: dict[str, int]):
        self.at = dict(base)
        self.best = Peak(sum(base.values()), dict(base), "backward start")
        self.where = ""
        self.grads: dict[object, Storage] = {}  # parameter key -> its .grad
        self.pending: list[Storage] = []  # validate_outputs' gradients, made once apply returns (settle)

    def _observe(self) -> None:
        total = sum(self.at.values())
        if total > self.best.total:
            self.best = Peak(total, dict(self.at), self.where)

    def alloc(self, nbytes: int, cat: str = "temporaries") -> Storage:
        st = Storage(nbytes, cat, self.where)
        st.refs = 1
        self.at[cat] += nbytes
        self._observe()
        return st

    def revive(self, st: Storage, refs: int) -> None:
        """A saved storage recomputed (checkpointing): alive again, held by `refs` nodes more (a view of a
        storage still alive, the checkpointed input, adds no bytes)."""
        if st.refs > 0:
            st.refs += refs
            return
        st.refs = refs
        self.at[st.cat] += st.nbytes
        self._observe()

    def grad_for(self, t: T, late: bool = False) -> Storage:
        """A new gradient for input t: counted as a gradient from birth when it will become p.grad (the engine
        names storages by what they end as). late: made by validate_outputs (a broadcast input's sum_to, a cast
        to the input's dtype), after the node's apply has returned (see settle)."""
        fn = t.fn
        first = fn is not None and fn.param is not None and fn.param not in self.grads
        cat = "gradients" if first else "temporaries"
        if not late:
            return self.alloc(t.nbytes, cat)
        st = Storage(t.nbytes, cat, self.where)
        st.refs = 1
        self.pending.append(st)
        return st

    def settle(self) -> None:
        """validate_outputs (torch/csrc/autograd/engine.cpp call_function): the late gradients come to exist."""
        for st in self.pending:
            self.at[st.cat] += st.nbytes
            self._observe()
        self.pending = []

    def ref(self, st: Storage) -> Storage:
        st.refs += 1
        return st

    def unref(self, st: Storage | None) -> None:
        if st is None or st.persistent:
            return
        st.refs -= 1
        if st.refs == 0:
            self.at[st.cat] -= st.nbytes


class Graph:
    """The forward, recorded as autograd records it: nodes with sequence numbers, saved storages."""

    def __init__(self, cfg: ModelConfig, dtype: str, B: int, S: int, trainable: Callable[[str], bool],
                 checkpointing: bool = False):
        self.cfg, self.B, self.S, self.checkpointing = cfg, B, S, checkpointing
        self.md, self.amp = split_dtype(dtype)
        self.c = self.amp or self.md  # dtype of matmul-like outputs
        self._seq = itertools.count()
        self.params: dict[str, T] = {}
        self.cast_cache: dict[str, T] = {}  # autocast's weight cache (leaf tensors that require grad)
        self.trainable = trainable
        self.saved: dict[int, Storage] = {}  # every saved storage once
        self.regions: list[Region] = []
        self.held: list[Storage] = []  # storages alive through backward beyond the saved ones
        self.last_input: T | None = None
        self.last_casts: list[T] = []  # the last Linear's autocast casts of its bias and weight
        self.ctx: tuple[list[T], list[T] | None] | None = None  # while a layer's next Linear runs: the layer's
        # locals and the callers' tensors (point's `held`), for the moments inside a LoRA Linear
        self.attn_weights: T | None = None  # eager attention's second output
        self.last_stats: list[T] = []  # the last LayerNorm's mean and rstd
        self.last_noise: T | None = None  # the last dropout's noise (input * noise)
        self.region: int | None = None
        self.moments: list[tuple[str, int]] = []  # forward moments: (name, bytes alive beyond the persistent)
        self.adapt: Adapt | None = None  # peft LoRA's adapted Linears (backward_lora.py)

    def moment(self, name: str, alive: list[T]) -> None:
        """A forward moment: every storage saved so far, the tensors Python holds (`alive`) that are not saved,
        and autocast's cached casts that no op saved (biases; weights whose Linear input needs no gradient),
        freed when autocast's cache clears at its exit."""
        extra: dict[int, int] = {}
        for t in alive + list(self.cast_cache.values()):
            if id(t.st) not in self.saved and not t.st.persistent:
                extra[id(t.st)] = t.st.nbytes
        self.moments.append((name, self.saved_bytes() + sum(extra.values())))

    # ---- tensors ------------------------------------------------------------------------------------------
    def persistent(self, numel: int, dtype: str, label: str) -> T:
        """Input ids, buffers: alive all step, never freed by the backward."""
        return T(Storage(numel * BYTES[dtype], "input", label, True), numel, dtype)

    def param(self, key: str, numel: int) -> T:
        """A parameter (one tensor per key: ALBERT's shared layers reuse it): a leaf with AccumulateGrad."""
        p = self.params.get(key)
        if p is None:
            st = Storage(numel * BYTES[self.md], "parameters", key, True)
            p = T(st, numel, self.md)
            if self.trainable(key):
                p.fn = Node(SEQ_MAX, f"AccumulateGrad({key})", [], [], _accumulate, param=key)
            self.params[key] = p
        return p

    def new(self, numel: int, dtype: str, label: str = "") -> T:
        return T(Storage(numel * BYTES[dtype], "saved activations", label), numel, dtype)

    def view(self, t: T, numel: int | None = None) -> T:
        """A view: the same storage and autograd history (views' backward formulas allocate nothing here)."""
        return T(t.st, t.numel if numel is None else numel, t.dtype, t.fn, t.slot)

    def op(self, name: str, inputs: list[T | None], outs: list[tuple[int, str]], saved: list[T],
           formula: Formula) -> list[T]:
        """A differentiable op: a node when any input needs a gradient (compute_requires_grad)."""
        ins = [t if t is not None and t.fn is not None else None for t in inputs]
        results = [self.new(n, d, name) for n, d in outs]
        if not any(ins):
            return results
        node = Node(next(self._seq), name, ins, [], formula, outputs=len(outs), out_dtype=outs[0][1],
                    region=self.region)
        for t in saved:
            self.keep(node, t.st)
        if saved and self.region is not None:  # inputs are saved (packed) before the op runs: not its outputs
            self.regions[self.region].fresh = {id(r.st) for r in results}
        for i, r in enumerate(results):
            r.fn, r.slot = node, i
        return results

    def keep(self, node: Node, st: Storage) -> None:
        """node saves st: kept for backward, or, inside a checkpointed region, packed into a holder
        (torch/utils/checkpoint.py _checkpoint_hook) and recomputed when backward first unpacks it. A parameter
        is packed too: it keeps nothing alive, but its node starts the recomputation and holds the frame, and
        the recomputation stops only after it (_StopRecomputationError when every holder is refilled)."""
        if self.region is not None:  # _checkpoint_hook packs every saved tensor, a parameter too
            r = self.regions[self.region]
            r.packs += 1
            r.fresh = set()
            if not node.packed:
                node.packed = True
                r.pending += 1
        if st.persistent or st in node.saved:
            return
        node.saved.append(st)
        if self.region is None:
            st.refs += 1
            self.saved.setdefault(id(st), st)
        else:
            r = self.regions[self.region]
            r.saves.setdefault(id(st), st)
            r.refs[id(st)] = r.refs.get(id(st), 0) + 1

    def point(self, name: str, alive: list[T], held: list[T] | None) -> None:
        """A moment of a layer's forward: a forward moment where the callers' tensors (`held`) are known (the
        last layer), and inside a checkpointed region a moment of its recomputation (saves so far, locals)."""
        if held is not None:
            self.moment(name, alive + held)
        if self.region is not None:
            r = self.regions[self.region]
            r.points.append((list(r.saves), alive + list(r.casts)))
            r.marks.append(r.packs)

    def begin_region(self, x: T) -> None:
        """checkpoint(layer, x): _NoopSaveInputs saves x (ctx.save_for_backward) for the recomputation."""
        x.st.refs += 1
        self.saved.setdefault(id(x.st), x.st)
        self.regions.append(Region(x.st))
        self.region = len(self.regions) - 1

    def end_region(self, alive: list[T]) -> None:
        """The layer's forward returned; `alive`: its locals when the recomputation stops (the last save is
        the output LayerNorm's rstd: _StopRecomputationError right after it)."""
        if self.region is not None:
            self.regions[self.region].alive = alive
        self.region = None

    def saved_bytes(self) -> int:
        return sum(st.nbytes for st in self.saved.values())

    # ---- ops (each formula allocates what its derivatives.yaml entry computes) ----------------------------
    def cast(self, x: T, dtype: str) -> T:
        """x.to(dtype) (aten::_to_copy): ToCopyBackward0 returns grad.to(x's dtype)."""
        if x.dtype == dtype:
            return x
        if x.st.persistent and x.fn is None:  # a frozen parameter's cast: a new tensor, no node
            return self.new(x.numel, dtype, "cast")
        return self.op("ToCopyBackward0", [x], [(x.numel, dtype)], [], _grads_like)[0]

    def embedding(self, idx: T, key: str, rows: int, width: int, numel: int) -> T:
        """nn.Embedding `key` (rows x width) looked up at idx (numel output elements): EmbeddingBackward0 saves
        the indices; a peft lora.Embedding where adapted (backward_lora.lora_embedding, through self.adapt)."""
        if self.adapt is not None:
            adapted = self.adapt(self, idx, key, rows, width, False, numel // width)
            if adapted is not None:
                return adapted
        W = self.param(f"{key}.weight", rows * width)
        return self.op("EmbeddingBackward0", [idx, W], [(numel, self.md)], [idx], _grads_like)[0]

    def linear(self, x: T, key: str, n_in: int, n_out: int, bias: bool = True, rows: int | None = None,
               wkey: str | None = None, bkey: str | None = None) -> T:
        """nn.Linear: addmm(bias, x, W^T) (mm without a bias); autocast casts bias, weight, then input (the C++
        arguments of cached_cast evaluate right to left), the weight casts cached per forward. wkey/bkey: a tied
        parameter's own name (an MLM decoder's weight is the word-embedding table)."""
        if self.adapt is not None and wkey is None:  # a peft lora.Linear (backward_lora.lora_linear)
            adapted = self.adapt(self, x, key, n_in, n_out, bias, rows)
            if adapted is not None:
                return adapted
        rows = x.numel // n_in if rows is None else rows
        wkey, bkey = wkey or f"{key}.weight", bkey or f"{key}.bias"
        W = self.param(wkey, n_in * n_out)
        b = self.param(bkey, n_out) if bias else None
        if self.amp:
            b = self._cached(bkey, b) if b is not None else None
            W = self._cached(wkey, W)
            x = self.cast(x, self.amp)
        self.last_input = x  # the addmm's input (autocast's cast of it: a temporary unless saved)
        self.last_casts = [t for t in (b, W) if t is not None]  # a frozen one's: a temporary unless saved
        out_dt = self.amp or x.dtype
        saved = ([x] if W.fn is not None else []) + ([W] if x.fn is not None else [])  # each for the other's grad
        name = "AddmmBackward0" if b is not None else "MmBackward0"
        return self.op(name, [x, W, b], [(rows * n_out, out_dt)], saved, _linear_formula(rows * n_in))[0]

    def _cached(self, key: str, p: T) -> T:
        """autocast's cached_cast: only a leaf that requires grad is cached (autocast_mode.cpp can_try_cache);
        a frozen weight is cast again at every use, a temporary unless its op saves it."""
        if p.fn is None:
            return self.cast(p, self.amp or p.dtype)
        if self.region is not None:  # recomputation runs under its own autocast: a fresh cache, per region
            reg = self.regions[self.region]  # (a weight used twice in one layer, DeBERTa's share_att_key: one cast)
            if key not in reg.cache:
                reg.cache[key] = self.cast(p, self.amp or p.dtype)
                reg.casts.append(reg.cache[key])
                self.cast_cache.setdefault(key, reg.cache[key])
            return reg.cache[key]
        if key not in self.cast_cache:
            self.cast_cache[key] = self.cast(p, self.amp or p.dtype)
        return self.cast_cache[key]

    def linear_temps(self) -> list[T]:
        """What the last Linear's call holds beside its output: its input (autocast's cast of it) and the casts of
        its weight and bias (each a temporary unless saved or cached)."""
        return ([self.last_input] if self.last_input is not None else []) + self.last_casts

    def layer_norm(self, x: T, key: str, n: int) -> T:
        """aten::native_layer_norm saves input, mean, rstd (float32 on the CPU when input and weight dtypes
        differ); native_layer_norm_backward allocates grad_input, grad_weight, grad_bias."""
        W, b = self.param(f"{key}.weight", n), self.param(f"{key}.bias", n)
        rows = x.numel // n
        stat = F32 if x.dtype != self.md else x.dtype
        mean, rstd = self.new(rows, stat), self.new(rows, stat)
        self.last_stats = [mean, rstd]
        out = self.op("NativeLayerNormBackward0", [x, W, b], [(x.numel, x.dtype)], [x, mean, rstd],
                      _grads_like)[0]
        return out

    def dropout(self, x: T, p: float) -> T:
        """CPU at::dropout in training: x * (bernoulli noise / (1 - p)); MulBackward0 saves the noise."""
        if p == 0:
            return x
        noise = self.last_noise = self.new(x.numel, x.dtype, "dropout noise")
        return self.op("MulBackward0", [x, None], [(x.numel, x.dtype)], [noise], _grads_like)[0]

    def add(self, a: T, b: T) -> T:
        """a + b: AddBackward0 passes the gradient to both (a broadcast input gets grad.sum_to_size)."""
        dt = a.dtype if a.dtype == b.dtype else F32
        return self.op("AddBackward0", [a, b], [(max(a.numel, b.numel), dt)], [], _add_formula)[0]

    def unary(self, x: T, name: str, saves_result: bool, dtype: str | None = None, temps: int = 0) -> T:
        """An elementwise op whose backward allocates one input-sized gradient (gelu, tanh, softmax ...), after
        `temps` input-sized temporaries of its formula that live until the gradient exists."""
        formula = _with_temps(temps) if temps else _grads_like
        res = self.op(name, [x], [(x.numel, dtype or x.dtype)], [] if saves_result else [x], formula)[0]
        if saves_result and res.fn is not None:  # the node saves its own result
            self.keep(res.fn, res.st)
        return res

    def plus(self, x: T) -> T:
        """1.0 + x (AddBackward1): the gradient passes through."""
        return self.op("AddBackward1", [x], [(x.numel, x.dtype)], [], _pass)[0]

    def mul(self, a: T, b: T) -> T:
        """a * b, both needing gradients: MulBackward0 saves both; grad * b, then grad * a."""
        saved = ([a] if b.fn is not None else []) + ([b] if a.fn is not None else [])  # each for the other's grad
        return self.op("MulBackward0", [a, b], [(a.numel, a.dtype if a.dtype == b.dtype else F32)], saved,
                       _grads_like)[0]

    def scalar(self, x: T) -> T:
        """x * c (MulBackward1): grad * c, a new tensor."""
        return self.op("MulBackward1", [x], [(x.numel, x.dtype)], [], _grads_like)[0]

    def bmm(self, a: T, b: T, out_numel: int, dt: str) -> T:
        """bmm(a, b) saves each for the other's gradient; BmmBackward0 allocates grad.bmm(b^T), then a^T.bmm(grad)."""
        saved = ([a] if b.fn is not None else []) + ([b] if a.fn is not None else [])
        return self.op("BmmBackward0", [a, b], [(out_numel, dt)], saved, _grads_like)[0]

    def copy(self, x: T, copies: bool, grad_copies: bool, dtype: str | None = None) -> T:
        """A reshape/contiguous of an attention view: a copy when the view is not contiguous (copies), whose
        backward (view backward's reshape of a transposed gradient) copies when grad_copies."""
        if not copies:
            x = self.view(x)
        else:
            x = self.op("CloneBackward0", [x], [(x.numel, dtype or x.dtype)], [], _pass)[0]
        if grad_copies:  # ViewBackward0 / UnsafeViewBackward0: grad.reshape(...) of a non-contiguous gradient
            x = self.op("ViewBackward0", [x], [(x.numel, x.dtype)], [], _grads_like)[0]
            x = self.view(x)
        return x

    def sum_mean(self, x: T) -> T:
        """x.float().mean(): ToCopyBackward0 where x is 16-bit, MeanBackward0 (grad.expand(...) / numel)."""
        x = self.cast(x, F32)
        return self.op("MeanBackward0", [x], [(1, F32)], [], _grads_like)[0]


# ---- backward formulas --------------------------------------------------------------------------------------
def _grads_like(e: Engine, n: Node, g: list[Storage | None]) -> list[Storage | None]:
    """One new gradient per input that needs one, in input order, of the input's size and dtype."""
    return [e.grad_for(t) if t is not None else None for t in n.inputs]


def _with_temps(k: int) -> Formula:
    def f(e: Engine, n: Node, g: list[Storage | None]) -> list[Storage | None]:
        t = n.inputs[0]
        assert t is not None
        tmp = [e.alloc(t.nbytes) for _ in range(k)]  # C++ temporaries of one full-expression
        out = e.alloc(t.nbytes)
        for st in tmp:
            e.unref(st)
        return [out]
    return f


def _pass(e: Engine, n: Node, g: list[Storage | None]) -> list[Storage | None]:
    """The gradient itself (a view or a clone's backward)."""
    return [e.ref(g[0]) if t is not None and g[0] is not None else None for t in n.inputs]


def _add_formula(e: Engine, n: Node, g: list[Storage | None]) -> list[Storage | None]:
    out: list[Storage | None] = []
    numel = max(t.numel for t in n.inputs if t is not None)
    for t in n.inputs:
        if t is None or g[0] is None:
            out.append(None)
        elif t.numel != numel or t.dtype != n.out_dtype:  # validate_outputs: sum_to of a broadcast input, or the
            out.append(e.grad_for(t, late=True))  # cast of a gradient to its input's dtype
        else:
            out.append(e.ref(g[0]))
    return out


def _linear_formula(x_bytes_numel: int) -> Formula:
    def f(e: Engine, n: Node, g: list[Storage | None]) -> list[Storage | None]:
        x, W, b = n.inputs
        gx = e.grad_for(x) if x is not None else None  # mm_mat1_backward: grad.mm(W)
        gW = e.grad_for(W) if W is not None else None  # mm_mat2_backward: x^T.mm(grad), (out, in)
        gb = e.grad_for(b, late=True) if b is not None else None  # grad itself, summed by validate_outputs' sum_to
        return [gx, gW, gb]
    return f


def _accumulate(e: Engine, n: Node, g: list[Storage | None]) -> list[Storage | None]:
    """AccumulateGrad: the first gradient becomes p.grad (stolen), a later one is added in place."""
    st = g[0]
    if st is None:
        return []
    if n.param in e.grads:
        return []  # variable.grad += new_grad: the new one is dropped with the inputs
    if n.clone:  # a transposed gradient breaks the layout contract: p.grad a contiguous copy, the gradient dropped
        e.grads[n.param] = e.alloc(st.nbytes, "gradients")
        return []
    if st.cat != "gradients":
        e.at[st.cat] -= st.nbytes
        st.cat = "gradients"
        e.at["gradients"] += st.nbytes
    e.grads[n.param] = e.ref(st)  # p.grad holds it
    return []


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
    if name == "gelu_new":  # 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*pow(x,3))))
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
        t = g.plus(t0)
        pt("1 + tanh", a, t0, t)
        y = g.mul(a, t)
        pt("output", a, t, y)
        return y
    if name == "gelu_python":  # x*0.5*(1+erf(x/sqrt(2)))
        a = g.scalar(x)
        pt("x * 0.5", a)
        d = g.scalar(x)
        pt("x / sqrt(2)", a, d)
        e0 = g.unary(d, "ErfBackward0", False, temps=4)  # 2/sqrt(pi) * exp(-(self.pow(2))) * grad
        pt("erf", a, d, e0)
        e = g.plus(e0)
        pt("1 + erf", a, e0, e)
        y = g.mul(a, e)
        pt("output", a, e, y)
        return y
    if name == "gelu_fast":  # 0.5*x*(1+tanh(x*0.7978845608*(1+0.044715*x*x)))
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
        t = g.plus(t0)
        pt("1 + tanh", a, t0, t)
        y = g.mul(a, t)
        pt("output", a, t, y)
        return y
    if name == "quick_gelu":  # x * sigmoid(1.702 * x)
        s0 = g.scalar(x)
        pt("1.702 * x", s0)
        sg = g.unary(s0, "SigmoidBackward0", True)
        pt("sigmoid", s0, sg)
        y = g.mul(x, sg)
        pt("output", sg, y)
        return y
    raise ValueError(f"no backward model for hidden_act {name!r}")


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


def _bert_layer(g: Graph, cfg: ModelConfig, x: T, pre: str, names: dict[str, str], ffn_dropout: bool,
                residual_first: bool, held: list[T] | None = None, sdpa: bool = False,
                attn_dropout: bool = True) -> T:
    """BertLayer (RobertaLayer, ElectraLayer), AlbertLayer or DistilBERT's TransformerBlock: Q/K/V, attention,
    dense, dropout, LayerNorm of the residual sum, FFN (dropout in BERT's), LayerNorm.

    The moments (recorded where `held`, the callers' tensors, is known: the last layer) follow each op: its
    inputs, its output and its temporaries (a Linear's autocast casts, a LayerNorm's mean and rstd, a dropout's
    noise), with what Python still holds then: the layer's input x, the attention weights (the layer's `_`),
    BertAttention's context through BertSelfOutput, AlbertAttention's q, k, v through its dense and LayerNorm,
    DistilBERT's q, k, v and context through out_lin, BertLayer's intermediate output through BertOutput; a local
    rebound is freed once the new value exists. Where no op of the layer records a node (every layer frozen)
    nothing is saved and these moments are the frozen forward's working set, the same in every frozen layer."""
    H, I, S, A, B = cfg.hidden_dim, cfg.intermediate_dim, g.S, cfg.num_heads, g.B
    bert = names is _BERT_NAMES
    if g.checkpointing:  # GradientCheckpointingLayer: checkpoint(layer.__call__, x, use_reentrant=False)
        g.begin_region(x)

    def pt(what: str, *ts: T) -> None:
        g.point(f"forward: the last layer's {what}", [*ts, x], held)

    def lin(what: str, out: T, *ts: T) -> None:  # a Linear's output with its input (or its cast) and casts
        pt(what, out, *g.linear_temps(), *ts)

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
    g.ctx = [a, *w, x], held
    h = g.linear(a, pre + names["ffn"], H, I)
    lin("FFN", h, a, *w)
    act = h = _activation(g, h, cfg.hidden_act, lambda what, ts: pt(f"FFN activation: {what}", *ts, a, *w))
    inter = [h] if bert else []  # BertLayer.feed_forward_chunk holds intermediate_output
    g.ctx = [act, a, *w, x], held
    h = g.linear(h, pre + names["ffn_out"], I, H)
    g.ctx = None
    lin("FFN output", h, act, a, *w)
    o = h
    if ffn_dropout:
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
# Step.layer -> (module names, dropout after the FFN, residual added as x + a, dropout on the attention output)
_LAYERS = {"BertLayer": (_BERT_NAMES, True, False, True), "AlbertLayerGroup": (_ALBERT_NAMES, False, True, True),
           "TransformerBlock": (_DISTILBERT_NAMES, True, False, False)}


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


def bert_style_forward(g: Graph, cfg: ModelConfig, attention: str = "eager", head: str = "none",
                       num_labels: int = 2) -> T:
    """BertModel / RobertaModel / ElectraModel / AlbertModel (input_ids only) and engine.loss_of's loss."""
    B, S, H = g.B, g.S, cfg.hidden_dim
    fam = family(cfg.family)
    st = fam.STEP
    ids = g.persistent(B * S, "int64", "input_ids")
    types = (B * S if st.positions_from_ids else S) if cfg.type_vocab_size else None  # the token_type_ids gather
    x = _embeddings(g, cfg, ids, st.positions_from_ids, types, cfg.max_position + cfg.position_offset)
    emb = x  # BertModel's embedding_output: alive until the model returns
    if st.projection is not None and any(m.path == st.projection for m in fam.other_modules(cfg)):
        x = g.linear(x, st.projection, cfg.embedding_dim, H)  # AlbertModel's E -> H mapping, ElectraModel's project
        if st.projection_rebinds:  # ELECTRA rebinds hidden_states
            emb = x
    L, sdpa = cfg.num_layers, attention == "sdpa"
    names, ffn_dropout, residual_first, attn_dropout = _LAYERS[st.layer]
    flat = cfg if cfg.inner_group_num == 1 or st.layer == "AlbertLayerGroup" else cfg.replace(inner_group_num=1)
    for i in range(L):
        last = i == L - 1
        if st.layer == "AlbertLayerGroup":  # AlbertTransformer: layer step i runs group int(i / (L / G)), all its inner layers
            grp, group_in = int(i / (L / cfg.num_groups)), x
            for kk in range(cfg.inner_group_num):
                held = [emb, group_in] if last and kk == cfg.inner_group_num - 1 else None
                x = _bert_layer(g, cfg, x, fam.layer_prefix(cfg, grp, kk), names, ffn_dropout, residual_first, held,
                                sdpa)
        else:
            x = _bert_layer(g, cfg, x, fam.layer_prefix(flat, i, 0), names, ffn_dropout, residual_first,
                            [emb] if last else None, sdpa, attn_dropout=attn_dropout)
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




def modelled(cfg: ModelConfig, attention: str, checkpointing: bool, mode: str, head: str) -> bool:
    """Whether the op-level replay covers this step (else step.py keeps its lower-bound candidates). LoRA: peft's
    lora.Linear and, on the word embeddings, lora.Embedding (backward_lora.py; step.py leaves out other embedding
    targets), for the BERT-style families.
    DeBERTa-v2: backward_deberta.py (LoRA through the same hook; the MLM head backward._mlm_head). Every layer frozen
    and their input needing no gradient (a linear probe): replayed for the BERT-style families,
    the peak then inside a frozen layer's forward, whose working set _bert_layer's moments follow op by op (nothing
    saved, Python's locals and each op's output; bert-base 16 x 512 mixed bf16 frozen-layers:12 classification:2
    equal to the engine with sdpa and eager, before -48% and -23%) and for DeBERTa-v2 (backward_deberta._attention's
    and _layer's moments op by op; where a relative term reads the trained rel_embeddings the layers record as in
    a trained step: deberta-v3-base 16 x 512 mixed bf16 frozen-layers:12 classification:2 equal to the engine,
    before -90%; 127 tiny linear-probe draws equal to the byte)."""
    st = family(cfg.family).STEP
    return (st.recorder in ("backward", "backward_deberta")  # DeBERTa-v2: backward_deberta.py
            and not (checkpointing and not st.hf_checkpointing)  # HF's AlbertModel cannot checkpoint
            and mode in ("full", "frozen-embeddings", "frozen-layers", "bitfit", "lora"))


def trainable_by_name(names: dict[str, bool]) -> Callable[[str], bool]:
    """A parameter key of the recorded graph (the base model's module path) -> whether it trains, from
    finetune.tensors' names (which may carry a task model's or peft's prefix)."""
    def f(key: str) -> bool:
        mod, _, leaf = key.rpartition(".")
        for k in (key, f"{mod}.base_layer.{leaf}"):  # peft's wrapped module keeps its own under base_layer
            hit = names.get(k)
            if hit is None:
                hit = next((v for n, v in names.items() if n.endswith("." + k)), None)
            if hit is not None:
                return hit
        return True
    return f


def bert_style_peak(cfg: ModelConfig, B: int, S: int, dtype: str, base: dict[str, int],
                    trainable: Callable[[str], bool] = lambda k: True, attention: str = "eager",
                    checkpointing: bool = False, head: str = "none", num_labels: int = 2,
                    adapt: Adapt | None = None) -> tuple[Peak, int]:
    """(the step's activation-side peak from `base`: the forward's moments and the backward replayed; the
    recorded graph's saved bytes). adapt: peft LoRA's adapted Linears (backward_lora.adapt)."""
    g = Graph(cfg, dtype, B, S, trainable, checkpointing)
    g.adapt = adapt
    loss = bert_style_forward(g, cfg, attention, head, num_labels)
    saved = g.saved_bytes()
    start = dict(base)
    start["saved activations"] = start.get("saved activations", 0) + saved
    start["temporaries"] = start.get("temporaries", 0) + 4 + sum(st.nbytes for st in g.held)  # the 0-d loss
    peak = run_backward(g, loss, start)
    base_total = sum(base.values()) + 4 + sum(st.nbytes for st in g.held)
    return with_forward(peak, g.moments, base, base_total - 4), saved  # before the loss exists: no 0-d loss yet


def with_forward(backward_peak: Peak, moments: list[tuple[str, int]], base: dict[str, int], before: int) -> Peak:
    """The step's peak: the first of the forward's moments (`before` bytes besides what each holds, counted as
    saved activations) that reaches the backward's, else the backward's (the engine keeps the first maximum)."""
    best = max(moments, key=lambda m: m[1], default=None)  # max keeps the first of equals
    if best is None or before + best[1] < backward_peak.total:
        return backward_peak
    at = dict(base)
    at["temporaries"] = at.get("temporaries", 0) + before - sum(base.values())  # beyond base: a held leaf
    at["saved activations"] = at.get("saved activations", 0) + best[1]
    return Peak(before + best[1], at, best[0])


# ---- the engine loop ----------------------------------------------------------------------------------------
def _recompute(e: Engine, r: Region) -> None:
    """The checkpointed layer's forward again (torch/utils/checkpoint.py unpack_hook): its saved tensors refilled
    in forward order, its locals alive at each recorded moment (a local saved only later a temporary until then),
    stopping (_StopRecomputationError) at the last saved tensor, when the locals then alive are dropped by the
    unwinding."""
    revived: set[int] = set()
    for keys, alive in [*r.points, (list(r.saves), r.alive + r.casts)]:
        for k in keys:
            if k not in revived:
                revived.add(k)
                e.revive(r.saves[k], r.refs[k])
        tmp: dict[int, Storage] = {}
        for t in alive:  # not (yet) recomputed and not alive already: autocast's unsaved casts, the forward's locals
            if id(t.st) not in revived and t.st.refs == 0 and not t.st.persistent:
                tmp.setdefault(id(t.st), t.st)
        held = [e.alloc(st.nbytes) for st in tmp.values()]
        for st in held:
            e.unref(st)
    r.done = True


def run_backward(graph: Graph, loss: T, base: dict[str, int]) -> Peak:
    """Replay loss.backward() over the recorded graph from the live bytes `base` (all saved storages alive)."""
    e = Engine(base)
    root = loss.fn
    if root is None:
        return e.best
    deps: dict[Node, int] = {}
    seen = {id(root)}
    stack = [root]
    while stack:
        nd = stack.pop()
        for t in nd.inputs:
            if t is None or t.fn is None:
                continue
            deps[t.fn] = deps.get(t.fn, 0) + 1
            if id(t.fn) not in seen:
                seen.add(id(t.fn))
                stack.append(t.fn)
    e.where = "loss"
    ones = e.alloc(4)  # torch.autograd.backward's grad_tensors: ones_like(loss), held until backward returns
    buffers: dict[Node, list[Storage | None]] = {root: [e.ref(ones)]}
    ready: list[tuple[int, int, Node]] = [(-root.seq, 0, root)]
    tie = itertools.count(1)
    while ready:
        _, _, nd = heapq.heappop(ready)
        g = buffers.pop(nd, [None] * nd.outputs)
        e.where = nd.name
        reg = graph.regions[nd.region] if nd.region is not None else None
        if reg is not None and nd.packed and not reg.done:
            e.where = f"{nd.name} (recomputation)"
            _recompute(e, reg)
            e.where = nd.name
        outs = nd.formula(e, nd, g)
        if reg is not None and nd.packed:  # the recomputed tensors apply unpacked (popped from the frame) die as
            for kept in nd.saved:  # it returns, before validate_outputs (torch/utils/checkpoint.py unpack_hook)
                e.unref(kept)
            nd.saved = []
        e.settle()
        for grad in g:  # the node's input gradients die with call_function's inputs
            e.unref(grad)
        for kept in nd.saved:  # release_variables
            e.unref(kept)
        if reg is not None and nd.packed:
            reg.pending -= 1
            if reg.pending == 0:  # the frame (and _NoopSaveInputs' input) dies with its last holder
                e.unref(reg.input)
                for kept in reg.extra:
                    e.unref(kept)
        nd.saved = []
        for t, st in zip(nd.inputs, outs, strict=False):
            if t is None or st is None:
                continue
            nxt = t.fn
            if nxt is None:
                e.unref(st)
                continue
            buf = buffers.setdefault(nxt, [None] * nxt.outputs)
            if buf[t.slot] is None:
                buf[t.slot] = st
            else:  # InputBuffer::accumulate: old + new out of place
                new = e.alloc(st.nbytes)
                e.unref(buf[t.slot])
                e.unref(st)
                buf[t.slot] = new
            deps[nxt] -= 1
            if deps[nxt] == 0:
                heapq.heappush(ready, (-nxt.seq, next(tie), nxt))
    return e.best


__all__ = ["Engine", "Graph", "Node", "Peak", "T", "run_backward", "with_forward"]
