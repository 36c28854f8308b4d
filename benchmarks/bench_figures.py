"""How long the pages' figures take to build: the default view's figures, after the server's warm-up, each
st.cache_data entry cleared before a build (what a change of a control costs a page, and its first run).

    python benchmarks/bench_figures.py [--repeats N]

Prints each figure's first build (after serve.warm_up, as a server's first visit has it) and the median of the
next builds. Figures recorded in docs/benchmarks.md (issue 30).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from anywhere without installing

from timing import machine_line, median_seconds  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args()
    logging.disable(logging.WARNING)  # st.cache_data outside a server: "No runtime found"
    import serve

    serve.warm_up()
    from albert_core.presets import DEFAULT_PRESET, PRESETS
    from albert_core.share import CONTROLS, DEFAULT_COMPARE
    from ui import figures

    ctl = {k: c.default for k, c in CONTROLS.items()}
    cfgs = tuple(PRESETS[n] for n in dict.fromkeys((DEFAULT_PRESET, *DEFAULT_COMPARE)))
    builds = {
        "params_shares": lambda: figures.params_shares(cfgs, "Where the parameters sit: shares", highlight=1),
        "params_counts": lambda: figures.params_counts(cfgs, "Where the parameters sit: counts", highlight=1),
        "memory_activations": lambda: figures.memory_activations(cfgs, ctl),
        "memory_training": lambda: figures.memory_training(cfgs, ctl),
    }
    print(machine_line(), f"({len(cfgs)} configs: {', '.join(c.name for c in cfgs)})")
    total_first = total = 0.0
    for name, build in builds.items():
        clear = getattr(figures, name).clear
        clear()
        t = time.perf_counter()
        build()
        first = time.perf_counter() - t
        each = median_seconds(build, args.repeats, setup=clear)
        total_first, total = total_first + first, total + each
        print(f"{name:20s} first {1000 * first:6.1f} ms   then {1000 * each:6.1f} ms (median of {args.repeats})")
    print(f"{'all':20s} first {1000 * total_first:6.1f} ms   then {1000 * total:6.1f} ms")


if __name__ == "__main__":
    main()
