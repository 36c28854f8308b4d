"""The training step's backward, replayed op by op: what autograd allocates and frees, and when.

step.step_peak's backward candidate. A forward is recorded as autograd would record it (a node per
differentiable op, with its sequence number, the tensors it saves and the inputs it sends gradients to);
then torch/csrc/autograd/engine.cpp's single-threaded CPU loop is replayed on it:

* the ready queue runs the ready node with the highest sequence number first (ReadyQueue's CompareNodeTaskTime);
  AccumulateGrad nodes have sequence number UINT64_MAX (torch/csrc/autograd/functions/accumulate_grad.h),
  so a parameter's gradient is stored as soon as it exists;
* a node runs (call_function: its backward formula allocates its outputs, derivatives.yaml), then its input
  gradients are dropped, then its saved tensors are released (Node::release_variables, retain_graph=False),
  then each output goes to the next node's InputBuffer in next_edges order (addmm's: bias, input, weight); a
  second gradient for the same slot is added out of place (InputBuffer::accumulate: old + new, both freed; in
  place only where no dispatch mode runs, which the engine's does: at::isTensorSubclassLike), and
  validate_outputs casts a gradient to its input's dtype first (a new tensor: the residual adds under autocast);
* AccumulateGrad steals the gradient of a parameter (set_to_none: p.grad is None at step 2); a parameter used
  more than once (ALBERT's shared layers) is ready only once every use's gradient has come, their sum made in
  its InputBuffer (temporaries, the last sum its .grad).

Sizes are concrete ints at (batch, seq_len). No torch here.
"""

from __future__ import annotations

import heapq
import importlib
import itertools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ..config import ModelConfig
from ..families import family
from .bert_forward import Encoder, bert_style_forward
from .graph import Adapt, Engine, Graph, Node, Peak, Region, Storage, T

if TYPE_CHECKING:
    from ..workload import Workload


def modelled(cfg: ModelConfig, attention: str, checkpointing: bool, mode: str, head: str) -> bool:
    """Whether the op-level replay covers this step (else peak.py keeps its lower-bound candidates). LoRA: peft's
    lora.Linear and, on the word embeddings, lora.Embedding (backward_lora.py; peak.py leaves out other embedding
    targets), for the BERT-style families.
    DeBERTa-v2: backward_deberta.py (LoRA through the same hook; the MLM head bert_forward._mlm_head). Every layer frozen
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
            # inner layer groups outside ALBERT (the reference encoder's BERT): the recorders run one layer a step
            and (cfg.inner_group_num == 1 or st.layer == "AlbertLayerGroup")
            and mode in ("full", "frozen-embeddings", "frozen-layers", "bitfit", "lora"))


def trainable_by_name(names: Mapping[str, bool]) -> Callable[[str], bool]:
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


def bert_style_peak(cfg: ModelConfig, w: Workload, base: dict[str, int],
                    trainable: Callable[[str], bool] = lambda k: True, adapt: Adapt | None = None) -> tuple[Peak, int]:
    """(the step's activation-side peak from `base`: the forward's moments and the backward replayed; the
    recorded graph's saved bytes). adapt: peft LoRA's adapted Linears (backward_lora.adapt)."""
    g = Graph(cfg, w.forward_dtype, w.batch_size, w.seq_len, trainable, w.checkpointing)
    g.adapt = adapt
    own = family(cfg.family).STEP.encoder  # the family's own encoder recording, a module of this package
    encoder: Encoder | None = importlib.import_module(f"{__package__}.{own}").ENCODER if own else None
    loss = bert_style_forward(g, cfg, w.attention, w.head, w.num_labels, encoder)
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
    deps = _dependencies(root)
    e.edges = dict(deps)
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
        for nxt in _send(e, nd, outs, buffers, deps):
            deps[nxt] -= 1
            if deps[nxt] == 0:
                heapq.heappush(ready, (-nxt.seq, next(tie), nxt))
    return e.best


def _dependencies(root: Node) -> dict[Node, int]:
    """How many gradients each node of the graph below root waits for (the engine's dependencies count)."""
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
    return deps


def _send(e: Engine, nd: Node, outs: list[Storage | None], buffers: dict[Node, list[Storage | None]],
          deps: dict[Node, int]) -> list[Node]:
    """nd's output gradients into the next nodes' InputBuffers (a leaf's is dropped; a second one for the same slot
    is added out of place: InputBuffer::accumulate, old + new); the nodes that got one, in order."""
    got: list[Node] = []
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
        else:  # the last sum for a parameter's AccumulateGrad is what it steals: its .grad (Engine.grad_for)
            last = nxt.param is not None and deps[nxt] - got.count(nxt) == 1
            stolen = last and not nxt.clone and nxt.param not in e.grads
            new = e.alloc(st.nbytes, "gradients" if stolen else "temporaries")
            e.unref(buf[t.slot])
            e.unref(st)
            buf[t.slot] = new
        got.append(nxt)
    return got


__all__ = ["Engine", "Graph", "Node", "Peak", "T", "run_backward", "with_forward"]
