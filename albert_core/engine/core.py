"""The measurement engine: PyTorch runs the real model, on fake tensors or real ones, and we count bytes.

torch and transformers are imported inside the functions, so importing this module is free.

Under `torch._subclasses.fake_tensor.FakeTensorMode` every tensor has a shape, a dtype and a storage
of the right size, but no bytes behind it: the same modeling code, the same aten ops and the same
autograd graph run, so a 3.5B-parameter model is measured by a process that holds only PyTorch's
imports. With `fake=False` the same functions run on real CPU tensors: that is the proof of the
engine (tests/test_engine.py holds the two equal, byte for byte). Fine-tuned models (engine.task_model.build: frozen
parts, BitFit, peft's LoRA) are built on fake tensors too (`fake_build`; tests/test_engine_finetune.py).

One TorchDispatchMode (`LiveStorages`, below autograd, like torch.distributed._tools.mem_tracker)
sees every op's outputs. Each new storage is recorded once with the clock tick it was born at and,
through a weakref finalizer, the tick it was freed at; storages that exist before the run
(parameters, buffers, optimizer state, the input) are named by category. Three measurements:

* `saved`: the bytes of the tensors autograd saves for backward in one training-mode forward
  (torch.autograd.graph.saved_tensors_hooks), parameters excluded, each storage once: what
  albert_core.estimate.activations.activation_memory estimates.
* `inference`: the peak bytes of storages created and alive during one `torch.no_grad()` eval forward
  (weights, buffers and input excluded): what activations.inference_peak estimates.
* `step`: the peak bytes of every live storage on the device during one full training step (the
  second one, so the optimizer state exists): forward, loss, backward, optimizer.step(). What is
  alive at that moment is split into parameters, master weights, buffers, gradients, optimizer state, saved
  activations, temporaries and the input, and the phase it occurs in is named.

The training step (issue 16): the model in train mode (dropout on), input_ids (batch, seq_len); loss =
last_hidden_state.float().mean() (+ the pooler output's mean where the model returns one, no task
head; a task model's logits.float().mean()); the optimizer with its default arguments (AdamW lr=1e-4, SGD lr=1e-3 momentum 0.9, Adafactor
lr=1e-3). Step 1 makes the optimizer state (one optimizer.step() over zero gradients; see step_peak), then
step 2 is measured. CPU
semantics: kernel-internal scratch (MKL, oneDNN) is not a tensor and is not seen; optimizer step
counters (AdamW's `step`, 0-d float32) stay on the host on CUDA (torch/optim/adam.py keeps them on
the CPU unless capturable or fused), so the device peak leaves them out.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from ..choices import MASTER, OPTIMIZERS
from . import dispatch
from .building import (
    _quiet_transformers,
    autocast,
    build_auto,
    by_module,
    cast,
    fake_build,
    forward,
    input_ids,
    loss_of,
    optimizer,
    prepare,
    tensor_mode,
)
from .dispatch import _key, _live_storages, _module_stack, _Rec, _stopped_by
from .types import (
    CATEGORIES,
    DTYPES,
    MEASURES,
    PHASES,
    EngineError,
    Result,
    Run,
    SavedTensor,
    StepPeak,
    relative_error,
    saved_breakdown,
)

# the engine's API, as `engine.X` (its types in types.py, the building in building.py, the dispatch mode in dispatch.py)
__all__ = ["CATEGORIES", "DTYPES", "MASTER", "MEASURES", "OPTIMIZERS", "PHASES", "EngineError", "Result", "Run",
           "SavedTensor", "StepPeak", "autocast", "build_auto", "by_module", "cast", "fake_build", "forward",
           "inference_peak", "input_ids", "loss_of", "measure", "optimizer", "prepare", "relative_error",
           "saved_breakdown", "saved_bytes", "step_peak", "tensor_mode"]


# ---- the three measurements ----------------------------------------------------------------------

def saved_bytes(model: Any, ids: Any, amp: Any = None) -> tuple[int, list[SavedTensor]]:
    """One training-mode forward: (bytes, tensors) autograd saves, parameters excluded, each storage once. Where
    ids' sizes are symbols (engine/trace.py) the bytes are a SymInt: a polynomial in them."""
    import torch

    params = {_key(p) for p in model.parameters()}
    stack, handles = _module_stack(model)
    seen: set[int] = set()
    keep: list[Any] = []  # hold every saved tensor so no storage is freed and its address reused
    out: list[SavedTensor] = []
    total = 0

    def pack(t: Any) -> Any:
        nonlocal total
        k = _key(t)
        keep.append(t)
        if k in params:
            return t
        n = 0 if k in seen else t.untyped_storage().nbytes()
        seen.add(k)
        total += n
        out.append(SavedTensor(stack[-1] if stack else "", tuple(t.shape), str(t.dtype).removeprefix("torch."), n))
        return None  # not t: no backward reads it, and a tensor saved by its own grad_fn (exp, tanh, ...) would
        # make a cycle through C++ (t -> grad_fn -> saved t) that Python's gc cannot see, keeping the whole forward's
        # graph and the model alive: a process that measures request after request grew by each model's objects

    def unpack(_: Any) -> Any:
        raise EngineError("saved_bytes' forward is measured only; it cannot run backward")

    mode = _live_storages()({}, lambda: "")  # the one dispatch mode: the same kernels' outputs as the other two
    _keep_every_total(mode, ids)
    try:
        with _stopped_by(model), mode, torch.autograd.graph.saved_tensors_hooks(pack, unpack), \
                (amp or contextlib.nullcontext()):
            result = forward(model, ids)
        del result
    finally:
        keep.clear()  # every saved variable holds pack, and pack held these: a cycle through C++ otherwise
        for h in handles:
            h.remove()
    return total, out


def inference_peak(model: Any, ids: Any, amp: Any = None) -> int:
    """Peak bytes of storages created and alive during one no_grad eval forward (weights, buffers, input out)."""
    import torch

    existing = {_key(t) for t in [*model.parameters(), *model.buffers(), ids]}
    mode = _live_storages()({}, lambda: "")
    mode.recs.update({k: _Rec(0, 0, "parameters") for k in existing})  # known, weigh nothing here
    with torch.no_grad(), (amp or contextlib.nullcontext()), _stopped_by(model), mode:
        result = forward(model, ids)
        del result
    return int(mode.peak)


def step_peak(model: Any, ids: Any, run: Run, saved: list[SavedTensor] | None = None) -> StepPeak:
    """Peak of live storages over training step 2 (forward, loss, backward, optimizer.step()), by category.

    `saved`, when given, collects what saved_bytes would from the step's own forward (the same training-mode
    forward under the same autocast; the loss after it saves no tensor): each storage once by its record, which a
    later storage at a freed one's address does not share, parameters out.

    Step 1 only makes the optimizer's state (_step_one); state a real step 1 would not have made is taken out after
    (_result).

    bf16_master / fp16_master: the model is cast to 16 bits (prepare) and the optimizer runs over a float32 master
    copy of each trainable parameter (Micikevicius et al. 2018, Sec. 3.1); its optimizer step first gives each
    master the float32 copy of its parameter's gradient (apex's FP16_Optimizer, model_grads_to_master_grads; the
    16-bit gradients live on to the next zero_grad), steps the masters, then copies them back into the 16-bit
    weights (in place).
    """
    return _result(*_run_step(model, ids, run, saved))


def _run_step(model: Any, ids: Any, run: Run, saved: list[SavedTensor] | None = None) -> tuple[Any, ...]:
    """Steps 1 and 2 under the dispatch mode: (mode, storages alive at step 2's start, an optimizer state's storage ->
    its parameter, host-side counters). Where ids' sizes are symbols (engine/trace.py) the mode keeps every live
    total (mode.lives) instead of a peak."""
    import torch

    trainable = [p for p in model.parameters() if p.requires_grad]
    masters, stepped, opt = _step_one(model, run, trainable)
    existing, owner, host = _alive_at_step_two(model, ids, opt, masters, stepped, trainable)
    stack, handles = _module_stack(model)
    mode = _live_storages()(existing, lambda: stack[-1] if stack else "")
    _keep_every_total(mode, ids)
    start = dict(mode.recs)  # storage key -> record, alive when step 2 starts
    params = {id(start[_key(p)]) for p in model.parameters()}
    seen: set[int] = set()

    def pack(t: Any) -> Any:
        rec = mode.record(t)  # a saved tensor's storage: born before, or here (a view's base)
        if rec is not None and rec.category == "temporaries":
            rec.category = "saved activations"
        if saved is not None and mode.phase == "forward" and rec is not None and id(rec) not in params:
            n = 0 if id(rec) in seen else t.untyped_storage().nbytes()
            seen.add(id(rec))
            saved.append(SavedTensor(stack[-1] if stack else "", tuple(t.shape), str(t.dtype).removeprefix("torch."),
                                     n))
        return t

    def grad_hook(p: Any) -> None:
        rec = mode.record(p.grad)
        if rec is not None and rec.category in ("temporaries", "saved activations"):
            rec.category = "gradients"

    hooks = [p.register_post_accumulate_grad_hook(grad_hook) for p in trainable]
    try:
        with _stopped_by(model), mode:
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast(run.workload.precision):
                loss = loss_of(*forward(model, ids))
            mode.phase = "backward"
            loss.backward()
            del loss
            mode.phase = "optimizer step"
            if masters:
                _master_step(mode, trainable, masters, opt)
            else:
                opt.step()
    finally:
        for h in [*hooks, *handles]:
            h.remove()
    return mode, start, owner, host


def _step_one(model: Any, run: Run, trainable: list[Any]) -> tuple[list[Any], list[Any], Any]:
    """Step 1: the optimizer over what it steps (the float32 masters of a master-copy run, else the trainable
    parameters) and its state, which torch.optim creates lazily, at a parameter's first step with a gradient: one
    optimizer.step() over zero gradients of every trainable parameter with its update skipped (_state_only), not
    counted, no forward or backward (they would leave nothing behind: the graph, the gradients (set_to_none) and the
    outputs are freed).
    (masters, stepped, optimizer)."""
    import torch

    masters = [p.detach().float().requires_grad_(True) for p in trainable] if run.workload.precision in MASTER else []
    stepped = masters or trainable  # what the optimizer steps
    opt = optimizer(model, run.workload.optimizer, run.foreach, params=stepped)
    # under the engine's mode where the update runs (its known values: .item() in an optimizer step), not counted;
    # where the update is skipped nothing asks a value, and FakeTensorMode alone makes the state (xlm-roberta-large:
    # 0.55 -> 0.43 CPU s, median of 6, 2026-12-06)
    first = contextlib.nullcontext() if run.workload.optimizer in _FUNCTIONAL else _live_storages()({}, lambda: "")
    if not isinstance(first, contextlib.nullcontext):
        first.phase = "optimizer step"
    with _stopped_by(model), first, torch.no_grad(), _state_only(run.workload.optimizer):
        for p in stepped:
            p.grad = torch.zeros_like(p)
        opt.step()
        opt.zero_grad(set_to_none=True)
    del first
    return masters, stepped, opt


# the functional update each optimizer's step() calls after its _init_group has made the state (torch/optim/adam.py
# Adam.step, which AdamW inherits; torch/optim/_adafactor.py Adafactor.step). SGD makes its momentum buffer inside its
# functional (sgd.py _single_tensor_sgd: buf = grad.detach().clone()), so its step 1 runs whole (two ops a parameter)
_FUNCTIONAL = {"adamw": ("torch.optim.adam", "adam"), "adafactor": ("torch.optim._adafactor", "adafactor")}


@contextlib.contextmanager
def _state_only(name: str) -> Any:
    """Step 1 makes the state and skips the update: the functional that step() calls after _init_group is a no-op
    meanwhile. The state's tensors are the ones a whole step 1 leaves (made by _init_group, updated in place by
    the functional); only their values differ (Adam's step counter reads 0, not 1), which fake tensors do not hold
    and step 2's allocations do not depend on. A whole step 1 dispatched about 10 ops a parameter (3,984 of a bert-base
    request's 14,840 ops, 0.8 s of its 2.6 s, 2026-12-06); this one, three."""
    import importlib

    where = _FUNCTIONAL.get(name)
    if where is None:
        yield
        return
    module = importlib.import_module(where[0])
    real = getattr(module, where[1])
    setattr(module, where[1], lambda *args, **kwargs: None)
    try:
        yield
    finally:
        setattr(module, where[1], real)


def _alive_at_step_two(model: Any, ids: Any, opt: Any, masters: list[Any], stepped: list[Any],
                       trainable: list[Any]) -> tuple[dict[int, tuple[int, str]], dict[int, Any], dict[int, int]]:
    """What is alive when step 2 starts, by storage: (storage -> (bytes, category): master weights, optimizer state,
    parameters, buffers, the input; an optimizer state's storage -> the model's parameter it is for; a host-side
    step counter's storage -> its bytes, counted as 0 on the device)."""
    import torch

    existing: dict[int, tuple[int, str]] = {}
    owner: dict[int, Any] = {}
    model_param = dict(zip(map(id, stepped), trainable, strict=True))
    host: dict[int, int] = {}
    for m in masters:
        existing[_key(m)] = (m.untyped_storage().nbytes(), "master weights")
    for p, state in opt.state.items():
        for name, t in state.items():
            if not isinstance(t, torch.Tensor):
                continue
            owner[_key(t)] = model_param[id(p)]
            if name == "step" and t.dim() == 0:  # host-side step counter on CUDA (torch/optim/adam.py)
                host[_key(t)] = t.untyped_storage().nbytes()
                existing[_key(t)] = (0, "optimizer state")
            else:
                existing.setdefault(_key(t), (t.untyped_storage().nbytes(), "optimizer state"))
    for cat, ts in (("parameters", model.parameters()), ("buffers", model.buffers()), ("input", [ids])):
        for t in ts:
            existing.setdefault(_key(t), (t.untyped_storage().nbytes(), cat))
    return existing, owner, host


def _result(mode: Any, start: dict[int, Any], owner: dict[int, Any], host: dict[int, int]) -> StepPeak:
    """The step's peak. A trainable parameter the loss never reaches gets no gradient in step 2, so a real step 1
    would have made no state for it: that state, alive and untouched through all of step 2 (torch.optim skips a
    parameter whose grad is None), is taken out of every moment, which leaves the peak's moment as it was."""
    unreached = _unreached(owner)
    for k in unreached:
        mode.peak -= start[k].nbytes
        start[k].nbytes = 0
    at_start = dict.fromkeys(CATEGORIES, 0)
    for r in start.values():
        at_start[r.category] += r.nbytes
    return StepPeak(peak=int(mode.peak), phase=mode.peak_phase, module=mode.peak_module,
                    at_peak=mode.alive_at_peak(), at_start=at_start,
                    host_bytes=sum(n for k, n in host.items() if k not in unreached))


def _keep_every_total(mode: Any, ids: Any) -> None:
    """Where ids' sizes are symbols (engine/trace.py): the mode keeps every live total (mode.lives) and compares
    none, which would fix the symbols' relation (dispatch._Storages.observe)."""
    if not all(isinstance(d, int) for d in ids.shape):
        mode.lives = set()


def _unreached(owner: dict[int, Any]) -> set[int]:
    """The optimizer state's storages whose parameter got no gradient in step 2 (see _result)."""
    return {k for k, p in owner.items() if p.grad is None}


def _master_step(mode: Any, trainable: list[Any], masters: list[Any], opt: Any) -> None:
    """One optimizer step over float32 masters: each reached parameter's gradient copied to float32 onto its master
    (apex's model_grads_to_master_grads), the step, the masters copied back into the 16-bit weights in place."""
    import torch

    with torch.no_grad():
        for p, m in zip(trainable, masters, strict=True):
            m.grad = None if p.grad is None else p.grad.float()
            rec = None if m.grad is None else mode.record(m.grad)
            if rec is not None:
                rec.category = "gradients"
        opt.step()
        for p, m in zip(trainable, masters, strict=True):
            p.copy_(m)


def _tie(model: Any) -> None:
    """Tie a fake-built model's weights as a real build does: tensor_mode's no_init_weights replaces
    PreTrainedModel.init_weights, which (transformers 5.23 modeling_utils) initializes *and* calls tie_weights,
    so an MLM decoder would keep its own V×E weight (and ALBERT's decoder its own bias) on fake tensors only."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # peft's wrapped HF model
    if not hasattr(base, "tie_weights"):
        return
    emb = base.get_input_embeddings() if hasattr(base, "get_input_embeddings") else None
    table = getattr(emb, "base_layer", None)
    if table is None:
        base.tie_weights()
        return
    # peft's lora.Embedding on the input embeddings: a real build tied the decoder before peft wrapped the lookup,
    # so the decoder reads the base table (base_layer.weight); tie to it, the wrapper out of the way meanwhile
    base.set_input_embeddings(table)
    try:
        base.tie_weights()
    finally:
        base.set_input_embeddings(emb)


def measure(make: Callable[[], Any], vocab_size: int, run: Run,
            what: tuple[str, ...] = MEASURES) -> Result:
    """Build the model with `make()` (inside the tensor mode) once and take the measurements named in `what`.

    They run in the order of MEASURES, the training step last: the forwards leave nothing behind (their
    graphs and outputs are freed), while a step changes the weights and keeps optimizer state.
    """
    import torch

    bad = [w for w in what if w not in MEASURES]
    if bad:
        raise EngineError(f"measurements must be among {', '.join(MEASURES)}, got {bad}")
    _quiet_transformers()
    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    with tensor_mode(run.fake):
        torch.manual_seed(run.seed)
        with fake_build() if run.fake else contextlib.nullcontext():
            model = make()
        dispatch.safe_point()
        if run.fake:
            _tie(model)
        out["parameters"] = sum(p.numel() for p in model.parameters())
        out["by_module"] = by_module(model)
        ids = input_ids(vocab_size, run)
        if what:
            model = prepare(model, run, True)
        timings = {"build": time.perf_counter() - t0}
        for w in sorted(set(what), key=MEASURES.index):
            dispatch.safe_point()
            started = time.perf_counter()
            model.train(w != "inference")
            if w == "saved" and "step" not in what:
                out["saved"], tensors = saved_bytes(model, ids, autocast(run.workload.precision))
                out["saved_tensors"] = tuple(tensors)
            elif w == "inference":
                out["inference"] = inference_peak(model, ids, autocast(run.workload.precision))
            elif w == "step":  # with "saved": read from the step's forward, one forward fewer
                collected: list[SavedTensor] | None = [] if "saved" in what else None
                out["step"] = step_peak(model, ids, run, collected)
                if collected is not None:
                    out["saved"], out["saved_tensors"] = sum(t.nbytes for t in collected), tuple(collected)
            else:
                continue  # "saved" with "step": taken in the step's forward, timed with it
            timings[w] = time.perf_counter() - started
        del model
    return Result(run=run, seconds=time.perf_counter() - t0, timings=timings, **out)
