"""Fit planner: the largest batch and sequence length whose training step fits a memory budget.

What must fit is the training step's peak per GPU (training_memory(...).peak: albert_core.replay.step's largest
moment, sharded as training.py says), not the sum of the parts. The peak is the largest of several moments,
each affine in the batch B and growing in the sequence S (activation bytes are polynomials with
non-negative coefficients, activations.py), so it grows with each but is not one affine function: the
largest batch is a doubling search then a binary search, as is the largest seq_len over 1..max_position.
Each function takes the Workload (albert_core.workload) it plans: the search replaces the batch or the sequence
it varies, every other field (precision, optimizer, GPUs, sharding, attention, checkpointing, device, fine-tuning)
is training_memory's. Exact ints throughout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..config import ModelConfig
from ..workload import Workload
from .gpus import GPUS
from .training import PEAK_MAX_LAYERS, training_memory

MAX_BATCH = 1 << 40  # the batch search stops here (memory that did not grow with the batch: a config error)


def step_bytes(cfg: ModelConfig, w: Workload) -> int:
    """What the planner compares with the budget: the training step's peak per GPU (training_memory's .peak), or
    the sum of the parts beyond training.PEAK_MAX_LAYERS layer applications (TrainingMemory.planned)."""
    return training_memory(cfg, w).planned

if TYPE_CHECKING:
    import pandas as pd


def _budget(budget_bytes: Any, overhead_bytes: int) -> int:
    if isinstance(budget_bytes, bool) or not isinstance(budget_bytes, int) or budget_bytes < 1:
        raise ValueError(f"budget_bytes must be a whole number of bytes of at least 1, got {budget_bytes!r}")
    if isinstance(overhead_bytes, bool) or not isinstance(overhead_bytes, int) or overhead_bytes < 0:
        raise ValueError(f"overhead_bytes must be a whole number of bytes of at least 0, got {overhead_bytes!r}")
    return budget_bytes - overhead_bytes


def max_batch_size(cfg: ModelConfig, budget_bytes: int, w: Workload, *, overhead_bytes: int = 0) -> int:
    """Largest micro-batch per GPU whose training step (w with that batch) fits budget_bytes - overhead_bytes (0: not
    even 1)."""
    budget = _budget(budget_bytes, overhead_bytes)

    def fits(b: int) -> bool:
        return step_bytes(cfg, w.replace(batch_size=b)) <= budget

    if not fits(1):
        return 0
    lo, hi = 1, 2  # fits(lo) holds; the peak grows with B (each moment is affine in B with a positive slope)
    while fits(hi):
        if hi >= MAX_BATCH:
            raise ValueError("memory does not grow with the batch size; cannot plan a batch")
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def max_seq_len(cfg: ModelConfig, budget_bytes: int, w: Workload, *, overhead_bytes: int = 0) -> int:
    """Largest seq_len (at most max_position) whose training step (w with that seq_len) fits; 0 when not even 1
    token does."""
    budget = _budget(budget_bytes, overhead_bytes)

    def fits(s: int) -> bool:
        return step_bytes(cfg, w.replace(seq_len=s)) <= budget

    if not fits(1):
        return 0
    lo, hi = 1, cfg.max_position  # fits(lo) holds
    if fits(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def max_position_that_fits(cfg: ModelConfig, budget_bytes: int, w: Workload, *, overhead_bytes: int = 0,
                           cap: int = 1 << 20) -> int:
    """Largest max_position P whose training step (w) on sequences of P tokens fits (0: not even P = 1).

    Unlike max_seq_len, the position table grows with P (its weights, gradients and optimizer
    state count too): where a config stops fitting as max_position grows. Memory grows with P,
    so a doubling search then a binary search; at most `cap`.
    """
    budget = _budget(budget_bytes, overhead_bytes)

    def fits(p: int) -> bool:
        return step_bytes(cfg.replace(max_position=p), w.replace(seq_len=p)) <= budget

    if not fits(1):
        return 0
    lo, hi = 1, 2  # fits(lo) holds
    while hi <= cap and fits(hi):
        lo, hi = hi, hi * 2
    if hi > cap:
        if fits(cap):
            return cap
        hi = cap  # fits(lo) holds, fits(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def fit_table(cfgs: Any, w: Workload, *, gpus: dict[str, int] | None = None, custom_budget: int | None = None,
              overhead_bytes: int = 0) -> pd.DataFrame:
    """Tidy table, one row per (config, GPU): memory needed for w (needed_bytes: the step's peak; sum_of_parts
    beside it), whether it fits, the largest batch at w's seq_len and the largest seq_len at w's batch; trainable
    parameters of the mode.

    cfgs: a ModelConfig, a list, or a dict name -> ModelConfig. gpus: name -> bytes (default GPUS);
    custom_budget adds a row "custom". seq_len is clipped to each config's max_position.
    """
    import pandas as pd

    if isinstance(cfgs, ModelConfig):
        cfgs = [cfgs]
    items = list(cfgs.items()) if isinstance(cfgs, dict) else [(c.name, c) for c in cfgs]
    table = dict(GPUS if gpus is None else gpus)
    if custom_budget is not None:
        _budget(custom_budget, 0)
        table["custom"] = custom_budget
    rows = []
    for name, cfg in items:
        s = min(w.seq_len, cfg.max_position)
        ws = w.replace(seq_len=s)
        t = training_memory(cfg, ws)
        need = t.planned
        for gpu, mem in table.items():
            rows.append({
                "config": name, "gpu": gpu, "gpu_bytes": mem, "seq_len": s, "batch_size": w.batch_size,
                "needed_bytes": need, "sum_of_parts": t.total,
                "peak_phase": t.peak_phase or f"not modelled beyond {PEAK_MAX_LAYERS} layers: planned on the sum",
                "peak_is": t.peak_is,
                "trainable": t.trainable, "parameters": t.parameters, "fits": need <= mem - overhead_bytes,
                "max_batch_size": max_batch_size(cfg, mem, ws, overhead_bytes=overhead_bytes),
                "max_seq_len": max_seq_len(cfg, mem, ws, overhead_bytes=overhead_bytes),
            })
    df = pd.DataFrame(rows)
    return df.astype({k: object for k in ("gpu_bytes", "needed_bytes", "sum_of_parts", "trainable", "parameters",
                                          "max_batch_size", "max_seq_len")})
