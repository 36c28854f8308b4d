"""The graph a training forward is recorded on, for the backward replay (backward.py): storages, tensors, autograd
nodes with their saved tensors and backward formulas, checkpointed regions, and the Graph whose ops record them
(each a differentiable op of the forward, derivatives.yaml's formula for its backward).

Sizes are concrete ints at (batch, seq_len). No torch here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from ..config import ModelConfig
from ..replay.symbolic import BYTES, F32, split_dtype

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
        self.edges: dict[Node, int] = {}  # how many gradients each node of the graph gets (run_backward)

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
        to the input's dtype), after the node's apply has returned (see settle). A parameter used more than once
        (ALBERT's shared layers) has its gradients summed in its AccumulateGrad's InputBuffer first: each one a
        temporary, the last sum its .grad (backward._send)."""
        fn = t.fn
        first = fn is not None and fn.param is not None and fn.param not in self.grads and self.edges.get(fn, 1) == 1
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
        if b is None:  # mm(x, W^T): its gradients go on to x, then W
            return self.op("MmBackward0", [x, W], [(rows * n_out, out_dt)], saved, _linear_formula)[0]
        # addmm(bias, x, W^T): its gradients go on in the inputs' order, bias first (torch/csrc/autograd/engine.cpp
        # evaluate_function adds each output to its next node's InputBuffer in next_edges order): a shared bias's
        # second gradient is summed (old + new, both freed) before the weight's (ALBERT's shared layers)
        return self.op("AddmmBackward0", [b, x, W], [(rows * n_out, out_dt)], saved, _linear_formula)[0]

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


def _linear_formula(e: Engine, n: Node, g: list[Storage | None]) -> list[Storage | None]:
    """MmBackward0 (inputs x, W) or AddmmBackward0 (inputs bias, x, W): the outputs in the inputs' order."""
    *bias, x, W = n.inputs
    gx = e.grad_for(x) if x is not None else None  # mm_mat1_backward: grad.mm(W)
    gW = e.grad_for(W) if W is not None else None  # mm_mat2_backward: x^T.mm(grad), (out, in)
    if not bias:
        return [gx, gW]
    b = bias[0]
    gb = e.grad_for(b, late=True) if b is not None else None  # grad itself, summed by validate_outputs' sum_to
    return [gb, gx, gW]


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
