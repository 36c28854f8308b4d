"""The engine's types: a run's settings (Run), what it measures (SavedTensor, StepPeak, Result), its error, and the
names of its measurements, optimizers, dtypes, categories and phases; one Verify request across the process boundary
(Request, PointsRequest: each with its to_dict / from_dict JSON, as Workload has), what is planned for it
(Plan) and the JSON it answers (Answer, PointsAnswer). No torch here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict

from ..choices import OPTIMIZERS as OPTIMIZERS  # re-exported: the engine names its optimizers
from ..choices import STEP_DTYPES
from ..config import ModelConfig
from ..values import short
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
    None. The fine-tuning fields are the model's (engine.task_model.build), not the run's.
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


def saved_breakdown(tensors: tuple[SavedTensor, ...] | list[SavedTensor]) -> list[ModuleRow]:
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


# ---- one Verify request across the process boundary ------------------------------------------------------------
SOURCES = ("hf", "reference")
MAX_POINTS = 24  # points one PointsRequest may measure (the page asks for at most 4 lengths of at most 6 configs)  # Hugging Face's model | the plain-PyTorch reference encoder (engine/reference.py)


@dataclass(frozen=True)
class Request:
    """One Verify request: the model to build and the step it runs. The page, the CLI and the benchmarks make it, the
    build process (processes/child_request.py) runs it; it crosses the process boundary as to_dict's JSON, read back by from_dict."""

    workload: Workload  # batch, seq_len, precision, attention, checkpointing, optimizer; mode, head, LoRA
    config: ModelConfig | None = None  # a config one of the families models
    hf_config: Mapping[str, Any] | None = None  # or a config.json of a model_type no family models (generic)
    source: str = "hf"  # SOURCES: what builds config (a generic config.json: Hugging Face's AutoModel)
    real: bool = False  # real CPU tensors (weights and activations allocated) instead of fake ones
    count: bool = True  # count what PyTorch built
    measure: bool = True  # measure the saved bytes, the step's peak and the eval forward's peak

    def __post_init__(self) -> None:
        if not isinstance(self.workload, Workload):
            raise ValueError(f"a request's workload must be a Workload, got {short(self.workload)}")
        if (self.config is None) == (self.hf_config is None):
            raise ValueError("a request names either a config (one of the families) or a config.json (hf_config)")
        if self.source not in SOURCES:
            raise ValueError(f"source must be one of {', '.join(SOURCES)}, got {short(self.source)}")
        if self.hf_config is not None and self.source != "hf":
            raise ValueError("a config.json no family models is built by Hugging Face: source must be 'hf'")

    @property
    def generic(self) -> bool:
        """A config.json of a model_type no family models: measured, with no closed form beside it."""
        return self.hf_config is not None

    @property
    def fine_tuned(self) -> bool:
        """A fine-tuning mode or a task head: Hugging Face's task model is built (peft's for LoRA)."""
        return self.workload.mode != "full" or self.workload.head != "none"

    @property
    def name(self) -> str:
        if self.config is not None:
            return self.config.name
        assert self.hf_config is not None
        return str(self.hf_config.get("model_type"))

    def replace(self, **changes: Any) -> Request:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON, as the runner ships it to a build process (and keys what it serves again)."""
        d: dict[str, Any] = {"workload": self.workload.to_dict(), "source": self.source, "real": self.real,
                             "count": self.count, "measure": self.measure}
        if self.config is not None:
            d["config"] = self.config.to_dict()
        else:
            d["hf_config"] = dict(self.hf_config or {})
        return d

    @classmethod
    def from_dict(cls, d: object) -> Request:
        """The Request of to_dict's JSON; a ValueError says what is wrong with it."""
        if not isinstance(d, dict):
            raise ValueError(f"the request must be a JSON object, got {short(d)}")
        unknown = sorted(set(d) - {"workload", "config", "hf_config", "source", "real", "count", "measure"})
        if unknown:
            raise ValueError(f"the request's field(s) {', '.join(map(short, unknown))} are unknown")
        hf = d.get("hf_config")
        if hf is not None and not isinstance(hf, dict):
            raise ValueError(f"the request's hf_config must be a config.json object, got {short(hf)}")
        flags = {k: d.get(k, default) for k, default in (("real", False), ("count", True), ("measure", True))}
        for k, v in flags.items():
            if not isinstance(v, bool):
                raise ValueError(f"the request's {k} must be true or false, got {short(v)}")
        return cls(workload=_workload(d), config=None if d.get("config") is None else ModelConfig.from_dict(d["config"]),
                   hf_config=hf, source=d.get("source", "hf"), **flags)


@dataclass(frozen=True)
class PointsRequest:
    """The Memory page's measured points: each (config, seq_len) on the engine, fake tensors, the workload's other
    settings; training: the saved bytes (else the eval forward's peak); step: the training step's peak too."""

    points: tuple[tuple[ModelConfig, int], ...]
    workload: Workload
    training: bool
    step: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"points": [{"config": c.to_dict(), "seq_len": s} for c, s in self.points],
                "workload": self.workload.to_dict(), "training": self.training, "step": self.step}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PointsRequest:
        """The PointsRequest of to_dict's JSON; a ValueError says what is wrong with it."""
        w = _workload(d)
        try:
            pts = tuple((ModelConfig.from_dict(p["config"]), int(p["seq_len"])) for p in d["points"])
        except (KeyError, TypeError) as e:
            raise ValueError(f"the request's points must be objects of a config and a seq_len ({e})") from None
        return cls(pts, w, bool(d.get("training")), bool(d.get("step", False)))


def _workload(d: Mapping[str, Any]) -> Workload:
    try:
        return Workload.from_dict(d.get("workload"))
    except ValueError as e:
        raise ValueError(f"the request's workload: {e}") from None


@dataclass(frozen=True)
class Plan:
    """What a request's build process may do within the server's memory (processes.parent_plan.plan, no torch): count,
    measure, why not, and the bytes it would need at its peak."""

    count: bool
    measure: bool
    count_error: str | None = None
    measure_error: str | None = None
    estimate: dict[str, int] | None = None  # imports, weights, activations, working, total (parent_plan.estimate)

    def shown(self) -> dict[str, object]:
        """The plan's keys beside a result on the page: what ran, why not, and the estimate (where there is one)."""
        out: dict[str, object] = {"count": self.count, "measure": self.measure}
        for k in ("count_error", "measure_error", "estimate"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        return out


# ---- the JSON a build process answers (processes.child_request.answer) ---------------------------------------------------
class ModuleRow(TypedDict):
    module: str
    tensors: int
    bytes: int


class Measurement(TypedDict):
    """The saved bytes, measured beside the estimate (None where no family models the config, or a task model)."""

    total: int | None
    estimate: int | None
    estimate_cuda: int | None
    error: float | None
    kind: str
    batch_size: int
    seq_len: int
    dtype: str
    attention: str
    checkpointing: bool
    fake: bool
    fine_tuned: bool
    breakdown: list[ModuleRow]


class StepAnswer(TypedDict):
    """StepPeak's fields and the optimizer that stepped."""

    peak: int
    phase: str
    module: str
    at_peak: dict[str, int]
    at_start: dict[str, int]
    host_bytes: int
    optimizer: str


class InferenceAnswer(TypedDict):
    total: int
    estimate: int | None


class Answer(TypedDict, total=False):
    """A Verify request's result: what was built and counted, what was measured, or why not. The runner adds its
    process's keys (processes.parent_queue), the page and the CLI read them."""

    built: int  # parameters PyTorch built
    by_module: dict[str, int]
    count_diff: list[dict[str, object]]  # where a count differs (measure.count_difference)
    count_error: str
    trainable_built: int | None  # a task model: the parameters that require grad, as peft counts them
    measurement: Measurement
    measure_error: str
    step: StepAnswer
    inference: InferenceAnswer
    how: str  # fake or real tensors
    engine_seconds: float
    engine_timings: dict[str, float]
    import_rss: int
    peak_rss: int
    cpu_seconds: float
    out_of_memory: bool


class PointAnswer(TypedDict):
    config: str
    seq_len: int
    kind: str
    measured: int | None
    step: int | None


class PointsAnswer(TypedDict, total=False):
    points: list[PointAnswer]
    how: str
    points_error: str
