"""Training memory per GPU: weights, gradients, optimizer state, master weights, activations.

Exact ints; the parts sum to the total. Parameters are the *stored* ones (count_parameters), so
cross-layer sharing cuts weights, gradients, optimizer state and master weights; activations are
per layer *application* and sharing leaves them alone (activations.py).

Precisions (bytes per parameter for weights / gradients / master weights):
- "float32": 4 / 4 / 0, optimizer state in float32.
- "bfloat16", "float16": the model cast to 16 bits ("pure" 16-bit training): 2 / 2 / 0, optimizer
  state in the parameter dtype (torch.optim creates it with zeros_like(param)).
- "mixed_bf16", "mixed_fp16": mixed-precision training as in Micikevicius et al. 2018 and the ZeRO
  paper's accounting (Rajbhandari et al. 2020, Sec. 3.1: 2Ψ + 2Ψ + KΨ, K = 12 for Adam): 16-bit
  weights and gradients, a float32 master copy (4Ψ) and float32 optimizer state. The forward runs
  the 16-bit model, so activations are those of dtype "bfloat16"/"float16". (torch.autocast with
  float32 parameters instead keeps 4Ψ float32 weights and 4Ψ float32 gradients plus 2Ψ cached
  16-bit copies: activation_memory(dtype="mixed_bf16") models that forward.)

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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .activations import DEFAULT_DEVICE, activation_memory, recompute_memory
from .config import ModelConfig, require_choice
from .params import count_parameters, stored_copies

if TYPE_CHECKING:
    import pandas as pd

PRECISIONS = ("float32", "bfloat16", "float16", "mixed_bf16", "mixed_fp16")
OPTIMIZERS = ("adamw", "sgd", "adafactor")
SHARDINGS = ("none", "zero1", "zero2", "zero3", "fsdp")
_ACT_DTYPE = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16",
              "mixed_bf16": "bfloat16", "mixed_fp16": "float16"}


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


def training_memory(cfg: ModelConfig, *, batch_size: int, seq_len: int, precision: str = "mixed_bf16",
                    optimizer: str = "adamw", num_gpus: int = 1, sharding: str = "none",
                    attention: str = "sdpa", checkpointing: bool = False,
                    device: str = DEFAULT_DEVICE) -> TrainingMemory:
    """Memory per GPU of one training step of cfg's base model (see the module docstring)."""
    require_choice("precision", precision, PRECISIONS)
    require_choice("optimizer", optimizer, OPTIMIZERS)
    require_choice("sharding", sharding, SHARDINGS)
    if not isinstance(num_gpus, int) or isinstance(num_gpus, bool) or num_gpus < 1:
        raise ValueError(f"num_gpus must be a whole number of at least 1, got {num_gpus!r}")
    if sharding != "none" and num_gpus == 1:
        sharding_eff = "none"  # nothing to partition over
    else:
        sharding_eff = "zero3" if sharding == "fsdp" else sharding
    n = count_parameters(cfg).total
    wb = 4 if precision == "float32" else 2  # weight and gradient bytes
    sb = 2 if precision in ("bfloat16", "float16") else 4  # optimizer state bytes
    mixed = precision.startswith("mixed")
    stage = {"none": 0, "zero1": 1, "zero2": 2, "zero3": 3}[sharding_eff]
    N = num_gpus

    def part(elems: int, nbytes: int, sharded_from: int) -> int:
        return nbytes * (_ceil_div(elems, N) if stage >= sharded_from else elems)

    weights = part(n, wb, 3)
    grads = part(n, wb, 2)
    opt = part(optimizer_state_elements(cfg, optimizer), sb, 1)
    master = part(n, 4, 1) if mixed else 0
    dt = _ACT_DTYPE[precision]
    saved = activation_memory(cfg, batch_size=batch_size, seq_len=seq_len, dtype=dt, attention=attention,
                              checkpointing=checkpointing, device=device).total
    recompute = recompute_memory(cfg, batch_size=batch_size, seq_len=seq_len, dtype=dt, attention=attention,
                                 device=device) if checkpointing else 0
    return TrainingMemory(cfg.name, precision, optimizer, num_gpus, sharding, batch_size, seq_len, n,
                          weights, grads, opt, master, saved + recompute, saved, recompute)
