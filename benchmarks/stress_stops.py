"""Stop the warm measurement process's builds many times, at many points, and count how each stop ended.

    python benchmarks/stress_stops.py [--stops 60] [--busy 2]

Each stop: a long build (bert-large, 8 x 512, fake tensors) under a time limit drawn from 0.3-3 s, so the stop lands
in the build, a forward, the backward or the optimizer step; then a tiny build. Counted: stops the process answered
and stayed warm for (what the runner wants), processes that died while unwinding the Stop (torch's SIGABRT,
"terminate called after throwing an instance of 'python_error'", before the Stop was raised only at the engine's
safe points), processes ended after the grace period, and processes retired because a stop left something set.
--busy N runs N busy loops beside it (the failing case of issue 25 was two beside a 2-core machine's tests).
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import subprocess
import sys
import time

sys.path[:0] = [os.path.join(os.path.dirname(__file__), ".."), os.path.join(os.path.dirname(__file__), "..", "tests")]

from test_app_verify import TINY_CFG, request  # noqa: E402

from albert_core.presets import PRESETS  # noqa: E402
from albert_core.processes.parent_queue import Runner  # noqa: E402

MIB = 1 << 20
LONG = request(PRESETS["bert-large"], source="hf", batch_size=8, seq_len=512).to_dict()
WAIT_S = 300


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stops", type=int, default=60)
    p.add_argument("--busy", type=int, default=0, help="busy loops beside the runs")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    rng = random.Random(args.seed)
    busy = [subprocess.Popen(["bash", "-c", "while :; do :; done"]) for _ in range(args.busy)]
    counts: collections.Counter[str] = collections.Counter()
    r = Runner(warm=True)
    r.prewarm()
    t0 = time.perf_counter()
    try:
        for i in range(args.stops):
            tiny = r.submit(request(TINY_CFG).to_dict(), memory_bytes=700 * MIB, timeout_s=WAIT_S)
            r.wait(tiny, WAIT_S)
            assert tiny.state == "done", tiny.message
            pid = r.warm_pid
            limit = round(rng.uniform(0.3, 3.0), 2)
            job = r.submit(LONG, memory_bytes=700 * MIB, timeout_s=limit)
            r.wait(job, WAIT_S)
            if job.state == "done":
                how = "finished before its limit"
            elif r.warm_pid == pid:
                how = "stopped; the process stayed warm"
            else:
                how = f"stopped; the process {r.last_end}"
            counts[how] += 1
            print(f"{i + 1:3d}/{args.stops}  limit {limit:4.2f} s  {job.state:8s} {how}", flush=True)
    finally:
        r.close()
        for b in busy:
            b.kill()
    print(f"\n{args.stops} stops in {time.perf_counter() - t0:.0f} s, {args.busy} busy loop(s) beside:")
    for how, n in counts.most_common():
        print(f"  {n:4d}  {how}")
    return 0 if set(counts) <= {"stopped; the process stayed warm", "finished before its limit"} else 1


if __name__ == "__main__":
    sys.exit(main())
