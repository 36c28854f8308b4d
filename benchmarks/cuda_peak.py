"""Peak CUDA memory of a real training step against training_memory, where a GPU exists.

    python benchmarks/cuda_peak.py

For 3 presets: torch.cuda.max_memory_allocated over forward + backward + AdamW step of HF's
model (albert_core.engine.measure.measure_cuda_peak), beside training_memory(..., device="cuda") with the
same precision. The measured peak also holds what training_memory leaves out (backward temporaries,
gradients of activations, the allocator's rounding), so expect it somewhat above the estimate.
Without CUDA it says so and exits 0. Figures go in docs/memory.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RUNS = [  # (preset, batch, seq_len, precision, attention)
    ("bert-base", 8, 512, "float32", "eager"),
    ("albert-base", 8, 512, "bfloat16", "sdpa"),
    ("bert-large", 4, 512, "bfloat16", "eager"),
]


def main() -> None:
    from albert_core.engine.measure import cuda_available, measure_cuda_peak
    from albert_core.presets import PRESETS
    from albert_core.step.training import training_memory
    from albert_core.units import format_bytes
    from albert_core.workload import Workload

    if not cuda_available():
        print("No CUDA device is available on this machine: nothing measured. "
              "Run this script where torch.cuda.is_available() is True.")
        return
    import torch

    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    for name, b, s, precision, att in RUNS:
        cfg = PRESETS[name]
        w = Workload(batch_size=b, seq_len=s, precision=precision, optimizer="adamw", attention=att, device="cuda")
        r = measure_cuda_peak(cfg, w)
        est = training_memory(cfg, w)
        print(f"{name:12s} b={b} s={s} {precision:8s} {att:5s} measured peak {format_bytes(r['peak']):>11s} "
              f"estimate {format_bytes(est.total):>11s} ratio {r['peak'] / est.total:.3f} "
              f"(weights measured {format_bytes(r['weights'])}, after forward {format_bytes(r['after_forward'])})")


if __name__ == "__main__":
    main()
