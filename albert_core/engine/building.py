"""Building a model for the engine: fake or real tensors (tensor_mode), Hugging Face's model from a config dict
without initializing its weights (fake_build), the run's dtype, attention and training settings (prepare, cast,
autocast), its input, forward, loss and optimizer. torch and transformers are imported inside the functions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..choices import CAUSAL_LM, MASTER, OPTIMIZERS, LoraSpec
from .fakekey import fake_mode_class
from .types import EngineError, Run

# ---- building ------------------------------------------------------------------------------------

@contextlib.contextmanager
def tensor_mode(fake: bool, shape_env: Any = None) -> Iterator[Any]:
    """FakeTensorMode (and transformers' no_init_weights, so no initializer needs data) or nothing. shape_env: a
    torch ShapeEnv whose symbols sizes may be (engine/trace.py), with PyTorch's own FakeTensorMode.

    On fake tensors Hugging Face's mask code would take its tracing path (transformers.utils.is_tracing is true
    for a FakeTensor) and keep a 4-D mask the real run drops after torch.all(mask): here its two mask modules
    ask is_tracing without the tensor, and the dispatch mode answers torch.all of a mask of ones (_follow_ones).
    """
    if not fake:
        yield None
        return
    from transformers import masking_utils, modeling_attn_mask_utils
    from transformers.initialization import no_init_weights
    from transformers.utils import import_utils

    def real_paths(tensor: Any = None) -> bool:
        return bool(import_utils.is_tracing(None))  # compiling, jit or stream capture: not a fake tensor

    saved = [(m, m.is_tracing) for m in (masking_utils, modeling_attn_mask_utils)]
    try:
        for m, _ in saved:
            m.is_tracing = real_paths
        mode_class = fake_mode_class() if shape_env is None else _plain_fake_mode()
        with mode_class(shape_env=shape_env) as mode, no_init_weights():  # fakekey.py's faster key for int sizes
            yield mode
    finally:
        for m, f in saved:
            m.is_tracing = f


@contextlib.contextmanager
def on_device(device: str) -> Iterator[None]:
    """torch.device(device) for a model build; on the meta device torch's initializers (torch.nn.init's, as
    transformers' no_init_weights lists them) are skipped, since a meta tensor holds no value to fill: a build is
    about 3x faster (BERT's 17 -> 6 ms here) and what it builds, and ties, is the same (transformers' own
    init_weights, which ties the weights, still runs)."""
    import sys

    import torch

    if device != "meta":
        with torch.device(device):
            yield
        return
    from transformers.initialization import TORCH_INIT_FUNCTIONS, TORCH_MODULES_TO_PATCH

    def skip(tensor: Any = None, *args: Any, **kwargs: Any) -> Any:
        return tensor

    originals = [(m, name, getattr(m, name)) for m in (sys.modules.get(n) for n in TORCH_MODULES_TO_PATCH)
                 if m is not None for name in TORCH_INIT_FUNCTIONS if hasattr(m, name)]
    try:
        for m, name, _ in originals:
            setattr(m, name, skip)
        with torch.device(device):
            yield
    finally:
        for m, name, f in originals:
            setattr(m, name, f)


def _plain_fake_mode() -> Any:
    """PyTorch's FakeTensorMode: fakekey.py's faster cache key is written for sizes that are ints, not symbols."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode


def _quiet_transformers() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()


def build_auto(hf: dict[str, Any], attention: str = "eager", head: str = "none", lora: LoraSpec | None = None) -> Any:
    """AutoModel.from_config of a config.json dict (any model_type transformers knows), on the current device;
    head CAUSAL_LM: AutoModelForCausalLM (the base model and its output projection, tied as the config says); lora:
    wrapped by peft's get_peft_model (lora_model)."""
    model = _build_auto(hf, attention, head)
    return model if lora is None else lora_model(model, lora, head)


def lora_model(model: Any, lora: LoraSpec, head: str) -> Any:
    """peft's get_peft_model over a config.json's model: LoraConfig of lora (targets None: peft's default for the
    model type), task CAUSAL_LM for a causal LM, else FEATURE_EXTRACTION (the base model's outputs)."""
    from ..estimate.serving import quiet_torchao

    quiet_torchao()  # peft imports torchao when it is installed
    import warnings

    from peft import LoraConfig, get_peft_model

    conf = LoraConfig(task_type="CAUSAL_LM" if head == CAUSAL_LM else "FEATURE_EXTRACTION", r=lora.r,
                      lora_alpha=lora.lora_alpha, lora_dropout=lora.lora_dropout, bias=lora.bias,
                      target_modules=list(lora.targets) if lora.targets is not None else None)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning)
        try:
            return get_peft_model(model, conf)
        except ValueError as e:  # no target of that name in this model, or none by default for its type
            raise EngineError(f"peft cannot put LoRA on this model: {str(e).splitlines()[0][:300]}") from None


def _build_auto(hf: dict[str, Any], attention: str, head: str) -> Any:
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    _quiet_transformers()
    if head not in ("none", CAUSAL_LM):
        raise EngineError(f"a config.json's model is built with head 'none' or '{CAUSAL_LM}', got {head!r}")
    auto = AutoModelForCausalLM if head == CAUSAL_LM else AutoModel
    d = dict(hf)
    model_type = d.pop("model_type", None)
    try:
        AutoConfig.for_model(model_type, **d)
    except (ValueError, KeyError) as e:
        raise EngineError(f"transformers cannot read this config.json (model_type {model_type!r}): {e}") from e
    try:
        return auto.from_config(AutoConfig.for_model(model_type, **d), attn_implementation=attention)
    except (ValueError, ImportError):  # this model has no sdpa path (or none of this name): its own attention
        return auto.from_config(AutoConfig.for_model(model_type, **d))


def prepare(model: Any, run: Run, training: bool) -> Any:
    """Cast to a 16-bit dtype, set train/eval mode and gradient checkpointing as `run` asks."""
    import torch

    if run.workload.precision in ("bfloat16", "float16") or run.workload.precision in MASTER:
        cast(model, getattr(torch, MASTER.get(run.workload.precision, run.workload.precision)))
    model.train(training)
    if run.workload.checkpointing and training:
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
    return torch.randint(0, vocab_size, (run.workload.batch_size, run.workload.seq_len), generator=g)


def forward(model: Any, ids: Any) -> tuple[Any, Any]:
    """(sequence output, pooled output or None) of HF's model(input_ids=ids), ReferenceModel(ids) or any module
    that returns a tensor or a tuple."""
    import torch

    if type(model).__name__.endswith(("ForCausalLM", "LMHeadModel")):  # a causal LM (peft's too) on its own loss,
        return model(input_ids=ids, labels=ids).loss, None  # ForCausalLMLoss (loss/loss_utils.py): a 0-dim tensor
    out = model(ids) if type(model).__name__ == "ReferenceModel" else model(input_ids=ids)
    if isinstance(out, torch.Tensor):
        return out, None
    if isinstance(out, tuple):
        return out[0], (out[1] if len(out) > 1 else None)
    if getattr(out, "last_hidden_state", None) is None and getattr(out, "logits", None) is not None:
        return out.logits, None  # a task model (classification, token, MLM head): the loss is its logits' mean
    return out.last_hidden_state, getattr(out, "pooler_output", None)


def loss_of(seq: Any, pooled: Any) -> Any:
    if seq.dim() == 0:  # a causal LM's own loss (forward)
        return seq
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
