"""How a model runs, beside what is built (config.ModelConfig): the one workload type of the analytical model.

A Workload is a step's batch and sequence, its precision (the weights' dtype, autocast, a float32 master copy: one
word, PRECISIONS, read through three properties of one meaning each), the attention, checkpointing, the device
modelled, the optimizer, the fine-tuning (mode, head, labels, LoRA) and the parallelism (GPUs, sharding). It
validates itself (`problems`, each message saying what to change) and has one set of defaults: the app's (the
controls of albert_core.share). activations.activation_memory(cfg, w, training=) (the forward alone: w's
batch, sequence, forward dtype, attention, device and checkpointing; its recompute_memory, attention_quadratic_memory
and activation_sweep too), training.training_memory(cfg, w), step.step_peak(cfg, w) (and the step's
replays and candidates), the engine (engine.Run is a Workload plus fake and seed; measure_activation_memory,
check_measurable, modelled_step, the measured points' tables, measure_cuda_peak), Verify's planner, the Fit
planner's searches (step.fit: the search replaces the field it varies), Verify's request (engine.types.Request; to_dict /
from_dict: plain JSON across the process boundary), the UI's caches (ui.data, keyed on it) and the CLI's
`memory` and `verify` take it, and a link carries it: albert_core.share.workload_of(controls, page) reads the
Workload of Memory's training tab, the Fit planner or Verify from a view's controls, controls_of writes it back
(Verify's links: share.verify_query(view, cfg, w)); share.forward_of(controls) reads the forward that Memory's
activation tabs count.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from .choices import ATTENTIONS, DEVICES, MASTER, OPTIMIZERS, PRECISIONS, SHARDINGS, LoraSpec, parse_mode
from .replay.symbolic import split_dtype
from .values import short


@dataclass(frozen=True)
class Workload:
    batch_size: int = 8  # B: sequences per step on each GPU (a micro-batch)
    seq_len: int = 512  # S: tokens per sequence, at most the config's max_position
    precision: str = "mixed_bf16"  # PRECISIONS; what it means: weights, autocast, master below
    attention: str = "eager"  # eager | sdpa (a family without an sdpa path runs eager: families.attention_run)
    checkpointing: bool = False  # gradient checkpointing, one region per layer (torch.utils.checkpoint)
    device: str = "cuda"  # cuda: what people plan for; cpu: what albert_core.engine measures here
    optimizer: str = "adamw"  # adamw | sgd | adafactor (torch.optim)
    foreach: bool | None = None  # torch.optim's multi-tensor step; None: the device's default (CUDA: True)
    mode: str = "full"  # fine-tuning: full | frozen-embeddings | frozen-layers:K | lora | bitfit
    head: str = "none"  # the task model: none | classification | token | mlm
    num_labels: int = 2  # the head's outputs
    lora: LoraSpec | None = None  # peft's LoraConfig where mode is lora (None: its defaults)
    num_gpus: int = 1  # data-parallel GPUs
    sharding: str = "none"  # none | zero1 | zero2 | zero3 | fsdp (Rajbhandari et al. 2020, Sec. 5)

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise ValueError("; ".join(problems))

    # ---- the precision, one meaning per property (albert_core.step.training's module docstring) -----------
    @property
    def weights(self) -> str:
        """The weights' dtype: float32 under autocast, the cast's 16 bits for a cast model (a master copy's too)."""
        return split_dtype(self.forward_dtype)[0]

    @property
    def autocast(self) -> str | None:
        """torch.autocast's dtype over float32 weights (mixed_bf16, mixed_fp16), else None."""
        return split_dtype(self.forward_dtype)[1]

    @property
    def master(self) -> bool:
        """Whether the optimizer steps float32 master copies of 16-bit trainable weights (bf16_master, fp16_master)."""
        return self.precision in MASTER

    @property
    def forward_dtype(self) -> str:
        """The forward's and backward's dtype as the activation replay names it (a master run's: the cast model's)."""
        return MASTER.get(self.precision, self.precision)

    @property
    def trained_lora(self) -> LoraSpec | None:
        """The LoRA this workload trains (its own, or peft's defaults where none is given), None unless mode lora."""
        return (self.lora or LoraSpec()) if self.mode == "lora" else None

    def replace(self, **changes: Any) -> Workload:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (inside Verify's request, engine.types.Request): every field, LoRA as its fields or None."""
        d = asdict(self)
        if self.lora is not None and self.lora.targets is not None:
            d["lora"]["targets"] = list(self.lora.targets)
        return d

    @classmethod
    def from_dict(cls, d: Any) -> Workload:
        """The Workload of to_dict's JSON; a ValueError names a key it does not know or a value it refuses."""
        if not isinstance(d, dict):
            raise ValueError(f"a workload must be a JSON object of its fields, got {short(d)}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown workload field(s) {', '.join(map(short, unknown))}: the fields are "
                             f"{', '.join(sorted(names))}")
        lo: Any = d.get("lora")
        if lo is not None:
            if not isinstance(lo, dict):
                raise ValueError(f"lora must be an object of LoraSpec's fields or null, got {short(lo)}")
            targets = lo.get("targets")
            try:
                lo = LoraSpec(**{**lo, "targets": tuple(targets) if isinstance(targets, list) else targets})
            except TypeError:
                raise ValueError(f"lora's fields are r, lora_alpha, lora_dropout, targets and bias, got "
                                 f"{', '.join(map(short, lo))}") from None
        return cls(**{**d, "lora": lo})

    def problems(self) -> list[str]:
        """Every problem with the workload, each saying what to change (the model's own: check_for)."""
        out = [f"{name} must be a whole number of at least 1, got {v!r}"
               for name, v in (("batch_size", self.batch_size), ("seq_len", self.seq_len),
                               ("num_gpus", self.num_gpus))
               if not isinstance(v, int) or isinstance(v, bool) or v < 1]
        for name, v, choices in (("precision", self.precision, PRECISIONS), ("attention", self.attention, ATTENTIONS),
                                 ("device", self.device, DEVICES), ("optimizer", self.optimizer, OPTIMIZERS),
                                 ("sharding", self.sharding, SHARDINGS)):
            if v not in choices:
                out.append(f"{name} must be one of {', '.join(choices)}, got {short(v)}")
        try:
            parse_mode(self.mode)
        except ValueError as e:
            out.append(str(e))
        return out


__all__ = ["OPTIMIZERS", "PRECISIONS", "SHARDINGS", "Workload"]
