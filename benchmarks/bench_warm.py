"""Verify's press -> result, cold (a fresh process per request) vs warm (the warm measurement process, issue 27),
at the runner's API (albert_core.processes.parent_queue.Runner: what ui/jobs.py calls; no browser, no page), and the warm
process's resident memory at rest and after the runs.

The five cases of issue 27 (bert-base at Verify's defaults 2 x 64, xlm-roberta-large 8 x 512, deberta-v3-large
4 x 512, ModernBERT-large 1 x 8,192, albert-xxlarge 8 x 512; fake tensors, the source the page picks), each
--repeats times, round robin; then the Memory page's "Measure N points in PyTorch" at its default view (the
request captured from the page in AppTest). Every time is from submit() to the job's end: the queue, the
child's imports where there are any, the build and the engine's three measurements, the JSON back.
Each job gets the budget the app gives it (ui/jobs.budget_bytes: the memory free now plus what the warm
process holds).

--cgroup-mb N: this process (the server's stand-in: Python with albert_core, Streamlit and AppTest loaded)
and every child it starts run inside a new cgroup-v1 memory cgroup with that limit (as root, under this
process's own memory cgroup, as benchmarks/bench_server_memory.py makes it); its peak, failures and OOM kills
are reported.
Usage: .venv/bin/python benchmarks/bench_warm.py [--repeats 3] [--cgroup-mb 1024] [--only warm|cold]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from cgroup import Cgroup, rss  # noqa: E402
from timing import machine_line  # noqa: E402

from albert_core.engine.measure import default_kind  # noqa: E402
from albert_core.engine.types import Request  # noqa: E402
from albert_core.presets import PRESETS  # noqa: E402
from albert_core.processes.parent_memory import available_bytes  # noqa: E402
from albert_core.processes.parent_queue import Runner  # noqa: E402
from albert_core.workload import Workload  # noqa: E402

MIB = 1 << 20
CASES = [("bert-base", 2, 64), ("xlm-roberta-large", 8, 512), ("deberta-v3-large", 4, 512),
         ("ModernBERT-large", 1, 8192), ("albert-xxlarge", 8, 512)]



def request(name: str, batch: int, seq: int) -> dict:
    cfg = PRESETS[name]
    w = Workload(batch, seq, "float32", "eager", device="cpu", optimizer="adamw")
    return Request(w, config=cfg, source=default_kind(cfg)).to_dict()


def memory_page_points() -> dict:
    """The request the Memory page's "Measure N points in PyTorch" submits at its default view (AppTest)."""
    from streamlit.testing.v1 import AppTest

    from ui import jobs

    captured: list[dict] = []
    jobs.start = lambda name, key, extra, req: captured.append(req.to_dict())  # type: ignore[assignment]  # record only
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/memory.py").run()
    button = next(b for b in at.button if b.key == "memory_measure")
    button.click().run()
    return captured[0]


def press(r: Runner, req: dict) -> tuple[float, dict]:
    """One press, made once the runner is idle (the warm process settles after answering; a person's next press
    comes seconds after the last result): the time from submit to the job's end."""
    assert r.wait_until(r.idle, 900), "the runner never came to rest"
    t = time.monotonic()
    job = r.submit(req, memory_bytes=available_bytes() + r.reclaimable_bytes(), timeout_s=600)
    assert r.wait(job, 900), "no result in 900 s"
    took = time.monotonic() - t
    if job.state != "done":
        return took, {"error": job.message}
    return took, job.result or {}


def outcome(res: dict) -> str:
    if "error" in res:
        return "ERROR " + res["error"][:120]
    if "points" in res:
        return f"{len(res['points'])} points"
    m = res.get("measurement")
    if not m:
        return "not measured: " + str(res.get("measure_error"))[:120]
    return "estimate = measured" if m["estimate"] == m["total"] else "ESTIMATE DIFFERS"


def series(r: Runner, label: str, repeats: int, points: dict) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall seconds and the measuring process's CPU seconds (a cost the machine's load inflates less) per case."""
    times: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    for i in range(repeats):
        for key, req in [*((f"{n} {b} x {s}", request(n, b, s)) for n, b, s in CASES),
                         (f"Memory page: {len(points['points'])} points", points)]:
            took, res = press(r, req)
            times.setdefault(key, []).append(took)
            cpu.setdefault(key, []).append(res.get("cpu_seconds", float("nan")))
            extra = (f", process build {res['process']['build']}, rest {res['process']['rss'] / MIB:,.0f} MiB"
                     if "process" in res else "")
            print(f"  {label} {i + 1}: {key}: {took:.2f} s wall, {res.get('cpu_seconds', float('nan')):.2f} s CPU, "
                  f"{outcome(res)}, peak {res.get('peak_rss', 0) / MIB:,.0f} MiB{extra}", flush=True)
    return times, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cgroup-mb", type=int, default=None)
    ap.add_argument("--only", choices=("warm", "cold"), default=None)
    args = ap.parse_args()
    print(machine_line(), "load average", open("/proc/loadavg").read().split()[:3])
    cgroup = Cgroup(args.cgroup_mb, "warm") if args.cgroup_mb else None
    if cgroup:
        cgroup.enter()
    try:
        points = memory_page_points()
        print(f"this process (the server's stand-in): {rss() / MIB:,.0f} MiB; free for a build: "
              f"{available_bytes() / MIB:,.0f} MiB\n")
        results: dict[str, dict[str, list[float]]] = {}
        if args.only != "warm":
            print("cold: a fresh `python -m albert_core.processes.child_request` per press (ALBERT_EXPLORER_WARM_WORKER=0); load average",
                  open("/proc/loadavg").read().split()[:3])
            results["cold wall"], results["cold CPU"] = series(Runner(warm=False), "cold", args.repeats, points)
        if args.only != "cold":
            print("\nwarm: one `python -m albert_core.processes.child_warm`; load average", open("/proc/loadavg").read().split()[:3])
            r = Runner(warm=True)
            r.prewarm()
            assert r.wait_until(lambda: r.warm_pid is not None, 60)
            first, res = press(r, request("bert-base", 2, 64))
            start = res["process"]["start"]
            print(f"  started at t=0; first result (bert-base 2 x 64, waiting for its imports) at {first:.2f} s; "
                  f"ready after {start['seconds']:.2f} s (interpreter and torch {start['import_cpu_seconds']:.2f} s "
                  f"CPU, transformers and the families' model classes {start['warm_up_seconds']:.2f} s wall, "
                  f"{start['warm_up_cpu_seconds']:.2f} s CPU); at rest {r.reclaimable_bytes() / MIB:,.0f} MiB",
                  flush=True)
            rest = r.reclaimable_bytes()
            results["warm wall"], results["warm CPU"] = series(r, "warm", args.repeats, points)
            print(f"  warm process: {rest / MIB:,.0f} MiB at rest before the runs, {r.reclaimable_bytes() / MIB:,.0f} "
                  f"MiB after them ({(r.reclaimable_bytes() - rest) / MIB:+,.0f} MiB); this process "
                  f"{rss() / MIB:,.0f} MiB; together {(rss() + r.reclaimable_bytes()) / MIB:,.0f} MiB; "
                  f"{r.warm_starts} warm process(es) started")
            r.close()
        print("\nload average at the end", open("/proc/loadavg").read().split()[:3])
        print("\n| case | " + " | ".join(f"{k} median (min-max)" for k in results) + " |")
        print("|---|" + "---|" * len(results))
        for key in next(iter(results.values())):
            cells = [f"{statistics.median(v[key]):.2f} s ({min(v[key]):.2f}-{max(v[key]):.2f})" for v in results.values()]
            print(f"| {key} | " + " | ".join(cells) + " |")
        for k, v in results.items():
            cases = [t for key, ts in v.items() if not key.startswith("Memory") for t in ts]
            if not cases or cases[0] != cases[0]:  # nan: no CPU figure
                continue
            print(f"{k}: the five cases' median {statistics.median(cases):.2f} s, max {max(cases):.2f} s")
    finally:
        if cgroup:
            print(cgroup.report())
            cgroup.leave()


if __name__ == "__main__":
    main()
