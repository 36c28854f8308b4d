"""Render time of each page in Streamlit's AppTest, after warm-up (target: median under 300 ms).

    python benchmarks/bench_pages.py [--runs 15]

Each page is opened once (warm-up: imports, st.cache_data filled), then rerun --runs times with the
same view; the script also times a rerun after a changed control (a cache miss on that page).
The Verify page is timed without pressing its button (building and measuring a model is a deliberate
action, timed by albert_core's own benchmarks). Figures are recorded in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PAGES = ("overview", "parameters", "memory", "fit", "compute", "verify")
# a control per page whose change forces new albert_core calls (cache miss)
CHANGE = {
    "parameters": ("radio", "ctl.sweep", ["num_layers", "vocab_size"]),
    "memory": ("number_input", "ctl.batch_size", [3, 5]),
    "fit": ("number_input", "ctl.num_gpus", [2, 4]),
    "compute": ("number_input", "ctl.flops_seq_len", [256, 384]),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    t = time.perf_counter()
    at = AppTest.from_file(APP, default_timeout=120).run()
    print(f"app start (imports, first run of Overview): {1000 * (time.perf_counter() - t):.0f} ms")
    print(f"{'page':<12}{'first ms':>9}{'median ms':>10}{'min ms':>9}{'max ms':>9}{'changed control ms':>20}")
    for page in PAGES:
        t = time.perf_counter()
        at.switch_page(f"pages/{page}.py").run()  # warm-up: the first visit fills the caches
        first = 1000 * (time.perf_counter() - t)
        assert not at.exception, [e.message for e in at.exception]
        at.run()
        times = []
        for _ in range(a.runs):
            t = time.perf_counter()
            at.run()
            times.append(1000 * (time.perf_counter() - t))
        changed = ""
        if page in CHANGE:
            kind, key, values = CHANGE[page]
            ct = []
            for v in values:
                getattr(at, kind)(key=key).set_value(v)
                t = time.perf_counter()
                at.run()
                ct.append(1000 * (time.perf_counter() - t))
            changed = f"{statistics.median(ct):.0f}"
        print(f"{page:<12}{first:>9.0f}{statistics.median(times):>10.0f}{min(times):>9.0f}{max(times):>9.0f}{changed:>20}")


if __name__ == "__main__":
    main()
