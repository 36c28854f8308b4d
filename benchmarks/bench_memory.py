"""Speed of the memory model: a max_position sweep 64..8,192 (step 64) for every preset.

    python benchmarks/bench_memory.py [--repeats N]

Prints medians (target: the whole sweep, 7 presets × 128 lengths, into a tidy DataFrame in < 50 ms; also
for the presets of every family),
cold (the per-config replay cache cleared) and warm, plus activation_memory per call and the fit
table. Figures are recorded in docs/memory.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere without installing

from timing import machine_line, median_seconds  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()

    from albert_core.estimate import activations
    from albert_core.estimate.activations import activation_memory, activation_sweep
    from albert_core.presets import PRESETS
    from albert_core.step.fit import fit_table
    from albert_core.workload import Workload

    print(machine_line())
    every = {n: c.replace(max_position=8192) for n, c in PRESETS.items()}
    seqs = list(range(64, 8192 + 1, 64))
    for label, cfgs in (("BERT/ALBERT presets", {n: c for n, c in every.items() if c.family in ("bert", "albert")}),
                        ("presets of every family", every)):
        rows = sweep_timings(activations, activation_sweep, cfgs, seqs, args.repeats, label)
    print(f"  rows: {len(rows)}, bytes dtype: {rows['bytes'].dtype}, max {max(rows['bytes']):,} B (batch 8, bf16, eager)")

    for name in ("bert-base", "albert-xxlarge"):
        cfg = every[name]
        t = median_seconds(
            lambda c=cfg: activation_memory(
                c, Workload(batch_size=8, seq_len=512, precision="float32", attention="eager")
            ),
            args.repeats,
            setup=activations._CACHE.clear,
        )
        tw = median_seconds(
            lambda c=cfg: activation_memory(
                c, Workload(batch_size=8, seq_len=512, precision="float32", attention="eager")
            ),
            args.repeats,
        )
        print(f"\nactivation_memory({name}) cold {1e6 * t:8.1f} us, warm {1e6 * tw:8.1f} us")
        t = median_seconds(
            lambda c=cfg: activation_memory(
                c, Workload(batch_size=8, seq_len=512, precision="float32", attention="eager"), training=False
            ),
            args.repeats,
            setup=activations._CACHE.clear,
        )
        print(f"activation_memory({name}, training=False) cold {1e6 * t:8.1f} us")

    t = median_seconds(lambda: fit_table(PRESETS, Workload(batch_size=8, seq_len=512)), max(3, args.repeats // 3))
    print(f"\nfit_table: {len(PRESETS)} presets × 7 GPUs (max batch + max seq_len each) median {1000 * t:7.1f} ms")


def sweep_timings(activations, activation_sweep, cfgs, seqs, repeats, label):  # noqa: ANN001, ANN201
    """Median time of one activation_sweep over cfgs × seqs, cold (replay cache cleared) and warm."""
    from albert_core.workload import Workload

    out = {}

    def run() -> None:
        out["rows"] = activation_sweep(cfgs, seqs, Workload(batch_size=8, precision="bfloat16", attention="eager"))

    print(f"\nactivation_sweep: {len(cfgs)} {label} × {len(seqs)} seq_lens (64..8192 step 64), tidy DataFrame")
    for name, setup in (("cold (replay cache cleared)", activations._CACHE.clear), ("warm", None)):
        t = median_seconds(run, repeats, setup=setup)
        print(f"  {name:30s} median {1000 * t:7.2f} ms   (target < 50 ms)")
    return out["rows"]


if __name__ == "__main__":
    main()
