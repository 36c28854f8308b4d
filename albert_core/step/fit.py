"""Fit planner: the largest batch and sequence length whose training step fits a memory budget.

What must fit is the training step's peak per GPU (training_memory(...).peak: albert_core.step.peak's largest
moment, sharded as training.py says), not the sum of the parts. The peak is the largest of several moments,
each affine in the batch B and growing in the sequence S (activation bytes are polynomials with
non-negative coefficients, activations.py), so it grows with each but is not one affine function. Every search
is _largest: the secant through the last two sizes that fit points at the answer (exactly, while both sit on the
peak's last linear piece), and only that the bytes never shrink as the size grows makes the answer exact.
Each function takes the Workload (albert_core.workload) it plans: the search replaces the batch or the sequence
it varies, every other field (precision, optimizer, GPUs, sharding, attention, checkpointing, device, fine-tuning)
is training_memory's. Exact ints throughout.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..config import ModelConfig
from ..estimate.gpus import GPUS
from ..workload import Workload
from .training import PEAK_MAX_LAYERS, training_memory

GROW = 64  # a search that knows no size too large yet grows its size at most this many times per probe
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


def _largest(size_bytes: Callable[[int], int], budget: int, limit: int, first: int = 2) -> int:
    """The largest size n in 1..limit with size_bytes(n) <= budget (0: not even 1). size_bytes never shrinks as n
    grows, and that is all the answer's exactness rests on: each probe narrows [lo, hi), where lo fits and hi does
    not, to the last size. first: the size probed after 1.

    Where to probe comes from the shape of the step's bytes (module docstring). The secant through the last two
    sizes that fit, extended to the budget, lands on the answer when both sit on the peak's last linear piece (the
    batch: each moment is affine in B); where the bytes are convex (the sequence: S and S² terms) it lands above the
    answer, and the chord from lo to that hi lands below it. The allocator's 512-byte rounding (step/peak.py) moves
    either by a size or two. Safeguards bound the probes at about twice a binary search's: before a size is known
    not to fit, the size grows at most GROW times per probe; while hi is over 4 lo, the probe is at least their
    geometric mean; and a probe that did not halve [lo, hi) is followed by a bisection.
    The Fit page's default plan (four configs, 8 x 512 tokens, mixed bf16, AdamW, an A100 80 GB) takes 72 probes
    instead of the doubling and binary searches' 156, with the same answers (tests/test_fit.py); bert-base's largest
    batch takes 5 of them (16 before), its longest max_position 11 (24).
    """
    lo, v_lo = 1, size_bytes(1)
    if v_lo > budget:
        return 0
    prev: tuple[int, int] | None = None  # the size that fit before lo, and its bytes: the secant's other point
    hi: int | None = None  # the smallest size known not to fit (None: none yet)
    v_hi = 0  # its bytes
    width = 0  # hi - lo when the last probe between them was chosen (0: none yet)
    short = False  # the last secant's size fit, and so did the size after it: the bytes grow slower than it assumed
    while hi is None or hi - lo > 1:
        if lo == limit:
            return lo
        top = limit if hi is None else hi - 1  # the largest size still open
        secant = (lo + (budget - v_lo) * (lo - prev[0]) // (v_lo - prev[1])
                  if prev is not None and v_lo > prev[1] else None)
        if hi is None:  # growing
            if prev is None:
                guess = first
            elif secant is None or (short and secant < 2 * lo):
                guess = 2 * lo  # no secant (the bytes did not grow), or it fell short: doubling
            else:
                guess = min(secant, GROW * lo)
        else:  # narrowing
            chord = lo + (budget - v_lo) * (hi - lo) // (v_hi - v_lo)
            far = hi > 4 * lo  # a convex chord may crawl up from lo
            mid = math.isqrt(lo * hi) if far else (lo + hi) // 2
            if width and 2 * (hi - lo) > width:
                guess = mid
            elif far:
                guess = max(chord, mid)
            else:
                guess = secant if secant is not None and secant < hi else chord
            width = hi - lo
        guess = min(max(guess, lo + 1), top)
        v = size_bytes(guess)
        if v > budget:
            hi, v_hi = guess, v
            continue
        prev, lo, v_lo, short = (lo, v_lo), guess, v, False
        if guess == secant and guess < top:  # at the secant's answer, the next size settles it
            v_next = size_bytes(guess + 1)
            if v_next > budget:
                return guess
            prev, lo, v_lo, short = (guess, v), guess + 1, v_next, True
    return lo


def max_batch_size(cfg: ModelConfig, budget_bytes: int, w: Workload, *, overhead_bytes: int = 0) -> int:
    """Largest micro-batch per GPU whose training step (w with that batch) fits budget_bytes - overhead_bytes (0: not
    even 1)."""
    budget = _budget(budget_bytes, overhead_bytes)
    b = _largest(lambda b: step_bytes(cfg, w.replace(batch_size=b)), budget, MAX_BATCH)
    if b == MAX_BATCH:
        raise ValueError("memory does not grow with the batch size; cannot plan a batch")
    return b


def max_seq_len(cfg: ModelConfig, budget_bytes: int, w: Workload, *, overhead_bytes: int = 0) -> int:
    """Largest seq_len (at most max_position) whose training step (w with that seq_len) fits; 0 when not even 1
    token does."""
    budget = _budget(budget_bytes, overhead_bytes)
    return _largest(lambda s: step_bytes(cfg, w.replace(seq_len=s)), budget, cfg.max_position,
                    first=cfg.max_position)  # the whole table first: it is what most plans use


def max_position_that_fits(cfg: ModelConfig, budget_bytes: int, w: Workload, *, overhead_bytes: int = 0,
                           cap: int = 1 << 20) -> int:
    """Largest max_position P whose training step (w) on sequences of P tokens fits (0: not even P = 1).

    Unlike max_seq_len, the position table grows with P (its weights, gradients and optimizer
    state count too): where a config stops fitting as max_position grows. Memory grows with P; at most `cap`.
    """
    budget = _budget(budget_bytes, overhead_bytes)
    return _largest(lambda p: step_bytes(cfg.replace(max_position=p), w.replace(seq_len=p)), budget, cap)


def fit_table(cfgs: Any, w: Workload, *, gpus: dict[str, int] | None = None, custom_budget: int | None = None,
              overhead_bytes: int = 0) -> pd.DataFrame:
    """Tidy table, one row per (config, GPU): memory needed for w (needed_bytes: the step's peak; sum_of_parts
    beside it; beyond_parts and beyond_parts_bytes: what the peak holds that no part has, TrainingMemory.beyond_parts),
    whether it fits, the largest batch at w's seq_len and the largest seq_len at w's batch; trainable
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
                "beyond_parts": "; ".join(t.beyond_parts), "beyond_parts_bytes": sum(t.beyond_parts.values()),
                "trainable": t.trainable, "parameters": t.parameters, "fits": need <= mem - overhead_bytes,
                "max_batch_size": max_batch_size(cfg, mem, ws, overhead_bytes=overhead_bytes),
                "max_seq_len": max_seq_len(cfg, mem, ws, overhead_bytes=overhead_bytes),
            })
    df = pd.DataFrame(rows)
    return df.astype({k: object for k in ("gpu_bytes", "needed_bytes", "sum_of_parts", "beyond_parts_bytes",
                                          "trainable", "parameters",
                                          "max_batch_size", "max_seq_len")})
