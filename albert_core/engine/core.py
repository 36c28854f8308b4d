"""The measurement engine: PyTorch runs the real model, on fake tensors or real ones, and we count bytes.

torch and transformers are imported inside the functions, so importing this module is free.

Under `torch._subclasses.fake_tensor.FakeTensorMode` every tensor has a shape, a dtype and a storage
of the right size, but no bytes behind it: the same modeling code, the same aten ops and the same
autograd graph run, so a 3.5B-parameter model is measured by a process that holds only PyTorch's
imports. With `fake=False` the same functions run on real CPU tensors: that is the proof of the
engine (tests/test_engine.py holds the two equal, byte for byte). Fine-tuned models (finetune.build: frozen
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
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..replay.symbolic import MASTER, STEP_DTYPES

MEASURES = ("saved", "inference", "step")
OPTIMIZERS = ("adamw", "sgd", "adafactor")
# dtype of a run: the model cast to 16 bits ("bfloat16", "float16"), float32 weights under torch.autocast
# ("mixed_bf16", "mixed_fp16"), as activation_memory's dtypes, or the model cast to 16 bits with its optimizer over
# float32 master copies ("bf16_master", "fp16_master"; Micikevicius et al. 2018, Sec. 3.1; see step_peak)
DTYPES = STEP_DTYPES
CATEGORIES = ("parameters", "master weights", "buffers", "gradients", "optimizer state", "saved activations",
              "temporaries", "input")
PHASES = ("forward", "backward", "optimizer step")


class EngineError(ValueError):
    """PyTorch could not run the model: says which op or module stopped it and what to change."""


# A safe point: called before each op the engine's dispatch mode sees and between a build's parts. The warm
# measurement process (worker.serve) sets it to raise its Stop there, where an exception passes through PyTorch's
# dispatcher as any op's error does; raised from a signal handler instead, it could land under a C++ frame that
# cannot pass it on (a destructor, a noexcept callback), and torch aborts ("terminate called after throwing an
# instance of 'python_error'": 2 of 28 time-limit stops beside two busy loops, 2026-12-03).
safe_point: Callable[[], None] = lambda: None  # noqa: E731


@dataclass(frozen=True)
class Run:
    """What PyTorch is asked to run."""

    batch_size: int
    seq_len: int
    dtype: str = "float32"  # one of DTYPES
    attention: str = "eager"  # eager | sdpa (a model without sdpa runs its own attention)
    checkpointing: bool = False  # gradient checkpointing (HF: checkpoint(use_reentrant=False) per layer)
    optimizer: str = "adamw"  # for `step`
    foreach: bool = False  # torch.optim's multi-tensor path (its default on CUDA; the CPU's is the for-loop)
    fake: bool = True  # FakeTensorMode (no storage) or real CPU tensors
    seed: int = 0

    def check(self) -> None:
        for name in ("batch_size", "seq_len"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise EngineError(f"{name} must be a whole number of at least 1, got {v!r}")
        for name, choices in (("dtype", DTYPES), ("attention", ("eager", "sdpa")), ("optimizer", OPTIMIZERS)):
            if getattr(self, name) not in choices:
                raise EngineError(f"{name} must be one of {', '.join(choices)}, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class SavedTensor:
    module: str  # innermost module running when the tensor was saved ("" outside any module)
    shape: tuple[int, ...]  # the saved tensor's shape (a view: its storage may be larger)
    dtype: str  # e.g. "float32"
    nbytes: int  # bytes of its storage, counted only for the first tensor seen on that storage (else 0)


def saved_breakdown(tensors: tuple[SavedTensor, ...] | list[SavedTensor]) -> list[dict[str, Any]]:
    """One row per module that saved tensors: {"module", "tensors", "bytes"} (new storages only), in order."""
    rows: dict[str, list[int]] = {}
    for t in tensors:
        r = rows.setdefault(t.module or "(model)", [0, 0])
        r[0] += 1
        r[1] += t.nbytes
    return [{"module": m, "tensors": n, "bytes": b} for m, (n, b) in rows.items()]


def relative_error(estimate: int, measured: int) -> float:
    """(estimate - measured) / measured; 0.0 when both are 0."""
    return 0.0 if measured == 0 and estimate == 0 else (estimate - measured) / measured


@dataclass(frozen=True)
class StepPeak:
    peak: int  # bytes of every live storage at the step's peak
    phase: str  # forward | backward | optimizer step
    module: str  # the innermost module running at the peak ("" outside any module)
    at_peak: dict[str, int]  # CATEGORIES -> bytes alive at the peak (sums to peak)
    at_start: dict[str, int]  # CATEGORIES -> bytes alive when step 2 starts
    host_bytes: int  # optimizer step counters left out of the device peak (see module docstring)


@dataclass(frozen=True)
class Result:
    parameters: int  # sum(p.numel()) over unique parameters, as PyTorch built them
    by_module: dict[str, int]  # top-level module path (two levels) -> parameters
    run: Run
    saved: int | None = None
    saved_tensors: tuple[SavedTensor, ...] = field(default=(), repr=False)
    inference: int | None = None
    step: StepPeak | None = None
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)  # seconds: "build", then each measurement that ran

    @property
    def how(self) -> str:
        return ("fake tensors: PyTorch's real ops without storage" if self.run.fake
                else "real tensors on this machine's CPU")


# ---- building ------------------------------------------------------------------------------------

@contextlib.contextmanager
def tensor_mode(fake: bool) -> Iterator[Any]:
    """FakeTensorMode (and transformers' no_init_weights, so no initializer needs data) or nothing.

    On fake tensors Hugging Face's mask code would take its tracing path (transformers.utils.is_tracing is true
    for a FakeTensor) and keep a 4-D mask the real run drops after torch.all(mask): here its two mask modules
    ask is_tracing without the tensor, and the dispatch mode answers torch.all of a mask of ones (_follow_ones).
    """
    if not fake:
        yield None
        return
    from torch._subclasses.fake_tensor import FakeTensorMode
    from transformers import masking_utils, modeling_attn_mask_utils
    from transformers.initialization import no_init_weights
    from transformers.utils import import_utils

    def real_paths(tensor: Any = None) -> bool:
        return bool(import_utils.is_tracing(None))  # compiling, jit or stream capture: not a fake tensor

    saved = [(m, m.is_tracing) for m in (masking_utils, modeling_attn_mask_utils)]
    try:
        for m, _ in saved:
            m.is_tracing = real_paths
        with FakeTensorMode() as mode, no_init_weights():
            yield mode
    finally:
        for m, f in saved:
            m.is_tracing = f


def _quiet_transformers() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()


def build_auto(hf: dict[str, Any], attention: str = "eager") -> Any:
    """AutoModel.from_config of a config.json dict (any model_type transformers knows), on the current device."""
    from transformers import AutoConfig, AutoModel

    _quiet_transformers()
    d = dict(hf)
    model_type = d.pop("model_type", None)
    try:
        AutoConfig.for_model(model_type, **d)
    except (ValueError, KeyError) as e:
        raise EngineError(f"transformers cannot read this config.json (model_type {model_type!r}): {e}") from e
    try:
        return AutoModel.from_config(AutoConfig.for_model(model_type, **d), attn_implementation=attention)
    except (ValueError, ImportError):  # this model has no sdpa path (or none of this name): its own attention
        return AutoModel.from_config(AutoConfig.for_model(model_type, **d))


def prepare(model: Any, run: Run, training: bool) -> Any:
    """Cast to a 16-bit dtype, set train/eval mode and gradient checkpointing as `run` asks."""
    import torch

    if run.dtype in ("bfloat16", "float16") or run.dtype in MASTER:
        cast(model, getattr(torch, MASTER.get(run.dtype, run.dtype)))
    model.train(training)
    if run.checkpointing and training:
        if hasattr(model, "gradient_checkpointing") and not hasattr(model, "activation_checkpointing_enable"):
            model.gradient_checkpointing = True  # albert_core.engine.reference.ReferenceModel
        elif getattr(model, "supports_gradient_checkpointing", False):
            model.activation_checkpointing_enable()  # HF default: checkpoint(use_reentrant=False) per layer
        else:
            raise EngineError(f"{type(model).__name__} does not support gradient checkpointing in transformers "
                              "5.23: turn checkpointing off, or use the reference encoder (BERT and ALBERT)")
    return model


def cast(model: Any, dtype: Any, device: Any = None) -> None:
    """model.to(device, dtype) one tensor at a time, shared tensors kept shared: floating parameters and buffers
    take dtype (None: their own), every tensor takes device (None: its own); one already there is kept as it is.

    nn.Module.to swaps a tensor subclass's parameters in place (torch.utils.swap_tensors), which fake
    tensors refuse (FakeTensorMode holds weak references to them); this does what `_apply` does
    without swapping, on fake and real tensors alike.
    """
    import torch

    def target(t: Any) -> tuple[Any, Any] | None:
        """(device, dtype) to move t to, or None where it is there already."""
        to = dtype if dtype is not None and t.is_floating_point() else t.dtype
        where = t.device if device is None else torch.device(device)
        return None if (t.dtype, t.device) == (to, where) else (where, to)

    memo: dict[int, Any] = {}
    for mod in model.modules():
        for name, p in list(mod._parameters.items()):
            if p is not None:
                if id(p) not in memo:
                    go = target(p)
                    memo[id(p)] = p if go is None else torch.nn.Parameter(p.detach().to(*go),
                                                                           requires_grad=p.requires_grad)
                mod._parameters[name] = memo[id(p)]
        for name, b in list(mod._buffers.items()):
            if b is not None:
                if id(b) not in memo:
                    go = target(b)
                    memo[id(b)] = b if go is None else b.to(*go)
                mod._buffers[name] = memo[id(b)]


@contextlib.contextmanager
def fake_build() -> Iterator[None]:
    """While a model is built on fake tensors: nn.Module.to as `cast` does it, and deepcopy in the same FakeTensorMode.

    peft's get_peft_model moves each new LoRA adapter to its base layer's device and dtype with
    `adapter.to(device, dtype=...)` (peft tuners/tuners_utils.py, _move_adapter_to_device_of_base_layer), and
    nn.Module._apply swaps a FakeTensor parameter in place (torch/nn/modules/module.py), which fake tensors
    refuse: "_apply(): Couldn't swap Linear.weight". Here Module.to keeps what is already on the device and
    dtype asked (peft's case: a no-op) and replaces the rest as `cast` does. And peft's modules_to_save copy
    (copy.deepcopy of a task head, peft utils/other.py ModulesToSaveWrapper) deep-copies a FakeTensor's
    __dict__, its fake_mode with it (torch/_tensor.py Tensor.__deepcopy__): the copy then lives in another
    mode ("Mixing fake modes NYI"); here it is a clone in the running mode, a new storage as on real tensors.
    """
    import torch
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.overrides import TorchFunctionMode

    class SameModeCopy(TorchFunctionMode):  # type: ignore[misc]  # torch is untyped here (pyproject)
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if func is torch.Tensor.__deepcopy__ and isinstance(args[0], FakeTensor):
                t, memo = args
                if id(t) not in memo:
                    with torch.no_grad():
                        copy = t.detach().clone()
                    memo[id(t)] = (torch.nn.Parameter(copy, requires_grad=t.requires_grad)
                                   if isinstance(t, torch.nn.Parameter) else copy.requires_grad_(t.requires_grad))
                return memo[id(t)]
            return func(*args, **(kwargs or {}))

    original = torch.nn.Module.to

    def to(self: Any, *args: Any, **kwargs: Any) -> Any:
        device, dtype, _, _ = torch._C._nn._parse_to(*args, **kwargs)
        cast(self, dtype, device)
        return self

    torch.nn.Module.to = to
    try:
        with SameModeCopy():
            yield
    finally:
        torch.nn.Module.to = original


def autocast(dtype: str) -> Any:
    import torch

    amp = {"mixed_bf16": torch.bfloat16, "mixed_fp16": torch.float16}.get(dtype)
    return torch.autocast("cpu", dtype=amp) if amp else contextlib.nullcontext()


def input_ids(vocab_size: int, run: Run) -> Any:
    import torch

    g = torch.Generator().manual_seed(run.seed)
    return torch.randint(0, vocab_size, (run.batch_size, run.seq_len), generator=g)


def forward(model: Any, ids: Any) -> tuple[Any, Any]:
    """(sequence output, pooled output or None) of HF's model(input_ids=ids), ReferenceModel(ids) or any module
    that returns a tensor or a tuple."""
    import torch

    out = model(ids) if type(model).__name__ == "ReferenceModel" else model(input_ids=ids)
    if isinstance(out, torch.Tensor):
        return out, None
    if isinstance(out, tuple):
        return out[0], (out[1] if len(out) > 1 else None)
    if getattr(out, "last_hidden_state", None) is None and getattr(out, "logits", None) is not None:
        return out.logits, None  # a task model (classification, token, MLM head): the loss is its logits' mean
    return out.last_hidden_state, getattr(out, "pooler_output", None)


def loss_of(seq: Any, pooled: Any) -> Any:
    loss = seq.float().mean()
    return loss + pooled.float().mean() if pooled is not None else loss


def optimizer(model: Any, name: str, foreach: bool = False, params: list[Any] | None = None) -> Any:
    """torch.optim's `name` with its defaults over `params` (None: the model's trainable parameters); foreach=True:
    the multi-tensor path torch.optim takes on CUDA (optimizer.py _default_to_fused_or_foreach), run here on the
    CPU's foreach fallback, which allocates as CUDA's kernels do: one output tensor per input."""
    import torch

    if params is None:  # frozen ones hold no state (torch.optim skips them)
        params = [p for p in model.parameters() if p.requires_grad]
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-4, foreach=foreach)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=foreach)
    if name == "adafactor":
        return torch.optim.Adafactor(params, lr=1e-3, foreach=foreach)
    raise EngineError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {name!r}")


def by_module(model: Any, depth: int = 2) -> dict[str, int]:
    """Parameters per module path cut at `depth` levels (embeddings.word_embeddings, encoder.layer, ...)."""
    out: dict[str, int] = {}
    for name, p in model.named_parameters():  # each shared tensor once, under its first name
        parts = name.split(".")[:-1] or [name]
        key = ".".join(p for p in parts[:depth] if not p.isdigit()) or parts[0]
        out[key] = out.get(key, 0) + p.numel()
    return out


# ---- the dispatch mode ---------------------------------------------------------------------------

class _Rec:
    __slots__ = ("born", "died", "nbytes", "category")

    def __init__(self, born: int, nbytes: int, category: str):
        self.born, self.died, self.nbytes, self.category = born, -1, nbytes, category


def _key(t: Any) -> int:
    return int(t.untyped_storage()._cdata)


class _Storages:
    """The bookkeeping of LiveStorages (below): records by storage, a clock, the live bytes and their peak."""

    def __init__(self, existing: dict[int, tuple[int, str]], module: Callable[[], str]):
        self.clock = 0
        self.recs: dict[int, _Rec] = {}  # storage key -> its current record
        self.all: list[_Rec] = []
        for k, (n, cat) in existing.items():
            r = _Rec(0, n, cat)
            self.recs[k] = r
            self.all.append(r)
        self.live = sum(r.nbytes for r in self.all)
        self.peak, self.peak_tick, self.phase, self.peak_phase = self.live, 0, "forward", "forward"
        self.module, self.peak_module = module, ""
        self.ones = _Ones()  # fake tensors known to hold only ones (True)

    def _free(self, key: int, rec: _Rec) -> None:
        self.clock += 1
        rec.died = self.clock
        self.live -= rec.nbytes
        if self.recs.get(key) is rec:
            del self.recs[key]

    def record(self, t: Any) -> _Rec | None:
        """The record of t's storage: the existing one, or a new one born now (freed when PyTorch frees it)."""
        st = t.untyped_storage()
        k = int(st._cdata)
        if k in self.recs:
            return self.recs[k]
        self.clock += 1
        rec = _Rec(self.clock, st.nbytes(), "temporaries")
        self.recs[k] = rec
        self.all.append(rec)
        self.live += rec.nbytes
        weakref.finalize(st, self._free, k, rec)
        return rec

    def observe(self) -> None:
        if self.live > self.peak:
            self.peak, self.peak_tick, self.peak_phase = self.live, self.clock, self.phase
            self.peak_module = self.module()

    def alive_at_peak(self) -> dict[str, int]:
        out = dict.fromkeys(CATEGORIES, 0)
        for r in self.all:
            if r.born <= self.peak_tick and (r.died < 0 or r.died > self.peak_tick):
                out[r.category] += r.nbytes
        return out


def _known_value(mode: _Storages, t: Any) -> bool | int | float | None:
    """What .item() of a fake tensor is where the run knows it, else None (then PyTorch says it cannot know)."""
    import torch

    if t in mode.ones:  # a mask the model made of ones: torch.all(mask) (see _follow_ones)
        return True if t.dtype == torch.bool else 1 if not t.is_floating_point() else 1.0
    if mode.phase == "optimizer step":
        # .item() in an optimizer step (Adafactor's param.norm(2).item(), torch/optim/_adafactor.py) feeds
        # Python arithmetic on a learning rate, never a shape or an allocation
        return False if t.dtype == torch.bool else 1 if not t.is_floating_point() else 1.0
    return None


_COMPUTES: dict[Any, bool] = {}


def _computes(func: Any) -> bool:
    """Whether an op is an aten op that returns a tensor: a safe point. Not a query of a tensor's metadata
    (prim.device, aten.sym_size, aten.is_contiguous ...), which PyTorch's C++ getters call where an exception cannot
    pass (a Stop raised at prim.device aborted the process: 6 of 6 aborts in 80 stops beside two busy loops)."""
    import torch

    known = _COMPUTES.get(func)
    if known is None:
        known = _COMPUTES[func] = func.namespace == "aten" and any(
            isinstance(r.type, torch.TensorType) for r in func._schema.returns)
    return known


def _live_storages() -> Any:
    """The one TorchDispatchMode class (built on first use: torch is imported only here)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class LiveStorages(_Storages, TorchDispatchMode):  # type: ignore[misc]  # torch is untyped here (pyproject)
        """Every storage an op creates, from the tick it is born to the tick PyTorch frees it."""

        def __init__(self, existing: dict[int, tuple[int, str]], module: Callable[[], str]):
            TorchDispatchMode.__init__(self)
            _Storages.__init__(self, existing, module)

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if _computes(func):  # before the op: a Stop leaves nothing half-recorded
                safe_point()
            if func is torch.ops.aten._local_scalar_dense.default and isinstance(args[0], FakeTensor):
                value = _known_value(self, args[0])
                if value is not None:
                    return value
            res = func(*args, **(kwargs or {}))
            _follow_ones(self.ones, func, args, kwargs or {}, res)
            if func is torch.ops.aten.native_layer_norm.default:
                res = _layer_norm_stats(args, res)
            for t in tree_flatten(res)[0]:
                if isinstance(t, torch.Tensor):
                    self.record(t)
            self.observe()
            return res

    return LiveStorages


class _Ones:
    """A set of tensors by identity (a WeakSet would compare tensors with ==, elementwise), dropped when freed."""

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref[Any]] = {}

    def add(self, t: Any) -> None:
        key = id(t)

        def gone(_: Any) -> None:
            self._refs.pop(key, None)

        self._refs[key] = weakref.ref(t, gone)

    def __contains__(self, t: Any) -> bool:
        r = self._refs.get(id(t))
        return r is not None and r() is t


# ops whose output holds only ones when their tensor input does (views, copies, casts, reductions by all)
_KEEP_ONES = ("view", "_unsafe_view", "reshape", "expand", "unsqueeze", "squeeze", "slice", "select", "permute",
              "t", "transpose", "clone", "contiguous", "_to_copy", "to", "all", "alias", "detach", "lift_fresh",
              "repeat", "expand_copy", "view_copy")


def _follow_ones(ones: Any, func: Any, args: Any, kwargs: dict[str, Any], res: Any) -> None:
    """Constant propagation of all-ones tensors, just far enough for the masks a model makes of torch.ones.

    A model given no attention_mask builds one of ones and Hugging Face's masking code asks torch.all(mask)
    (transformers/masking_utils.py _ignore_bidirectional_mask_sdpa) to drop it: with this the fake run answers
    as the real one does. Sources: ones, ones_like, new_ones, full with 1; then the ops above and ==1, !=0, >0.
    """
    import torch

    if not isinstance(res, torch.Tensor):
        return
    name = func.overloadpacket.__name__
    if name in ("ones", "ones_like", "new_ones") or (name in ("full", "full_like", "new_full", "fill")
                                                      and _scalar(args, kwargs, -1) == 1):
        ones.add(res)
    elif args and isinstance(args[0], torch.Tensor) and args[0] in ones:
        if name in _KEEP_ONES or (name == "eq" and _scalar(args, kwargs, 1) == 1) or \
                (name in ("ne", "gt") and _scalar(args, kwargs, 1) == 0):
            ones.add(res)


def _scalar(args: Any, kwargs: dict[str, Any], i: int) -> Any:
    v = kwargs.get("fill_value", kwargs.get("value", kwargs.get("other")))
    if v is None and len(args) > abs(i) - (1 if i < 0 else 0):
        v = args[i]
    return v if isinstance(v, int | float | bool) else None


def _layer_norm_stats(args: Any, res: Any) -> Any:
    """native_layer_norm's mean and rstd as the CPU kernel makes them: float32 for a 16-bit input with a float32
    weight (aten/src/ATen/native/layer_norm.cpp, mixed_type; under autocast, ALBERT's LayerNorm meets bf16 input).

    The meta kernel that fake tensors run gives them the input's dtype; on real tensors this changes nothing.
    """
    import torch

    x, weight = args[0], args[2] if len(args) > 2 else None
    out, mean, rstd = res
    if (x.device.type == "cpu" and x.dtype in (torch.bfloat16, torch.float16) and weight is not None
            and weight.dtype == torch.float32 and mean.dtype != torch.float32):
        return out, torch.empty_like(mean, dtype=torch.float32), torch.empty_like(rstd, dtype=torch.float32)
    return res


def _module_stack(model: Any) -> tuple[list[str], list[Any]]:
    """Forward pre/post hooks that keep the name of the innermost running module."""
    stack: list[str] = []
    handles = []

    def pop(mod: Any, args: Any, output: Any) -> None:
        if stack:
            stack.pop()

    def push(name: str) -> Callable[[Any, Any], None]:
        def hook(mod: Any, args: Any) -> None:
            stack.append(name)
        return hook

    for name, mod in model.named_modules():
        handles.append(mod.register_forward_pre_hook(push(name)))
        handles.append(mod.register_forward_hook(pop))
    return stack, handles


@contextlib.contextmanager
def _stopped_by(model: Any) -> Iterator[None]:
    """Turn what stops PyTorch (a data-dependent op under fake tensors, ...) into an EngineError naming it."""
    try:
        yield
    except EngineError:
        raise
    except Exception as e:  # noqa: BLE001 - re-raised with the op and the model named
        from torch._subclasses.fake_tensor import DataDependentOutputException, UnsupportedOperatorException

        name = type(model).__name__
        if isinstance(e, DataDependentOutputException | UnsupportedOperatorException):
            op = getattr(e, "func", None)
            raise EngineError(
                f"{name} could not run on fake tensors: the op {op} needs the tensors' values "
                f"({type(e).__name__}); measure it on real tensors (Verify's 'real tensors', `verify --real`) "
                "at a size this machine can hold") from e
        if isinstance(e, MemoryError) or "can't allocate" in str(e).lower():
            raise
        raise EngineError(f"{name} stopped with {type(e).__name__}: {str(e)[:300]}") from e


# ---- the three measurements ----------------------------------------------------------------------

def saved_bytes(model: Any, ids: Any, amp: Any = None) -> tuple[int, list[SavedTensor]]:
    """One training-mode forward: (bytes, tensors) autograd saves, parameters excluded, each storage once."""
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

    Step 1 only makes the optimizer's state (torch.optim creates it lazily, at a parameter's first step with a
    gradient): one optimizer.step() over zero gradients of every trainable parameter, no forward or backward
    (they would leave nothing behind: the graph, the gradients (set_to_none) and the outputs are freed). A
    trainable parameter the loss never reaches gets no gradient in step 2, so a real step 1 would have made no
    state for it: that state, alive and untouched through all of step 2 (torch.optim skips a parameter whose grad
    is None), is taken out of every moment afterwards, which leaves the peak's moment as it was.

    bf16_master / fp16_master: the model is cast to 16 bits (prepare) and the optimizer runs over a float32 master
    copy of each trainable parameter (Micikevicius et al. 2018, Sec. 3.1); its optimizer step first gives each
    master the float32 copy of its parameter's gradient (apex's FP16_Optimizer, model_grads_to_master_grads; the
    16-bit gradients live on to the next zero_grad), steps the masters, then copies them back into the 16-bit
    weights (in place).
    """
    import torch

    trainable = [p for p in model.parameters() if p.requires_grad]
    masters = [p.detach().float().requires_grad_(True) for p in trainable] if run.dtype in MASTER else []
    stepped = masters or trainable  # what the optimizer steps
    opt = optimizer(model, run.optimizer, run.foreach, params=stepped)
    first = _live_storages()({}, lambda: "")  # under the same mode (known values, .item()), not counted
    first.phase = "optimizer step"
    with _stopped_by(model), first, torch.no_grad():
        for p in stepped:
            p.grad = torch.zeros_like(p)
        opt.step()
        opt.zero_grad(set_to_none=True)
    del first
    existing: dict[int, tuple[int, str]] = {}
    owner: dict[int, Any] = {}  # an optimizer state's storage -> the model's parameter it is for
    model_param = dict(zip(map(id, stepped), trainable, strict=True))
    host: dict[int, int] = {}  # a host-side step counter's storage -> its bytes
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
    stack, handles = _module_stack(model)
    mode = _live_storages()(existing, lambda: stack[-1] if stack else "")
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
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast(run.dtype):
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
    unreached = {k for k, p in owner.items() if p.grad is None}  # state a real step 1 would not have made
    for k in unreached:
        mode.peak -= start[k].nbytes
        start[k].nbytes = 0
    at_start = dict.fromkeys(CATEGORIES, 0)
    for r in start.values():
        at_start[r.category] += r.nbytes
    return StepPeak(peak=int(mode.peak), phase=mode.peak_phase, module=mode.peak_module,
                    at_peak=mode.alive_at_peak(), at_start=at_start,
                    host_bytes=sum(n for k, n in host.items() if k not in unreached))


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

    run.check()
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
        safe_point()
        if run.fake:
            _tie(model)
        out["parameters"] = sum(p.numel() for p in model.parameters())
        out["by_module"] = by_module(model)
        ids = input_ids(vocab_size, run)
        if what:
            model = prepare(model, run, True)
        timings = {"build": time.perf_counter() - t0}
        for w in sorted(set(what), key=MEASURES.index):
            safe_point()
            started = time.perf_counter()
            model.train(w != "inference")
            if w == "saved" and "step" not in what:
                out["saved"], tensors = saved_bytes(model, ids, autocast(run.dtype))
                out["saved_tensors"] = tuple(tensors)
            elif w == "inference":
                out["inference"] = inference_peak(model, ids, autocast(run.dtype))
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
