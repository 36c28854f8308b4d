"""The engine's types: a run's settings (Run), what it measures (SavedTensor, StepPeak, Result), its error, and the
names of its measurements, optimizers, dtypes, categories and phases. No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..choices import OPTIMIZERS as OPTIMIZERS  # re-exported: the engine names its optimizers
from ..choices import STEP_DTYPES
from ..workload import Workload

MEASURES = ("saved", "inference", "step")

# dtype of a run: the model cast to 16 bits ("bfloat16", "float16"), float32 weights under torch.autocast
# ("mixed_bf16", "mixed_fp16"), as activation_memory's dtypes, or the model cast to 16 bits with its optimizer over
# float32 master copies ("bf16_master", "fp16_master"; Micikevicius et al. 2018, Sec. 3.1; see step_peak)
DTYPES = STEP_DTYPES
CATEGORIES = ("parameters", "master weights", "buffers", "gradients", "optimizer state", "saved activations",
              "temporaries", "input")
PHASES = ("forward", "backward", "optimizer step")


class EngineError(ValueError):
    """PyTorch could not run the model: says which op or module stopped it and what to change."""


@dataclass(frozen=True)
class Run:
    """What PyTorch is asked to run: the workload, as the analytical model takes it, and what only the engine needs.

    The engine runs on this machine's CPU whatever workload.device names; the device chooses only the optimizer's
    foreach default (torch.optim: the multi-tensor path on CUDA, the for-loop on the CPU) where workload.foreach is
    None. The fine-tuning fields are the model's (engine.finetuned.build), not the run's.
    """

    workload: Workload  # batch, seq_len, precision, attention, checkpointing, optimizer: run.workload.<field>
    fake: bool = True  # FakeTensorMode (no storage) or real CPU tensors
    seed: int = 0  # torch.manual_seed before the build; the input ids' generator

    @property
    def foreach(self) -> bool:
        """torch.optim's multi-tensor step: the workload's choice, else its device's default."""
        w = self.workload
        return w.foreach if w.foreach is not None else w.device == "cuda"


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
