"""Measure what PyTorch really stores: saved-tensor bytes, inference working memory, CUDA peaks.

torch and transformers are imported only inside the functions, so importing this module is free.

Three measurements, each defined exactly:

* training=True (`measure_activation_memory`): the bytes of the tensors autograd saves for
  backward during one training-mode forward, `model(input_ids=ids)`, recorded with
  torch.autograd.graph.saved_tensors_hooks. Parameters are excluded; every other saved tensor
  (index tensors, buffers such as position_ids, autocast's low-precision weight copies) is
  counted by its *storage*, each storage once (views of one storage share it). Under gradient
  checkpointing, torch.utils.checkpoint (use_reentrant=False, HF's default) saves each
  checkpointed layer's inputs through ctx.save_for_backward, so the same hooks see them.
* training=False: the peak, during one `torch.no_grad()` eval-mode forward, of the bytes of the
  tensor storages created by that forward and still alive (weights, buffers and input_ids excluded;
  the outputs count while alive). Tracked by a TorchDispatchMode that sees every op's outputs
  below autograd and a weakref finalizer on each new storage that fires when PyTorch frees it:
  no allocator involved, so the figure is exact tensor bytes (kernel-internal scratch buffers, such
  as MKL's, are not tensors and are not seen; a CUDA caching allocator rounds blocks to 512 B).
* `measure_cuda_peak`: torch.cuda.max_memory_allocated over one full training step (forward,
  backward, optimizer step) on a CUDA device; a clear RuntimeError where there is none.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .activations import activation_memory, check_inputs
from .config import ModelConfig, require_choice
from .hf import hf_built_config, hf_expressible
from .params import count_parameters

if TYPE_CHECKING:
    import pandas as pd

KINDS = ("hf", "reference")
MAX_MEASURE_BYTES = 3 << 30  # refuse to build and run a model that would need more than 3 GiB here
MAX_MEASURE_PARAMS = 400_000_000  # and models beyond 400M parameters (builds take too long on a small server)


@dataclass(frozen=True)
class SavedTensor:
    module: str  # innermost module running when the tensor was saved ("" outside any module)
    shape: tuple[int, ...]  # the saved tensor's shape (a view: its storage may be larger)
    dtype: str  # e.g. "float32"
    nbytes: int  # bytes of its storage, counted only for the first tensor seen on that storage (else 0)


@dataclass(frozen=True)
class Measurement:
    total: int  # bytes: saved-tensor storages (training) or peak live bytes (inference)
    config: str  # cfg.name
    kind: str  # "hf" or "reference"
    batch_size: int
    seq_len: int
    dtype: str
    attention: str
    training: bool
    checkpointing: bool
    estimate: int  # activation_memory(..., device="cpu") for the same settings, bytes
    tensors: tuple[SavedTensor, ...] = field(default=(), repr=False)  # training: every saved tensor in order

    @property
    def error(self) -> float:
        """(estimate - measured) / measured; 0.0 when both are 0."""
        return 0.0 if self.total == 0 and self.estimate == 0 else (self.estimate - self.total) / self.total

    def breakdown(self) -> pd.DataFrame:
        """Tidy table: one row per module with the new storages it saved (training) or the peak (inference)."""
        import pandas as pd

        if not self.tensors:
            return pd.DataFrame([{"module": "(peak of live tensors)", "tensors": 0, "bytes": self.total}])
        rows: dict[str, list[int]] = {}
        for t in self.tensors:
            r = rows.setdefault(t.module or "(model)", [0, 0])
            r[0] += 1
            r[1] += t.nbytes
        return pd.DataFrame([{"module": m, "tensors": n, "bytes": b} for m, (n, b) in rows.items()])


def check_measurable(cfg: ModelConfig, *, batch_size: int, seq_len: int, dtype: str, attention: str,
                     training: bool, checkpointing: bool, max_bytes: int = MAX_MEASURE_BYTES) -> int:
    """Estimated bytes the measurement needs (weights + activations); ValueError when too big for this server."""
    check_inputs(cfg, batch_size, seq_len, dtype, attention, "cpu")
    params = count_parameters(cfg).total
    if params > MAX_MEASURE_PARAMS:
        raise ValueError(
            f"{cfg.name} has {params:,} parameters; measuring builds the model and this server allows at most "
            f"{MAX_MEASURE_PARAMS:,}: choose a smaller config (fewer layers, smaller hidden_dim or vocab_size)"
        )
    act = activation_memory(cfg, batch_size=batch_size, seq_len=seq_len, dtype=dtype, attention=attention,
                            training=training, checkpointing=checkpointing, device="cpu").total
    need = 4 * params + act  # float32 weights (built in float32, then cast) plus what the forward keeps
    if need > max_bytes:
        raise ValueError(
            f"measuring {cfg.name} at batch {batch_size}, seq_len {seq_len} needs about {need / 2**30:.2f} GiB "
            f"(weights + activations), over this server's limit of {max_bytes / 2**30:.2f} GiB: "
            "lower batch_size or seq_len, or choose a smaller config"
        )
    return need


def _build(cfg: ModelConfig, kind: str, attention: str, dtype: str, checkpointing: bool, training: bool) -> Any:
    import torch

    from .build import hf_model, reference_model

    require_choice("kind", kind, KINDS)
    if kind == "hf" and checkpointing and cfg.family == "albert":
        raise ValueError(
            "Hugging Face's AlbertModel does not support gradient checkpointing (AlbertLayer is not a "
            "GradientCheckpointingLayer in transformers 5.23): use kind='reference'"
        )
    torch.manual_seed(0)
    model = hf_model(cfg, device="cpu", attention=attention) if kind == "hf" else \
        reference_model(cfg, device="cpu", attention=attention)
    if dtype in ("bfloat16", "float16"):
        model = model.to(getattr(torch, dtype))
    model.train(training)
    if checkpointing:
        if kind == "hf":
            model.activation_checkpointing_enable()  # HF default: checkpoint(use_reentrant=False) per BertLayer
        else:
            model.gradient_checkpointing = True
    return model


def _autocast(dtype: str) -> Any:
    import torch

    if dtype == "mixed_bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    if dtype == "mixed_fp16":
        return torch.autocast("cpu", dtype=torch.float16)
    return contextlib.nullcontext()


def _module_stack(model: Any) -> tuple[list[str], list[Any]]:
    """Forward pre/post hooks that keep the name of the innermost running module."""
    stack: list[str] = []
    handles = []

    def pop(mod: Any, args: Any, output: Any) -> None:
        stack.pop()

    for name, mod in model.named_modules():
        handles.append(mod.register_forward_pre_hook(lambda m, a, n=name: stack.append(n) and None))  # type: ignore[func-returns-value,unreachable]  # a hook returning None
        handles.append(mod.register_forward_hook(pop))
    return stack, handles


def saved_tensors(model: Any, input_ids: Any, *, autocast: Any = None) -> tuple[int, list[SavedTensor]]:
    """Run model(input_ids=...) once and return (bytes, tensors) autograd saves, parameters excluded."""
    import torch

    params = {p.untyped_storage()._cdata for p in model.parameters()}
    stack, handles = _module_stack(model)
    seen: set[int] = set()
    keep: list[Any] = []  # hold every saved tensor so no storage is freed and its address reused
    out: list[SavedTensor] = []
    total = 0

    def pack(t: Any) -> Any:
        nonlocal total
        st = t.untyped_storage()
        key = st._cdata
        keep.append(t)
        if key in params:
            return t
        n = 0 if key in seen else st.nbytes()
        seen.add(key)
        total += n
        out.append(SavedTensor(stack[-1] if stack else "", tuple(t.shape), str(t.dtype).removeprefix("torch."), n))
        return t

    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), (autocast or contextlib.nullcontext()):
            result = model(input_ids=input_ids) if not _is_reference(model) else model(input_ids)
        del result
    finally:
        for h in handles:
            h.remove()
    return total, out


def _is_reference(model: Any) -> bool:
    return type(model).__name__ == "ReferenceModel"


def peak_live_bytes(model: Any, input_ids: Any, *, autocast: Any = None) -> int:
    """Peak bytes of storages created and alive during one no_grad forward (see module docstring)."""
    import weakref

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class LiveBytes(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.live = 0
            self.peak = 0
            self.keys: dict[int, int] = {}

        def _free(self, key: int, n: int) -> None:
            self.live -= n
            self.keys.pop(key, None)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            res = func(*args, **(kwargs or {}))
            for t in tree_flatten(res)[0]:
                if isinstance(t, torch.Tensor):
                    st = t.untyped_storage()
                    key = st._cdata
                    if key not in self.keys and key not in existing:
                        n = st.nbytes()
                        self.keys[key] = n
                        self.live += n
                        weakref.finalize(st, self._free, key, n)
            self.peak = max(self.peak, self.live)
            return res

    existing = {t.untyped_storage()._cdata for t in [*model.parameters(), *model.buffers(), input_ids]}
    mode = LiveBytes()
    with torch.no_grad(), (autocast or contextlib.nullcontext()), mode:
        result = model(input_ids=input_ids) if not _is_reference(model) else model(input_ids)
        del result
    return mode.peak


def measure_activation_memory(cfg: ModelConfig, *, batch_size: int, seq_len: int, dtype: str = "float32",
                              attention: str = "eager", kind: str = "hf", checkpointing: bool = False,
                              training: bool = True, max_bytes: int = MAX_MEASURE_BYTES,
                              seed: int = 0) -> Measurement:
    """Measure on this machine's CPU what activation_memory(..., device="cpu") estimates.

    kind "hf": Hugging Face's base model of cfg's family from to_hf_config(cfg) (every sharing mode
    is built unshared there, which has the same activations; DeBERTa always with eager attention,
    its only one); "reference": albert_core.reference (BERT and ALBERT layouts).
    Raises ValueError for sizes too big for the server (see check_measurable).
    """
    import torch

    require_choice("kind", kind, KINDS)
    if checkpointing and not training:
        raise ValueError("checkpointing only applies to training=True")
    if kind == "reference" and not training:
        raise ValueError(
            "the inference peak depends on when the model's Python code drops its tensors, and albert_core "
            "models Hugging Face's code: use kind='hf' for training=False"
        )
    check_measurable(cfg, batch_size=batch_size, seq_len=seq_len, dtype=dtype, attention=attention,
                     training=training, checkpointing=checkpointing, max_bytes=max_bytes)
    est_cfg = cfg
    if kind == "hf" and not hf_expressible(cfg):
        if cfg.family == "bert" and cfg.inner_group_num > 1:
            raise ValueError("Hugging Face's BertModel has no inner layer groups (inner_group_num > 1): use kind='reference'")
        # to_hf_config builds this sharing mode unshared: same activations, one autocast weight copy per layer
        est_cfg = hf_built_config(cfg)
    model = _build(cfg, kind, attention, dtype, checkpointing, training)
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, cfg.vocab_size, (batch_size, seq_len), generator=g)
    est = activation_memory(est_cfg, batch_size=batch_size, seq_len=seq_len, dtype=dtype, attention=attention,
                            training=training, checkpointing=checkpointing, device="cpu").total
    if training:
        total, tensors = saved_tensors(model, ids, autocast=_autocast(dtype))
    else:
        total, tensors = peak_live_bytes(model, ids, autocast=_autocast(dtype)), []
    return Measurement(total=total, config=cfg.name, kind=kind, batch_size=batch_size, seq_len=seq_len,
                       dtype=dtype, attention=attention, training=training, checkpointing=checkpointing,
                       estimate=est, tensors=tuple(tensors))


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def measure_cuda_peak(cfg: ModelConfig, *, batch_size: int, seq_len: int, precision: str = "float32",
                      optimizer: str = "adamw", attention: str = "sdpa", checkpointing: bool = False) -> dict[str, int]:
    """torch.cuda.max_memory_allocated over one training step of HF's base model on the first CUDA device.

    precision: "float32", "bfloat16"/"float16" (model cast) or "mixed_bf16"/"mixed_fp16" (autocast,
    float32 weights). The loss is sum(sequence_output.float().mean() + pooled.float().mean()) (the
    pooled term only where the family has a pooler), so no task head adds memory. Returns bytes: weights (allocated after building), peak, and peak
    minus weights. RuntimeError with a clear message where no CUDA device exists.
    """
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device is available here: measure_cuda_peak needs an NVIDIA GPU with CUDA")
    from .build import hf_model, reference_model

    dev = torch.device("cuda")
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(dev)
    base = torch.cuda.memory_allocated(dev)
    torch.manual_seed(0)
    use_ref = checkpointing and cfg.family == "albert"
    model = (reference_model(cfg, device="cuda", attention=attention) if use_ref
             else hf_model(cfg, device="cuda", attention=attention))
    if precision in ("bfloat16", "float16"):
        model = model.to(getattr(torch, precision))
    model.train()
    if checkpointing:
        if use_ref:
            model.gradient_checkpointing = True
        else:
            model.activation_checkpointing_enable()
    opt = _optimizer(model, optimizer)
    weights = torch.cuda.memory_allocated(dev) - base
    ids = torch.randint(0, cfg.vocab_size, (batch_size, seq_len), device=dev)
    amp = {"mixed_bf16": torch.bfloat16, "mixed_fp16": torch.float16}.get(precision)
    ctx = torch.autocast("cuda", dtype=amp) if amp else contextlib.nullcontext()
    torch.cuda.reset_peak_memory_stats(dev)
    with ctx:
        out = model(ids) if use_ref else model(input_ids=ids)
        seq, pooled = (out[0], out[1]) if use_ref else (out.last_hidden_state, getattr(out, "pooler_output", None))
        loss = seq.float().mean() + (pooled.float().mean() if pooled is not None else 0)  # no pooler: DistilBERT ...
    after_forward = torch.cuda.memory_allocated(dev) - base
    loss.backward()
    opt.step()
    torch.cuda.synchronize(dev)
    peak = torch.cuda.max_memory_allocated(dev) - base
    return {"weights": weights, "after_forward": after_forward, "peak": peak, "peak_minus_weights": peak - weights}


def _optimizer(model: Any, name: str) -> Any:
    import torch

    if name == "adamw":
        return torch.optim.AdamW(model.parameters(), lr=1e-4)
    if name == "sgd":
        return torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    if name == "adafactor":
        return torch.optim.Adafactor(model.parameters(), lr=1e-3)
    raise ValueError(f"optimizer must be adamw, sgd or adafactor, got {name!r}")
