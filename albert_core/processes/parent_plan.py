"""Before a build process starts, in the process that asks (the Streamlit server, or the CLI): what a request's
build process may do within the memory this server has (plan: no torch, so a refused request starts nothing), what
it would need at its peak (estimate), the notes on the installed torch (runtime_notes), which requests run in a
process of their own (own_process), and the Memory page's points as one request (points_request).
child_request.py runs the request in the build process.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from ..choices import CAUSAL_LM, CONFIG_JSON_MODES
from ..config import ModelConfig
from ..engine import torch_build
from ..engine.models import applications_error
from ..engine.types import MAX_POINTS, Plan, PointsRequest, Request
from ..workload import Workload
from .limits import MIB

# Resident memory of a fresh `python -m albert_core.processes.child_request` after importing torch 2.13 and
# transformers 5.23 and building a model on the meta device, before any weight exists: 340 MiB
# (/proc/self/status VmHWM; 332 MiB after the imports alone, 219 MiB after torch alone; 2026-11-29,
# the 2-core Intel Xeon development machine, CPU-only torch wheel).
IMPORT_BYTES = 340 * MIB
# On fake tensors nothing is stored: beyond the imports the child holds Python objects (modules,
# fake tensors, the engine's records). Measured VmHWM of the whole child, all three measurements,
# 2026-12-01: 363-377 MiB from bert-base 2 x 64 to xlm-roberta-large 8 x 512 and ModernBERT-large
# 1 x 8,192 (docs/deploy.md); bert-large with 24 layers 371 MiB, with 512 layers 590 MiB (0.45 MiB a
# layer). Modelled as 96 MiB + 512 KiB per built layer module.
FAKE_BASE_BYTES = 96 * MIB
FAKE_PER_LAYER_BYTES = 512 * 1024
# Real tensors: working memory beyond imports + weights + saved activations (the forward's transient
# tensors, the allocator's slack, the result): measured in the child at batch 2, seq_len 64, float32,
# eager, both sources: a least-squares fit gives about 21 MiB + 0.77 x activations (docs/deploy.md).
WORKING_BASE_BYTES = 64 * MIB
WORKING_PER_ACTIVATION = (4, 5)  # 4/5 of the activation bytes


def _trainable(cfg: ModelConfig, w: Workload) -> Any:
    """finetune.trainable of w's mode, head and LoRA (a head without labels counted with one)."""
    from ..estimate.finetune import trainable

    return trainable(cfg, w.mode, head=w.head, num_labels=max(w.num_labels, 1), lora=w.lora)


def finetune_error(request: Request) -> str | None:
    """Why the request's fine-tuned model cannot be built (None when it can, or for the base model)."""
    from ..formats.hf import hf_expressible

    if not request.fine_tuned:
        return None
    if request.config is None:
        if request.workload.head in ("none", CAUSAL_LM) and request.workload.mode in CONFIG_JSON_MODES:
            return None  # a config.json's model or causal LM, fully or with LoRA (engine.building.build_auto)
        return "a fine-tuning mode or a task head needs a config one of the families models"
    if request.source != "hf":
        return ("a fine-tuning mode or a task head builds Hugging Face's task model (peft's for LoRA), not the "
                "reference encoder: choose Hugging Face's model")
    cfg = request.config
    if not hf_expressible(cfg):
        return (f"Hugging Face builds sharing '{cfg.sharing}' of family '{cfg.family}' unshared, so its task model "
                "would not be the one albert_core counts: choose sharing 'none' (or an ALBERT sharing all), or full "
                "fine-tuning with no head")
    try:
        _trainable(cfg, request.workload)
    except ValueError as e:
        return str(e)
    return None


def import_bytes(measured: int | None = None) -> int:
    """What a process with PyTorch holds before it builds anything: `measured` where the app has measured its warm
    process at rest (engine/runner.Runner.rest_rss), else IMPORT_BYTES for the build installed here (the CUDA build
    holds more: engine/torch_build.py)."""
    if measured:
        return measured
    build = installed_build()
    return IMPORT_BYTES + (build.expected_rest_bytes() - torch_build.CPU_REST_BYTES if build else 0)


def runtime_notes(imports: int | None = None) -> list[str]:
    """What the app and the CLI say once where they measure: the torch or transformers release, if it is not the
    verified one, and PyTorch's CUDA build on a machine without a GPU (torch_build.py). imports: as estimate's."""
    notes = [torch_build.version_note(_installed_versions()), torch_build.cuda_note(installed_build(), imports)]
    return [n for n in notes if n]


@functools.cache
def _installed_versions() -> dict[str, str | None]:
    return torch_build.installed_versions()


@functools.cache
def installed_build() -> torch_build.TorchBuild | None:
    """The installed torch's build (read once, without importing it: torch_build.installed)."""
    return torch_build.installed()


def estimate(request: Request, imports: int | None = None) -> dict[str, int]:
    """Bytes the measuring child needs at its peak: {"imports", "weights", "activations", "working", "total"}.
    imports: import_bytes's `measured` (None: the expected size of the build installed here).

    Fake tensors (the default): the imports and the Python objects of the build, no weights, no
    activations. Real tensors: weights are the parameters of what the source builds, 4 bytes each
    (every model is built in float32 and a 16-bit dtype is cast after), activations are
    activation_memory(..., device="cpu"), which equals the bytes autograd saves.
    """
    from ..engine import models
    from ..estimate.activations import activation_memory
    from ..estimate.params import count_parameters
    from ..formats.hf import hf_built_config

    held = import_bytes(imports)
    cfg, w = request.config, request.workload
    if cfg is None or not request.real:
        layers = 0 if cfg is None else models.layer_modules(cfg, request.source)
        working = FAKE_BASE_BYTES + FAKE_PER_LAYER_BYTES * layers
        return {"imports": held, "weights": 0, "activations": 0, "working": working, "total": held + working}
    built = hf_built_config(cfg) if request.source == "hf" else cfg
    n = _trainable(cfg, w).total if request.fine_tuned else count_parameters(built).total  # a head and adapters too
    weights = 4 * n  # float32: torch.float32 element size
    act = activation_memory(built, w.replace(device="cpu")).total
    num, den = WORKING_PER_ACTIVATION
    working = WORKING_BASE_BYTES + act * num // den
    return {"imports": held, "weights": weights, "activations": act, "working": working,
            "total": held + weights + act + working}


def floor_error(budget_bytes: int, imports: int | None = None) -> str | None:
    """Why no build process can start within budget_bytes (PyTorch's imports alone), or None. imports: as estimate's;
    where the installed torch is a CUDA build on a machine without a GPU, the message says what that costs."""
    floor = import_bytes(imports) + FAKE_BASE_BYTES
    if floor <= budget_bytes:
        return None
    cost = torch_build.cuda_cost(installed_build(), imports)  # the cause in a clause (Verify's note says the rest)
    return (f"this server has {budget_bytes / MIB:,.0f} MiB free for a build, less than the {floor / MIB:,.0f} MiB a "
            "process with PyTorch needs before building anything: run the explorer where more memory is free, or "
            "set ALBERT_EXPLORER_MEMORY_BUDGET_MB if the server has it"
            + (f"; {cost}, and its CPU build would leave more (`{torch_build.CPU_INSTALL}`)" if cost else ""))


def plan(request: Request, budget_bytes: int, imports: int | None = None) -> Plan:
    """What the child may do within budget_bytes: count, measure, why not, and the bytes it would need.

    No torch: a request refused here never starts a process that would build anything.
    """
    from ..engine import models
    from ..engine.measure import check_kind
    from ..estimate.activations import check_inputs

    reason = floor_error(budget_bytes, imports) or finetune_error(request)
    if reason:
        return Plan(count=False, measure=False, count_error=reason, measure_error=reason)
    w, cfg = request.workload, request.config
    measure_error: str | None = None
    if cfg is not None:
        layers = models.layer_modules(cfg, request.source)
        if layers > models.MAX_BUILD_LAYERS:
            reason = (f"Building {cfg.name} creates {layers:,} layer modules; this server builds at most "
                      f"{models.MAX_BUILD_LAYERS:,}. Lower num_layers or share whole layers.")
            return Plan(count=False, measure=False, count_error=reason, measure_error=reason)
        measure_error = applications_error(cfg)
        try:
            check_kind(cfg, request.source, w.checkpointing)
            check_inputs(cfg, w.replace(device="cpu"))
        except ValueError as e:  # seq_len beyond max_position, a dtype the CPU cannot run, ...
            measure_error = measure_error or str(e)
    if measure_error:
        return Plan(count=True, measure=False, measure_error=measure_error)
    try:
        est = estimate(request, imports)
    except ValueError as e:
        return Plan(count=True, measure=False, measure_error=str(e))
    if est["total"] > budget_bytes:
        return Plan(count=True, measure=False, measure_error=_too_big(request, est, budget_bytes), estimate=est)
    return Plan(count=True, measure=True, estimate=est)


def _too_big(request: Request, est: dict[str, int], budget: int) -> str:
    parts = ", ".join(f"{k} {v / MIB:,.0f} MiB" for k, v in est.items() if k != "total")
    if not request.real:  # fake tensors: only the build's Python objects grow, with the layer modules
        return (f"measuring {request.name} on fake tensors would need about {est['total'] / MIB:,.0f} MiB ({parts}), "
                f"over the {budget / MIB:,.0f} MiB this server has for one build: the build holds a Python object per "
                "module, so lower num_layers or share whole layers (a shared layer is built once)")
    w = request.workload
    return (f"measuring {request.name} at batch {w.batch_size}, seq_len {w.seq_len} on real tensors would "
            f"need about {est['total'] / MIB:,.0f} MiB ({parts}), over the {budget / MIB:,.0f} MiB this server has for "
            "one build: measure on fake tensors (the default: PyTorch's real ops without storage, any size), or "
            "lower the batch size or sequence length")



def points_request(cfgs: list[ModelConfig], seq_lens: dict[str, list[int]], w: Workload, *, training: bool,
                   step: bool = False) -> PointsRequest:
    """A request for the engine at a few sequence lengths per config, each at max_position = seq_len as the
    Memory page's sweeps are (ModelConfig.replace(max_position=S)), each point's seq_len in place of w's;
    training: the saved bytes (else the eval forward's peak); step: the training step's peak too."""
    pts = tuple((c.replace(max_position=s), s) for c in cfgs for s in seq_lens[c.name])
    return PointsRequest(pts[:MAX_POINTS], w, training, step)



def own_process(message: Mapping[str, object]) -> bool:
    """Whether a request (as the runner ships it: to_dict's JSON) runs in a fresh process of its own: a real-tensor
    measurement holds real memory (its weights and activations), which a process that stays alive would keep.
    Everything else (fake tensors, a count, the Memory page's points) is served by the warm measurement process where
    the server has one."""
    return bool(message.get("real")) and bool(message.get("measure", True)) and "points" not in message


