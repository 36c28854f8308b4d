"""The engine's time per preset at its own max_position: fake tensors, batch 1, all three measurements.

For each preset: seconds of engine.measure (build once, the saved bytes of a training forward, the eval
forward's peak where modelled, one training step's peak; AdamW, float32, eager), median of --repeat runs
after one warm-up, and the process's peak resident memory (VmHWM) at the end, to show that nothing of
the model's size is ever allocated.
Usage: .venv/bin/python benchmarks/bench_engine.py [--repeat 3] [--presets bert-base,ModernBERT-large]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import machine_line  # noqa: E402

from albert_core.engine import core as engine  # noqa: E402
from albert_core.engine.measure import default_kind, maker  # noqa: E402
from albert_core.presets import PRESETS  # noqa: E402
from albert_core.processes.child_request import _inference_modelled  # noqa: E402
from albert_core.processes.limits import _peak_rss  # noqa: E402
from albert_core.units import format_bytes  # noqa: E402
from albert_core.workload import Workload


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--presets", default=",".join(PRESETS))
    args = ap.parse_args()
    print(machine_line())
    print("| preset | seq_len | parameters | saved (training forward) | training step peak | engine s (median) |")
    print("|---|---|---|---|---|---|")
    for name in args.presets.split(","):
        cfg = PRESETS[name]
        kind = default_kind(cfg)
        what = ("saved", "inference", "step") if _inference_modelled(cfg) else ("saved", "step")
        run = engine.Run(Workload(1, cfg.max_position, "float32", "eager", device="cpu"))
        make = maker(cfg, kind, "eager")
        engine.measure(make, cfg.vocab_size, run, what)  # warm-up
        times, r = [], None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            r = engine.measure(make, cfg.vocab_size, run, what)
            times.append(time.perf_counter() - t0)
        assert r is not None and r.step is not None and r.saved is not None
        print(f"| {name} | {cfg.max_position:,} | {r.parameters:,} | {format_bytes(r.saved)} | "
              f"{format_bytes(r.step.peak)} ({r.step.phase}) | {statistics.median(times):.2f} |", flush=True)
    print(f"\nprocess peak resident memory (VmHWM): {format_bytes(_peak_rss())}")


if __name__ == "__main__":
    main()
