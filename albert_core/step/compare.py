"""Side-by-side comparison of configs: every ModelConfig field and the key results, with deltas.

compare_table() returns a tidy DataFrame, one row per (item, config): the app shows it one column per
config, the CSV keeps the exact values. Fields are read with dataclasses.fields, so a field added to
ModelConfig (a new family's) shows without a change here. pandas is imported when called.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from ..choices import LoraSpec
from ..config import ConfigError, ModelConfig
from ..estimate.activations import activation_memory
from ..estimate.finetune import trainable
from ..estimate.flops import forward_flops
from ..estimate.params import count_parameters
from ..families import field_applies
from ..replay.symbolic import BYTES
from ..workload import Workload
from .training import training_memory

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Settings:
    """The chosen workload (the sidebar's Memory / Fit planner controls): the second table's settings."""

    batch_size: int = 8  # sequences per GPU
    seq_len: int = 512  # tokens of the training step (clipped to each config's max_position)
    attention: str = "eager"
    checkpointing: bool = False
    precision: str = "mixed_bf16"
    optimizer: str = "adamw"
    num_gpus: int = 1
    sharding: str = "none"
    mode: str = "full"  # fine-tuning mode (finetune.parse_mode; frozen-layers:K clipped to each config's layers)
    head: str = "none"
    num_labels: int = 2
    lora: LoraSpec | None = None  # mode lora: r, alpha, dropout, targets (None: peft's default)

    def describe(self) -> str:
        """The workload in words, once: 'batch 8 × 512 tokens, mixed_bf16, eager attention, adamw, ...'."""
        ckpt = ", checkpointing" if self.checkpointing else ""
        return (f"batch {self.batch_size:,} × {self.seq_len:,} tokens, {self.precision}, {self.attention} attention, "
                f"{self.optimizer}{ckpt}, {self.num_gpus:,} GPU(s), sharding {self.sharding}, {self.fine_tuning()}")

    def fine_tuning(self) -> str:
        """The mode, head and LoRA settings in words: 'LoRA r=8 alpha=8 dropout 0 on query,value, head classification:3'."""
        text = self.mode
        if self.mode == "lora":
            lo = self.lora or LoraSpec()
            on = ",".join(lo.targets) if lo.targets else "peft's default targets"
            text = f"LoRA r={lo.r} alpha={lo.lora_alpha:g} dropout {lo.lora_dropout:g} on {on}"
        head = {"none": "no head", "mlm": "MLM head"}.get(self.head, f"head {self.head}:{self.num_labels}")
        return f"{text}, {head}"

    def mode_for(self, cfg: ModelConfig) -> str:
        """The mode for cfg: frozen-layers:K with K at most cfg's layers (one link, configs of any depth)."""
        if self.mode.startswith("frozen-layers:"):
            return f"frozen-layers:{min(int(self.mode.split(':')[1]), cfg.num_layers)}"
        return self.mode

    def header(self, cfgs: Sequence[ModelConfig]) -> str:
        """The workload table's settings, once, with the configs whose max_position is shorter than seq_len (they
        run at their max_position, and the header says so)."""
        short = [f"{c.name}: {c.max_position:,}" for c in cfgs if c.max_position < self.seq_len]
        clipped = f" (at its max_position where shorter: {'; '.join(short)})" if short else ""
        return f"One training step per GPU, on CUDA: {self.describe()}{clipped}"


# The first table: each config's own facts, every number under these settings (stated once, in OWN_HEADER)
OWN_BATCH, OWN_DTYPE, OWN_ATTENTION = 1, "float32", "eager"
OWN_HEADER = (f"Each config's own facts, at its own max_position: {OWN_BATCH} sequence, {OWN_DTYPE} (4 bytes a weight "
              f"and an activation), {OWN_ATTENTION} attention, a training forward (what it keeps for backward), "
              "no checkpointing")
# (item, unit) of each table's results, in the order shown
OWN = (
    ("total parameters", "parameters"),
    ("embedding share", "%"),
    ("layer share", "%"),
    ("weights", "bytes"),
    ("activations at max_position", "bytes"),
    ("of which attention (seq_len²)", "bytes"),
    ("forward FLOPs per sequence at max_position", "FLOPs"),
)
WORKLOAD = (
    ("trainable parameters", "parameters"),
    ("activations per GPU (saved for backward)", "bytes"),
    ("training step's peak per GPU", "bytes"),
    ("the peak is", ""),
    ("training memory per GPU (sum of parts)", "bytes"),
    ("forward FLOPs per sequence", "FLOPs"),
)
RESULTS = OWN + WORKLOAD
SECTIONS = {"own": OWN, "workload": WORKLOAD}


def own_results(cfg: ModelConfig) -> dict[str, int | float | None]:
    """The config's own numbers at its max_position (OWN_HEADER's settings); None where albert_core does not model
    a number (a family's activations)."""
    c = count_parameters(cfg)
    act: tuple[int | None, int | None] = (None, None)
    try:  # what one training forward at seq_len = max_position keeps for backward (albert_core.estimate.activations)
        a = activation_memory(cfg, Workload(batch_size=OWN_BATCH, seq_len=cfg.max_position, precision=OWN_DTYPE,
                                            attention=OWN_ATTENTION))
        act = (a.total, a.quadratic)
    except ConfigError:  # a family whose activations albert_core does not model: no number rather than a wrong one
        pass
    weights = c.total * BYTES[OWN_DTYPE]  # stored parameters × bytes per element (sharing counted once)
    values = (c.total, c.embedding_pct, c.layers_pct, weights, *act, forward_flops(cfg, cfg.max_position, 1).total)
    return {item: v for (item, _), v in zip(OWN, values, strict=True)}


def workload_results(cfg: ModelConfig, s: Settings) -> dict[str, int | float | str | None]:
    """The config's numbers for one training step under the workload s (exact ints). None where albert_core does
    not model a number or the settings cannot be counted (LoRA without targets where peft has none: the pages
    say why)."""
    mode, lora = s.mode_for(cfg), s.lora if s.mode == "lora" else None
    seq = min(s.seq_len, cfg.max_position)
    train: tuple[int | None, int | None, int | None, str | None, int | None] = (None, None, None, None, None)
    try:
        t = training_memory(cfg, Workload(batch_size=s.batch_size, seq_len=seq, precision=s.precision,
                                          optimizer=s.optimizer, num_gpus=s.num_gpus, sharding=s.sharding,
                                          attention=s.attention, checkpointing=s.checkpointing, mode=mode,
                                          head=s.head, num_labels=s.num_labels, lora=lora))
        train = (t.trainable, t.activations, t.peak if t.peak_modelled else None, t.peak_is, t.total)
    except ValueError:  # ConfigError (not modelled) or a fine-tuning setup that cannot be counted
        try:
            train = (trainable(cfg, mode, head=s.head, num_labels=s.num_labels, lora=lora).trainable,
                     None, None, None, None)
        except ValueError:
            pass
    values = (*train, forward_flops(cfg, seq, 1).total)
    return {item: v for (item, _), v in zip(WORKLOAD, values, strict=True)}


def results(cfg: ModelConfig, s: Settings) -> dict[str, int | float | str | None]:
    """Both tables' numbers of one config: its own facts and the workload's."""
    return {**own_results(cfg), **workload_results(cfg, s)}


def _delta(v: Any, first: Any) -> tuple[Any, float | None]:
    """v - first and the relative change (None when not numbers, or first is 0)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or isinstance(first, bool) \
            or not isinstance(first, (int, float)):
        return None, None
    d = v - first
    return d, (d / first if first else None)


def compare_table(cfgs: Sequence[ModelConfig], settings: Settings | None = None) -> pd.DataFrame:
    """Tidy comparison: columns section, item, unit, config, value, delta, rel_delta, differs.

    section: "field" (ModelConfig's fields) and "own" (OWN: each config at its own max_position, OWN_HEADER's
    settings) make the first table; "workload" (WORKLOAD: one training step under `settings`) the second. No row
    mixes the two tables' settings.

    delta and rel_delta are against the first config (None for text fields); differs says whether the value
    differs from the first config's.
    """
    import pandas as pd

    if not cfgs:
        raise ValueError("compare_table needs at least one config")
    s = settings or Settings()
    rows: list[dict[str, Any]] = []
    first = cfgs[0]
    for f in fields(ModelConfig):
        for cfg in cfgs:
            # another family's own field (bert-large's position_buckets -1) means nothing for it: no value (None)
            v, v0 = (getattr(c, f.name) if field_applies(c.family, f.name) else None for c in (cfg, first))
            d, r = _delta(v, v0) if f.name != "name" and v is not None and v0 is not None else (None, None)
            rows.append(dict(section="field", item=f.name, unit="", config=cfg.name, value=v, delta=d,
                             rel_delta=r, differs=f.name != "name" and v != v0))
    res = [results(c, s) for c in cfgs]
    for section, items in SECTIONS.items():
        for item, unit in items:
            for cfg, got in zip(cfgs, res, strict=True):
                d, rel = _delta(got[item], res[0][item])
                rows.append(dict(section=section, item=item, unit=unit, config=cfg.name, value=got[item], delta=d,
                                 rel_delta=rel, differs=got[item] != res[0][item]))
    cols = {k: [r[k] for r in rows] for k in rows[0]}
    # value and delta stay Python objects: exact ints, not float64
    return pd.DataFrame({k: pd.Series(v, dtype=object if k in ("value", "delta") else None) for k, v in cols.items()})
