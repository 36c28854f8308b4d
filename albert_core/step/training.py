"""Training memory per GPU: weights, gradients, optimizer state, master weights, activations.

Exact ints; the parts sum to the total. Parameters are the *stored* ones (count_parameters), so
cross-layer sharing cuts weights, gradients, optimizer state and master weights; activations are
per layer *application* and sharing leaves them alone (activations.py).

Precisions, one meaning per name (bytes per parameter for weights / gradients / optimizer state's element /
master weights); the step's peak (peak.py) and the engine (engine/core.py) run each the same way:
- "float32": 4 / 4 / 4 / 0.
- "bfloat16", "float16": the model cast to 16 bits ("pure" 16-bit training): 2 / 2 / 2 / 0 (torch.optim
  creates its state with zeros_like(param)).
- "mixed_bf16", "mixed_fp16": torch.autocast over float32 weights (torch.amp; the weights are their own master
  copy): 4 / 4 / 4 / 0, the forward's matmuls in 16 bits and autocast's cached 16-bit weight copies among the
  activations (activation_memory(dtype="mixed_bf16")).
- "bf16_master", "fp16_master": 16-bit weights with a float32 master copy of what trains (Micikevicius et al.
  2018, Sec. 3.1; the ZeRO paper's accounting, Rajbhandari et al. 2020, Sec. 3.1: 2Ψ + 2Ψ + KΨ, K = 12 for
  Adam): 2 / 2 / 4 / 4, the forward that of the 16-bit model (activations of dtype "bfloat16"/"float16"). The
  step's peak adds the float32 copy of the gradients the optimizer step makes (engine.step_peak).

Optimizers (state per parameter tensor):
- "adamw": exp_avg and exp_avg_sq, 2 values per element (Loshchilov & Hutter 2019; torch.optim.AdamW).
- "sgd": momentum_buffer, 1 value per element (torch.optim.SGD with momentum > 0).
- "adafactor": factored second moments (Shazeer & Stern 2018, Sec. 3): a row vector (n) and a
  column vector (m) for an n×m matrix, the full vector for a 1-D tensor; no first moment.
The scalar "step" counters torch keeps on the CPU are not GPU memory and are left out.

Sharding over num_gpus (Rajbhandari et al. 2020, "ZeRO", Sec. 5): "none" (data parallelism: every
GPU holds everything), "zero1" (optimizer state and master weights partitioned), "zero2" (+
gradients), "zero3"/"fsdp" (+ weights). A partitioned buffer of n elements holds ceil(n / N) per GPU
(flat buffers padded to a multiple of N). batch_size is the micro-batch on each GPU; activations
are never partitioned by ZeRO.

Fine-tuning modes and task heads (finetune.py: full, frozen-embeddings, frozen-layers:K, lora, bitfit; heads
none, classification:N, token:N, mlm): weights count every tensor of the task model (base + head + LoRA's
adapters and peft's trainable copies); gradients, optimizer state and master weights count the trainable
tensors only (finetune.state_elements: torch.optim skips a parameter whose grad is None). The activations of
the sum of parts are the base model's full forward (a frozen prefix saving nothing is in the peak only).

The step's peak (`peak`, `peak_phase`, `peak_moment`, `at_peak`): albert_core.step.peak.step_peak with the same
settings: the largest of the moments a step really passes through (forward end, backward start, end of
backward, the optimizer step's temporaries, the checkpoint recomputes), which is what must fit, not the sum.
Sharding is applied to the peak's
categories per moment (ZeRO, Rajbhandari et al. 2020, Sec. 5: stage 1 the optimizer state, 2 + gradients,
3 + parameters, ceil(n / N) elements each), and stage 3 adds the largest gathered unit's full parameters as a
transient (Sec. 5.3: parameters are broadcast to every GPU for the unit's forward and backward; a unit is
one layer, or everything outside the layers as FSDP's root unit).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..choices import MASTER, OPTIMIZERS
from ..config import ModelConfig, require_choice
from ..estimate.activations import activation_memory, recompute_memory
from ..estimate.finetune import Tensor, element_totals, tensors
from ..estimate.params import count_parameters, stored_copies
from ..workload import Workload

if TYPE_CHECKING:
    import pandas as pd

PRECISION_LABELS = {"float32": "float32", "bfloat16": "bfloat16 (model cast)", "float16": "float16 (model cast)",
                    "mixed_bf16": "mixed bf16: autocast, float32 weights",
                    "mixed_fp16": "mixed fp16: autocast, float32 weights",
                    "bf16_master": "bf16 weights + float32 master copy",
                    "fp16_master": "fp16 weights + float32 master copy"}
PRECISION_NOTES = {  # what each precision holds, in one sentence (the pages' and the CLI's captions)
    "float32": "float32 weights, gradients and optimizer state",
    "bfloat16": "the model cast to bfloat16: 16-bit weights, gradients and optimizer state",
    "float16": "the model cast to float16: 16-bit weights, gradients and optimizer state",
    "mixed_bf16": "torch.autocast to bfloat16 over float32 weights (their own master copy): float32 gradients "
                  "and optimizer state, 16-bit matmuls and autocast's cached 16-bit weight copies",
    "mixed_fp16": "torch.autocast to float16 over float32 weights (their own master copy): float32 gradients "
                  "and optimizer state, 16-bit matmuls and autocast's cached 16-bit weight copies",
    "bf16_master": "bfloat16 weights and gradients, a float32 master copy of what trains and float32 optimizer "
                   "state; the optimizer step adds a float32 copy of the gradients",
    "fp16_master": "float16 weights and gradients, a float32 master copy of what trains and float32 optimizer "
                   "state; the optimizer step adds a float32 copy of the gradients",
}
PEAK_MAX_LAYERS = 512  # layer applications up to which the peak is modelled: step_peak walks every tensor and
# layer step (about 0.07 ms per layer here), and a planner's search calls it dozens of times; deeper configs
# (no encoder trained has more than 48) are planned on the sum of the parts, and the pages say so


def weight_element_bytes(precision: str) -> int:
    """Bytes of a weight's (and its gradient's) element: 2 where the model is cast to 16 bits, else 4."""
    return 2 if precision in ("bfloat16", "float16") or precision in MASTER else 4


def state_element_bytes(precision: str) -> int:
    """Bytes of an optimizer state's element: its parameter's dtype (zeros_like), a master copy's float32."""
    return 2 if precision in ("bfloat16", "float16") else 4


def parameter_shape_counts(cfg: ModelConfig) -> list[tuple[tuple[int, ...], int]]:
    """(shape, how many stored tensors have it) for every stored parameter (HF layout, pooler included).

    Counted, not listed: a config may store millions of layers (4,096 layers x 1,024 inner layers).
    """
    V, E, H, I, P, T = (cfg.vocab_size, cfg.embedding_dim, cfg.hidden_dim, cfg.intermediate_dim,
                        cfg.max_position, cfg.type_vocab_size)
    out: list[tuple[tuple[int, ...], int]] = [(s, 1) for s in [(V, E), (P, E), (T, E), (E,), (E,)]]
    if cfg.factorized:
        out += [((H, E), 1), ((H,), 1)]
    att = [(H, H), (H,)] * 4 + [(H,), (H,)]  # query, key, value, dense; LayerNorm
    ffn = [(I, H), (I,), (H, I), (H,), (H,), (H,)]  # ffn, ffn_output; LayerNorm
    n_att, n_ffn = stored_copies(cfg, "attention"), stored_copies(cfg, "ffn")
    out += [(s, n_att) for s in att] + [(s, n_ffn) for s in ffn]
    return out + [((H, H), 1), ((H,), 1)]  # pooler


def parameter_shapes(cfg: ModelConfig) -> list[tuple[int, ...]]:
    """Shape of every stored parameter tensor (HF layout, pooler included), one entry per tensor."""
    return [s for s, n in parameter_shape_counts(cfg) for _ in range(n)]


def optimizer_state_elements(cfg: ModelConfig, optimizer: str) -> int:
    """Elements of optimizer state for all stored parameters."""
    n = count_parameters(cfg).total
    if optimizer == "adamw":
        return 2 * n  # exp_avg, exp_avg_sq
    if optimizer == "sgd":
        return n  # momentum_buffer
    if optimizer == "adafactor":  # Shazeer & Stern 2018 Sec. 3: row + column factors for matrices
        return sum((s[0] + s[1] if len(s) == 2 else s[0]) * n for s, n in parameter_shape_counts(cfg))
    require_choice("optimizer", optimizer, OPTIMIZERS)
    raise AssertionError(f"optimizer {optimizer!r} is listed in OPTIMIZERS but has no state formula")


@dataclass(frozen=True)
class TrainingMemory:
    """Bytes per GPU for one training step; weights + gradients + optimizer + master_weights + activations."""

    config: str
    precision: str
    optimizer_name: str  # adamw | sgd | adafactor
    num_gpus: int
    sharding: str
    batch_size: int  # micro-batch per GPU
    seq_len: int
    parameters: int  # stored parameters (sharing counted once)
    weights: int
    gradients: int
    optimizer: int  # optimizer state bytes
    master_weights: int
    activations: int  # saved for backward, plus one layer's recompute under checkpointing
    activations_saved: int
    activations_recompute: int
    mode: str = "full"  # finetune.parse_mode's spelling (frozen-layers:K)
    head: str = "none"
    trainable: int = 0  # trainable parameters (finetune.trainable's count); all of them for full
    peak: int = 0  # the step's peak per GPU (step.step_peak, sharded as stated); 0 where not computed
    peak_phase: str = ""  # forward | backward | optimizer step
    peak_moment: str = ""  # what happens at the peak
    at_peak: dict[str, int] = field(default_factory=dict)  # step.CATEGORIES (+ the gathered ZeRO-3 unit) -> bytes
    peak_modelled: bool = False  # False: with_peak off, or beyond PEAK_MAX_LAYERS (then peak is 0)
    peak_replayed: bool = False  # the step's working set replayed op by op (step.StepPeakEstimate.replayed); else
    # the peak is the largest of moments whose forward and backward working set is a lower bound (CUDA)

    @property
    def peak_is(self) -> str:
        """How far the peak can be trusted, in words for a table (peak_trust)."""
        return peak_trust(self.peak_modelled, self.peak_replayed, self.mode)

    @property
    def beyond_parts(self) -> dict[str, int]:
        """What the step's peak holds that no part of the sum has (nonzero only): the temporaries and the input alive
        at that moment, buffers, and under ZeRO-3 / FSDP the unit gathered whole (GATHERED). Where they outweigh
        what the parts count but the peak's moment lacks (gradients not yet made at the forward's end), the peak is
        above the sum of the parts."""
        return {k: v for k, v in self.at_peak.items() if k not in PARTS_AT_PEAK and v}

    @property
    def planned(self) -> int:
        """What must fit: the step's peak where modelled, else the sum of the parts (fit.py plans on it)."""
        return self.peak if self.peak_modelled else self.total

    @property
    def total(self) -> int:
        return self.weights + self.gradients + self.optimizer + self.master_weights + self.activations

    def breakdown(self) -> pd.DataFrame:
        """Tidy table: part, bytes, pct of total; the rows sum to total exactly."""
        import pandas as pd

        rows = [("weights", self.weights), ("gradients", self.gradients),
                ("optimizer state", self.optimizer), ("master weights (float32)", self.master_weights),
                ("activations (saved for backward)", self.activations_saved),
                ("activations (checkpoint recompute)", self.activations_recompute)]
        df = pd.DataFrame(rows, columns=["part", "bytes"]).astype({"bytes": object})
        total = self.total
        df["pct"] = [100 * b / total if total else 0.0 for b in df["bytes"]]
        return df


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def training_memory(cfg: ModelConfig, w: Workload, *, with_peak: bool = True) -> TrainingMemory:
    """Memory per GPU of one training step of cfg under w: its batch and sequence, precision, optimizer, GPUs and
    sharding, attention, checkpointing, device, and the task head under its fine-tuning mode (module docstring).

    with_peak=False leaves the step's peak out (peak 0; the parts only), for sweeps that show the sum; so does a
    config of more than PEAK_MAX_LAYERS layer applications (peak_modelled says which).
    Bad input: ValueError saying what to change (a LoRA without targets where peft has none, say).
    """
    batch_size, seq_len, precision, checkpointing = w.batch_size, w.seq_len, w.precision, w.checkpointing
    optimizer, num_gpus, sharding, mode, head, num_labels, lora = (w.optimizer, w.num_gpus, w.sharding, w.mode, w.head,
                                                                  w.num_labels, w.lora)
    if sharding != "none" and num_gpus == 1:
        sharding_eff = "none"  # nothing to partition over
    else:
        sharding_eff = "zero3" if sharding == "fsdp" else sharding
    full = mode == "full" and head == "none"
    if full:
        n = count_parameters(cfg).total
        n_train, grad_el, opt_el = n, n, optimizer_state_elements(cfg, optimizer)
    else:
        n, grad_el, opt_el = element_totals(cfg, mode, optimizer, head=head, num_labels=num_labels, lora=lora)
        n_train = grad_el
    wb, sb = weight_element_bytes(precision), state_element_bytes(precision)  # weight and gradient bytes; optimizer state's
    stage = {"none": 0, "zero1": 1, "zero2": 2, "zero3": 3}[sharding_eff]
    N = num_gpus

    def part(elems: int, nbytes: int, sharded_from: int) -> int:
        return nbytes * (_ceil_div(elems, N) if stage >= sharded_from else elems)

    weights = part(n, wb, 3)
    grads = part(grad_el, wb, 2)
    opt = part(opt_el, sb, 1)
    master = part(n_train, 4, 1) if precision in MASTER else 0  # float32 copy of what trains (ZeRO Sec. 3.1)
    saved = activation_memory(cfg, w).total  # the forward's dtype: autocast's (mixed_*), else the weights'
    recompute = recompute_memory(cfg, w) if checkpointing else 0
    peak: tuple[int, str, str, dict[str, int], bool] = (0, "", "", {}, False)
    modelled = with_peak and cfg.num_layers * cfg.inner_group_num <= PEAK_MAX_LAYERS
    if modelled:
        peak = _sharded_peak(cfg, stage, w)
    return TrainingMemory(cfg.name, precision, optimizer, num_gpus, sharding, batch_size, seq_len, n,
                          weights, grads, opt, master, saved + recompute, saved, recompute, mode, head, n_train, *peak[:4],
                          modelled, peak[4])


LOWER_BOUND_MODES = ("full", "frozen-embeddings", "frozen-layers")  # unreplayed moments: lower bounds (peak.py)


def peak_trust(modelled: bool, replayed: bool, mode: str) -> str:
    """How far a step's peak can be trusted, in words (peak.py's module docstring says why)."""
    if not modelled:
        return "not modelled: the sum of the parts"
    if replayed:
        return "replayed op by op (CPU kernels; equals the engine)"
    if mode.split(":")[0] in LOWER_BOUND_MODES:
        return "at least: the forward's and backward's working set is not replayed"
    return ("an estimate, not a bound: the working set is not replayed, and the frozen weights' Linears "
            "are counted as saving their inputs")


def is_lower_bound(peak_is: str) -> bool:
    """Whether a peak_trust verdict makes the peak a lower bound ("at least ..."): said beside the number."""
    return peak_is.startswith("at least")


GATHERED = "gathered unit (ZeRO-3)"  # at_peak key of stage 3's transient full parameters
# the step's categories (step.CATEGORIES) that are parts of the sum (weights, master weights, gradients, optimizer
# state, activations); the others are TrainingMemory.beyond_parts
PARTS_AT_PEAK = ("parameters", "master weights", "gradients", "optimizer state", "saved activations")
_UNIT = re.compile(r"(?:^|\.)(?:layer|layers|albert_layer_groups)\.(\d+)\.")


def gathered_unit_elements(ts: list[Tensor]) -> int:
    """Elements of the largest unit ZeRO-3 / FSDP gathers whole: one layer (its index in the tensor's name:
    encoder.layer.i, transformer.layer.i, layers.i, ALBERT's albert_layer_groups.g), or everything outside
    the layers (embeddings, pooler, head: FSDP's root unit under a per-layer auto-wrap policy)."""
    units: dict[str, int] = {}
    for t in ts:
        m = _UNIT.search(t.name)
        key = f"{m.group(0).strip('.').rsplit('.', 1)[0]}.{m.group(1)}" if m else "root"
        units[key] = units.get(key, 0) + t.numel
    return max(units.values(), default=0)


def _sharded_peak(cfg: ModelConfig, stage: int, w: Workload) -> tuple[int, str, str, dict[str, int], bool]:
    """(peak, phase, moment, at_peak, replayed) of step.step_peak with the ZeRO stage applied to every moment's
    categories, over w.num_gpus."""
    from .peak import step_peak

    N, precision, mode, head, num_labels, lora = w.num_gpus, w.precision, w.mode, w.head, w.num_labels, w.lora
    est = step_peak(cfg, w)
    if stage == 0:
        return est.peak, est.phase, est.moment, dict(est.at_peak), est.replayed
    wb, sb = weight_element_bytes(precision), state_element_bytes(precision)
    sharded = {"optimizer state": 1, "master weights": 1, "gradients": 2, "parameters": 3}
    gathered = 0
    if stage == 3:  # the largest unit's full parameters while it runs, beside its own shard
        gathered = wb * gathered_unit_elements(tensors(cfg, mode, head=head, num_labels=num_labels, lora=lora))
    best: tuple[int, str, str, dict[str, int]] | None = None
    for c in est.candidates:
        # bytes per element of each partitioned buffer: a master step's gradients are 16-bit and float32 copies
        eb = {"optimizer state": sb, "master weights": 4,
              "gradients": wb + (4 if precision in MASTER and c.name == "optimizer step" else 0)}
        at = {k: eb.get(k, wb) * _ceil_div(v // eb.get(k, wb), N) if stage >= sharded.get(k, 9) else v
              for k, v in c.at.items()}
        if stage == 3:
            at[GATHERED] = gathered
        total = sum(at.values())
        if best is None or total > best[0]:
            best = (total, c.phase, c.name, at)
    assert best is not None
    return (*best, est.replayed)
