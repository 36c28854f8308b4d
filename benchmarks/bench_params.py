"""Speed of the parameter model: count_parameters vs building the model, and a 10,000-config sweep.

    python benchmarks/bench_params.py [--repeats N]

Prints medians and ratios (targets: counting >= 500x faster than building HF's model on the meta
device; 10,000 configs into a DataFrame in < 50 ms). Figures are recorded in docs/parameters.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere without installing

from timing import machine_line, median_seconds  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()

    from albert_core.engine.models import hf_model, reference_model
    from albert_core.estimate.params import count_parameters
    from albert_core.estimate.sweeps import grid, sweep
    from albert_core.presets import PRESETS

    print(machine_line())
    print("\ncount_parameters vs building on the meta device (median seconds)")
    for name in ("albert-base", "bert-base", "bert-large", "albert-xxlarge"):
        cfg = PRESETS[name]
        t_count = median_seconds(lambda cfg=cfg: count_parameters(cfg), args.repeats, inner=200)
        t_hf = median_seconds(lambda cfg=cfg: hf_model(cfg, device="meta"), args.repeats)
        t_ref = median_seconds(lambda cfg=cfg: reference_model(cfg, device="meta"), args.repeats)
        print(f"  {name:<15} count {t_count * 1e6:8.1f} us   HF meta {t_hf * 1e3:8.2f} ms ({t_hf / t_count:7.0f}x)"
              f"   reference meta {t_ref * 1e3:7.2f} ms ({t_ref / t_count:6.0f}x)")

    print("\nevery family: count_parameters vs Hugging Face's AutoModel on the meta device (median)")
    from albert_core.presets import PRESET_FAMILIES

    for fam, names in PRESET_FAMILIES.items():
        for name in names:
            cfg = PRESETS[name]
            t_count = median_seconds(lambda cfg=cfg: count_parameters(cfg), args.repeats, inner=200)
            t_hf = median_seconds(lambda cfg=cfg: hf_model(cfg, device="meta"), max(3, args.repeats // 3))
            print(f"  {fam:<11} {name:<29} count {t_count * 1e6:6.1f} us   HF meta {t_hf * 1e3:7.2f} ms"
                  f" ({t_hf / t_count:7,.0f}x)")

    print("\nsweeps into a DataFrame (median ms)")
    base = PRESETS["albert-base"]
    cases = {
        "sweep vocab_size, 10,000 values (all valid)": lambda: sweep(base, "vocab_size", np.arange(1000, 11000)),
        "grid vocab 100 x layers 100 (10,000 rows)": lambda: grid(base, vocab_size=range(1000, 101_000, 1000),
                                                                  num_layers=range(1, 101)),
        "grid hidden 100 x layers 100 (67% invalid)": lambda: grid(base, hidden_dim=range(64, 6464, 64),
                                                                   num_layers=range(1, 101)),
        "sweep hidden_dim, 10,000 values, huge (Python ints)": lambda: sweep(
            base.replace(vocab_size=10**7, num_layers=100_000, inner_group_num=1024, sharing="none", num_heads=1,
                         intermediate_dim=8 * 2**20),
            "hidden_dim", range(1, 10_001)),
    }
    for label, fn in cases.items():
        t = median_seconds(fn, args.repeats)
        print(f"  {label:<52} {t * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
