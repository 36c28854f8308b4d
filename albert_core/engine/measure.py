"""Measure what PyTorch really stores, through the engine (albert_core.engine.core), beside albert_core's estimates.

torch and transformers are imported only inside the functions, so importing this module is free.

This module knows the families: it builds Hugging Face's model of a ModelConfig (or albert_core's
reference encoder) for the engine and pairs each measurement with the estimate for the same
settings. The engine runs on fake tensors by default (PyTorch's real ops without storage: any size
is measured by a small process) and on real CPU tensors with fake=False; tests/test_engine.py holds
the two equal, byte for byte. The measurements (defined exactly in engine/core.py):

* training=True: the bytes of the tensors autograd saves in one training-mode forward,
  `model(input_ids=ids)`, parameters excluded, each storage once (activation_memory's definition).
  Under gradient checkpointing, torch.utils.checkpoint (use_reentrant=False, HF's default) saves
  each checkpointed layer's inputs through ctx.save_for_backward, so the same hooks see them.
* training=False: the peak bytes of storages created and alive in one no_grad eval forward (weights,
  buffers and input_ids excluded; the outputs count while alive). Kernel-internal scratch buffers
  (MKL's) are not tensors and are not seen; a CUDA caching allocator rounds blocks to 512 B.
* the training step's peak (engine.step_peak): run by a build process (processes/child_request.py) and `verify`, beside modelled_step.
* `measure_cuda_peak`: torch.cuda.max_memory_allocated over one full training step on a CUDA
  device; a clear RuntimeError where there is none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..choices import DTYPES, MASTER
from ..config import ModelConfig, require_choice
from ..estimate.activations import activation_memory, check_inputs
from ..estimate.params import count_parameters
from ..families import family
from ..formats.hf import hf_built_config, hf_expressible
from ..workload import Workload
from . import core as engine
from .core import SavedTensor

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["KINDS", "Measurement", "SavedTensor", "check_measurable", "default_kind", "maker",
           "measure_activation_memory", "measure_cuda_peak", "peak_live_bytes", "saved_tensors"]

KINDS = ("hf", "reference")
REFERENCE_FAMILIES = ("bert", "albert")  # albert_core.engine.reference builds these two layouts only
# On real tensors (fake=False) the weights and activations really exist: refuse what this server cannot hold.
MAX_MEASURE_BYTES = 3 << 30  # refuse a real-tensor run that would need more than 3 GiB here
MAX_MEASURE_PARAMS = 400_000_000  # and real-tensor models beyond 400M parameters (builds take long)


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
    fake: bool = True  # measured on fake tensors (True) or real CPU tensors

    @property
    def error(self) -> float:
        """(estimate - measured) / measured; 0.0 when both are 0."""
        return engine.relative_error(self.estimate, self.total)

    def breakdown(self) -> pd.DataFrame:
        """Tidy table: one row per module with the new storages it saved (training) or the peak (inference)."""
        import pandas as pd

        if not self.tensors:
            return pd.DataFrame([{"module": "(peak of live tensors)", "tensors": 0, "bytes": self.total}])
        return pd.DataFrame(engine.saved_breakdown(self.tensors))


def default_kind(cfg: ModelConfig, checkpointing: bool = False) -> str:
    """The source that can express cfg: Hugging Face's model, or the reference encoder for what HF's
    BertModel/AlbertModel cannot build (attention-only or FFN-only sharing, inner groups in BERT,
    gradient checkpointing in ALBERT)."""
    if cfg.family not in REFERENCE_FAMILIES:
        return "hf"
    if not hf_expressible(cfg) or (checkpointing and not family(cfg.family).STEP.hf_checkpointing):
        return "reference"
    return "hf"


def check_kind(cfg: ModelConfig, kind: str, checkpointing: bool = False) -> None:
    """ValueError, saying what to choose, when `kind` cannot build cfg as it is."""
    require_choice("kind", kind, KINDS)
    if kind == "reference" and cfg.family not in REFERENCE_FAMILIES:
        raise ValueError(f"the reference encoder builds BERT and ALBERT only, not family '{cfg.family}': "
                         "use Hugging Face's model (kind 'hf')")
    st = family(cfg.family).STEP
    if kind == "hf" and checkpointing and not st.hf_checkpointing:
        model = family(cfg.family).hf_classes(False)[1].__name__
        raise ValueError(f"Hugging Face's {model} does not support gradient checkpointing (its layers are not "
                         "GradientCheckpointingLayers in transformers 5.23): turn checkpointing off"
                         + (", or use kind='reference'" if cfg.family in REFERENCE_FAMILIES else ""))
    if kind == "hf" and cfg.family in REFERENCE_FAMILIES and st.layer != "AlbertLayerGroup" and cfg.inner_group_num > 1:
        raise ValueError("Hugging Face's BertModel has no inner layer groups (inner_group_num > 1): "
                         "use kind='reference'")


def check_measurable(cfg: ModelConfig, w: Workload, *, training: bool = True, max_bytes: int = MAX_MEASURE_BYTES,
                     fake: bool = False) -> int:
    """Estimated bytes a real-tensor measurement of w (its batch, seq_len, precision, attention, checkpointing)
    needs (weights + activations); ValueError when too big. On fake tensors nothing is stored: only the inputs are
    checked and 0 is returned."""
    check_inputs(cfg, w.replace(device="cpu"))
    require_choice("dtype", w.precision, DTYPES)  # a master-weight precision: the step alone measures it
    batch_size, seq_len = w.batch_size, w.seq_len
    if fake:
        return 0
    params = count_parameters(cfg).total
    if params > MAX_MEASURE_PARAMS:
        raise ValueError(
            f"{cfg.name} has {params:,} parameters; on real tensors this server builds at most "
            f"{MAX_MEASURE_PARAMS:,}: measure on fake tensors (no storage, any size), or choose a smaller config"
        )
    act = activation_memory(cfg, w.replace(device="cpu"), training=training).total
    need = 4 * params + act  # float32 weights (built in float32, then cast) plus what the forward keeps
    if need > max_bytes:
        raise ValueError(
            f"measuring {cfg.name} at batch {batch_size}, seq_len {seq_len} on real tensors needs about "
            f"{need / 2**30:.2f} GiB (weights + activations), over this server's limit of {max_bytes / 2**30:.2f} "
            "GiB: measure on fake tensors (no storage, any size), or lower batch_size or seq_len"
        )
    return need


def maker(cfg: ModelConfig, kind: str, attention: str) -> Callable[[], Any]:
    """A function that builds cfg's model (Hugging Face's or the reference encoder) on the CPU, for the engine."""
    from .models import hf_model, reference_model

    if kind == "hf":
        return lambda: hf_model(cfg, device="cpu", attention=attention)
    return lambda: reference_model(cfg, device="cpu", attention=attention)


def _estimate_config(cfg: ModelConfig, kind: str) -> ModelConfig:
    # to_hf_config builds a sharing mode HF cannot express unshared: same activations, one autocast copy per layer
    return hf_built_config(cfg) if kind == "hf" and not hf_expressible(cfg) else cfg


def measure_activation_memory(cfg: ModelConfig, w: Workload, *, kind: str = "hf", training: bool = True,
                              max_bytes: int = MAX_MEASURE_BYTES, seed: int = 0, fake: bool = True) -> Measurement:
    """Measure what activation_memory(..., device="cpu") estimates for w (its batch, seq_len, precision: one of
    the forward's DTYPES, attention and checkpointing), on fake tensors (default) or real ones.

    kind "hf": Hugging Face's base model of cfg's family from to_hf_config(cfg) (every sharing mode
    is built unshared there, which has the same activations; DeBERTa always with eager attention,
    its only one); "reference": albert_core.engine.reference (BERT and ALBERT layouts).
    Raises ValueError for bad settings and, on real tensors, for sizes too big for the server.
    """
    batch_size, seq_len, dtype, attention, checkpointing = (w.batch_size, w.seq_len, w.precision, w.attention,
                                                            w.checkpointing)
    check_kind(cfg, kind, checkpointing)
    if checkpointing and not training:
        raise ValueError("checkpointing only applies to training=True")
    if kind == "reference" and not training:
        raise ValueError(
            "the inference peak depends on when the model's Python code drops its tensors, and albert_core "
            "models Hugging Face's code: use kind='hf' for training=False"
        )
    check_measurable(cfg, w, training=training, max_bytes=max_bytes, fake=fake)
    est = activation_memory(_estimate_config(cfg, kind), w.replace(device="cpu"), training=training).total
    run = engine.Run(w, fake=fake, seed=seed)
    r = engine.measure(maker(cfg, kind, attention), cfg.vocab_size, run, what=("saved" if training else "inference",))
    total = r.saved if training else r.inference
    assert total is not None
    return Measurement(total=total, config=cfg.name, kind=kind, batch_size=batch_size, seq_len=seq_len,
                       dtype=dtype, attention=attention, training=training, checkpointing=checkpointing,
                       estimate=est, tensors=r.saved_tensors, fake=fake)


def built_component(module: str) -> str:
    """albert_core's component (embedding, layers, pooler) of a built module path (engine.by_module's keys)."""
    head = module.split(".")[0]
    if head in ("embeddings", "embeddings_project") or module.endswith("embedding_hidden_mapping_in"):
        return "embedding"  # ALBERT's E -> H mapping and ELECTRA's projection belong to the embedding (params.py)
    return "pooler" if head == "pooler" else "layers"


def count_difference(cfg: ModelConfig, kind: str, by_module: dict[str, int]) -> list[dict[str, Any]]:
    """Where a built model's count differs from albert_core's: one row per component that differs (empty if none).

    Each row: component, estimated, built, difference, and the built modules of that component.
    """
    c = count_parameters(_estimate_config(cfg, kind))
    built: dict[str, int] = {"embedding": 0, "layers": 0, "pooler": 0}
    modules: dict[str, list[str]] = {k: [] for k in built}
    for m, n in by_module.items():
        comp = built_component(m)
        built[comp] += n
        modules[comp].append(f"{m} {n:,}")
    est = {"embedding": c.embedding, "layers": c.all_layers, "pooler": c.pooler}
    return [{"component": k, "estimated": est[k], "built": built[k], "difference": built[k] - est[k],
             "modules": "; ".join(modules[k])} for k in built if built[k] != est[k]]


# engine category -> TrainingMemory part that models it (None: not modelled by training_memory)
_STEP_PARTS = {"parameters": "weights", "master weights": "master_weights", "gradients": "gradients",
               "optimizer state": "optimizer", "saved activations": "activations", "buffers": None,
               "temporaries": None, "input": None}


def step_estimate(cfg: ModelConfig, w: Workload) -> Any:
    """training_memory for the step the engine runs, on the CPU: each precision means the same in both (training.py's
    docstring: mixed_* autocast over float32 weights, *_master 16-bit weights with float32 master copies)."""
    from ..step.training import training_memory

    return training_memory(cfg, w.replace(device="cpu"))


def step_rows(step: dict[str, Any], est: Any, modelled: Any = None) -> list[dict[str, Any]]:
    """One row per category: bytes alive at the step's peak and at its start, albert_core's modelled peak
    (albert_core.step.peak; no column where there is none: the reference encoder's step) and the sum-of-parts
    training memory beside."""
    rows = []
    for cat, part in _STEP_PARTS.items():
        row = {"category": cat, "at peak": step["at_peak"].get(cat, 0), "at step start": step["at_start"].get(cat, 0)}
        if modelled is not None:
            row["albert_core (modelled peak)"] = modelled.at_peak.get(cat, 0)
        rows.append(row | {"albert_core (sum of parts)": (getattr(est, part) if est is not None and part else None)})
    return rows


def modelled_step(cfg: ModelConfig, kind: str, w: Workload) -> Any:
    """albert_core.step.peak.step_peak for the step the engine ran (the layout the source built) with w's
    fine-tuning mode, task head and LoRA, on w.device; None where the source is the reference encoder
    (albert_core.step.peak models Hugging Face's modules)."""
    from ..step.peak import step_peak

    if kind != "hf":
        return None
    return step_peak(_estimate_config(cfg, kind), w)


def point_lengths(cfgs: list[ModelConfig], seq_lens: tuple[int, ...], per_config: int = 3) -> dict[str, list[int]]:
    """A few sequence lengths per config to measure on a sweep: spread over its range (about a quarter, half
    and all of it) and the config's own max_position, each one of the sweep's own points."""
    end = max(seq_lens)

    def nearest(target: float) -> int:
        return min(seq_lens, key=lambda s: abs(s - target))

    picks = {nearest(end * f) for f in (0.25, 0.5, 1.0)[-per_config:]}
    return {c.name: sorted(picks | ({c.max_position} if c.max_position in seq_lens else set())) for c in cfgs}


def points_table(points: list[dict[str, Any]], cfgs: list[ModelConfig], w: Workload, *,
                 training: bool) -> pd.DataFrame:
    """Measured points beside albert_core's estimate for the same CPU kernels (what the engine ran), tidy:
    config, seq_len, measured, estimate_cpu, estimate (the charts' device, CUDA). w: the points' workload (each
    point's seq_len replaces its own; parent_plan.points_request)."""
    import pandas as pd

    by_name = {c.name: c for c in cfgs}
    rows = []
    for p in points:
        cfg = by_name[p["config"]].replace(max_position=p["seq_len"])
        pw = w.replace(seq_len=p["seq_len"], checkpointing=w.checkpointing and training)
        est_cpu = activation_memory(_estimate_config(cfg, p.get("kind", "hf")), pw.replace(device="cpu"),
                                    training=training).total
        rows.append({"config": p["config"], "seq_len": p["seq_len"], "measured": p["measured"],
                     "estimate_cpu": est_cpu, "estimate": activation_memory(cfg, pw, training=training).total,
                     "step_measured": p.get("step")})
    return pd.DataFrame(rows, columns=["config", "seq_len", "measured", "estimate_cpu", "estimate", "step_measured"])


def step_points_table(points: list[dict[str, Any]], cfgs: list[ModelConfig], w: Workload) -> pd.DataFrame:
    """Measured training-step peaks beside albert_core.step.peak's modelled peak for the same (CPU) step, tidy:
    config, seq_len, measured, modelled_cpu, error (modelled / measured - 1)."""
    import pandas as pd

    by_name = {c.name: c for c in cfgs}
    rows = []
    for p in points:
        cfg = by_name[p["config"]].replace(max_position=p["seq_len"])
        m = modelled_step(cfg, p.get("kind", "hf"), w.replace(seq_len=p["seq_len"]))
        rows.append({"config": p["config"], "seq_len": p["seq_len"], "measured": p["step"],
                     "modelled_cpu": m.peak if m is not None else None,
                     "error": (m.peak / p["step"] - 1) if m is not None and p["step"] else None})
    return pd.DataFrame(rows, columns=["config", "seq_len", "measured", "modelled_cpu", "error"])


def saved_tensors(model: Any, input_ids: Any, *, autocast: Any = None) -> tuple[int, list[SavedTensor]]:
    """Run model(input_ids=...) once and return (bytes, tensors) autograd saves, parameters excluded."""
    return engine.saved_bytes(model, input_ids, autocast)


def peak_live_bytes(model: Any, input_ids: Any, *, autocast: Any = None) -> int:
    """Peak bytes of storages created and alive during one no_grad forward (see module docstring)."""
    return engine.inference_peak(model, input_ids, autocast)


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def measure_cuda_peak(cfg: ModelConfig, w: Workload) -> dict[str, int]:
    """torch.cuda.max_memory_allocated over one training step of HF's base model on the first CUDA device, at w's
    batch, seq_len, precision, optimizer (and foreach), attention and checkpointing.

    w.precision: "float32", "bfloat16"/"float16" (model cast) or "mixed_bf16"/"mixed_fp16" (autocast,
    float32 weights); the master-copy precisions (bf16_master, fp16_master) are measured on the engine only. The
    optimizer takes w.foreach (None: CUDA's default, the multi-tensor path, as training_memory models it). The loss
    is engine.loss_of (sequence mean + pooled mean where there is a pooler), so no task head adds memory. Returns bytes: weights (allocated after building), peak, and
    peak minus weights. RuntimeError with a clear message where no CUDA device exists.
    """
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device is available here: measure_cuda_peak needs an NVIDIA GPU with CUDA")
    if w.precision not in ("float32", "bfloat16", "float16", "mixed_bf16", "mixed_fp16"):
        raise ValueError(f"measure_cuda_peak runs float32, bfloat16, float16, mixed_bf16 or mixed_fp16, not "
                         f"{w.precision!r}: measure the master-copy step on the engine (albert_core.engine.core)")
    from .models import hf_model, reference_model

    dev = torch.device("cuda")
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(dev)
    base = torch.cuda.memory_allocated(dev)
    torch.manual_seed(0)
    use_ref = w.checkpointing and not family(cfg.family).STEP.hf_checkpointing
    model = (reference_model(cfg, device="cuda", attention=w.attention) if use_ref
             else hf_model(cfg, device="cuda", attention=w.attention))
    run = engine.Run(w.replace(device="cuda"), fake=False)
    model = engine.prepare(model, run, True)
    opt = engine.optimizer(model, w.optimizer, run.foreach)  # on CUDA torch.optim's default: foreach
    weights = torch.cuda.memory_allocated(dev) - base
    ids = torch.randint(0, cfg.vocab_size, (w.batch_size, w.seq_len), device=dev)
    amp = {"mixed_bf16": torch.bfloat16, "mixed_fp16": torch.float16}.get(w.precision)
    ctx = torch.autocast("cuda", dtype=amp) if amp else torch.autocast("cuda", enabled=False)
    torch.cuda.reset_peak_memory_stats(dev)
    with ctx:
        loss = engine.loss_of(*engine.forward(model, ids))
    after_forward = torch.cuda.memory_allocated(dev) - base
    loss.backward()
    opt.step()
    torch.cuda.synchronize(dev)
    peak = torch.cuda.max_memory_allocated(dev) - base
    return {"weights": weights, "after_forward": after_forward, "peak": peak, "peak_minus_weights": peak - weights}


# ---- what the planner decides on, beside what this server measures (Verify) --------------------------------

def planner_peaks(cfg: ModelConfig, w: Workload) -> dict[str, Any]:
    """training_memory on one GPU as the Fit planner and Memory's training tab compute it (device "cuda": what
    they decide on, fit.step_bytes = .planned) and for the CPU's kernels (what Verify measures on this server):
    {"cuda": TrainingMemory, "cpu": TrainingMemory}."""
    from ..step.training import training_memory

    one = w.replace(num_gpus=1, sharding="none")
    return {d: training_memory(cfg, one.replace(device=d)) for d in ("cuda", "cpu")}


def device_differences(cfg: ModelConfig, *, precision: str, attention: str, training: bool = True,
                       step: bool = False, replayed_on_cuda: bool = False) -> list[str]:
    """Why albert_core's CUDA figure differs from the CPU's for these settings: the differences of replay/symbolic.py's
    module docstring that apply (dropout, LayerNorm statistics, sdpa kernels, autocast lists) and, for the
    training step, the optimizer's path and what is replayed op by op. Empty where none applies."""
    out = []
    if training and (cfg.dropout > 0 or cfg.attention_dropout > 0):
        # aten/src/ATen/native/Dropout.cpp (CPU: input * noise, noise saved) vs cuda/Dropout.cu (bool mask)
        out.append("dropout: the CPU saves a noise tensor in the input's dtype, CUDA's fused native_dropout a "
                   "1-byte mask")
    if training and MASTER.get(precision, precision) in ("bfloat16", "float16"):  # the cast model's forward
        # aten/src/ATen/native/cuda/layer_norm_kernel.cu: mean and rstd in acc_type (float32)
        out.append("LayerNorm statistics: CUDA keeps mean and rstd in float32, the CPU in the input's dtype")
    if attention == "sdpa":
        # aten/src/ATen/native/transformers/attention.cpp: _fused_sdp_choice_cpp / sdp_utils.cpp on CUDA
        out.append("sdpa: the CPU runs its flash kernel (the math path under attention dropout), CUDA flash or "
                   "memory-efficient kernels, which save their own logsumexp")
    if precision.startswith("mixed"):
        # aten/src/ATen/autocast_mode.cpp: CUDA's fp32 list (softmax, layer_norm, pow); CPU's lower list only
        out.append("autocast: CUDA runs softmax, layer_norm and pow in float32, the CPU autocasts only matmul-like "
                   "ops")
    if step:
        # torch/optim/optimizer.py _default_to_fused_or_foreach; c10/cuda/CUDACachingAllocator.cpp kMinBlockSize
        out.append("the optimizer step: CUDA's foreach path (one temporary per tensor) in 512-byte blocks, the CPU's "
                   "single-tensor step")
        if not replayed_on_cuda:  # peak.py: backward.modelled replays the CPU's kernels only
            out.append("the forward's and backward's working set is replayed op by op for the CPU's kernels only, "
                       "not for CUDA's")
    return out
