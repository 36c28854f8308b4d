"""Verify on a fresh deploy (issue 52): the server's stand-in (this process: Python with albert_core, Streamlit and
the app's modules loaded, about as resident as `streamlit run serve.py` after its warm-up) in a new 1 GiB memory
cgroup, the page cache dropped first (as after a container starts: torch's files not yet read), the warm
measurement process started as the server starts it (Runner.prewarm), then issue 52's five real-sized cases
pressed one after another once it is ready, each with the budget the app gives a press (ui/jobs.budget_bytes:
the memory free as the kernel counts it, plus what the warm process holds). --runs N repeats the whole deploy N
times (a new cgroup, cache dropped, a new warm process each time).

Reported per press: press -> result (wall), the engine's own seconds (build, inference forward, training step)
and what is left (the queue, JSON both ways); per deploy: how long the warm process took to be ready, the cgroup's
usage split into resident and page cache (inactive and active file pages) at rest, at its peak and after, and
this process's and the warm process's resident memory before and after the five presses.
Usage (root; Linux with cgroup v1's memory controller): .venv/bin/python benchmarks/bench_fresh_deploy.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from cgroup import Cgroup, rss  # noqa: E402

CASES = [("bert-base", 2, 64), ("xlm-roberta-large", 8, 512), ("deberta-v3-large", 4, 512),
         ("ModernBERT-large", 1, 8192), ("albert-xxlarge", 8, 512)]  # bench_warm.CASES, imported after entering

MIB = 1 << 20


def drop_page_cache() -> bool:
    subprocess.run(["sync"], check=False)
    try:
        Path("/proc/sys/vm/drop_caches").write_text("1\n")
        return True
    except OSError:
        return False


def split(cg: Cgroup) -> str:
    stat = dict(line.split() for line in cg.read("memory.stat").splitlines())
    usage = int(cg.read("memory.usage_in_bytes"))
    inactive, active = int(stat["total_inactive_file"]), int(stat["total_active_file"])
    return (f"usage {usage / MIB:,.0f} MiB = resident {int(stat['total_rss']) / MIB:,.0f} + page cache "
            f"{int(stat['total_cache']) / MIB:,.0f} (inactive file {inactive / MIB:,.0f}, active file "
            f"{active / MIB:,.0f}); free as the app counts it {(int(cg.read('memory.limit_in_bytes')) - usage + inactive) / MIB:,.0f} MiB")


def deploy(i: int, limit_mb: int) -> dict[str, list[float]]:
    cg = Cgroup(limit_mb, f"deploy{i}")
    cg.enter()  # before any import of ours: the cgroup is charged for every page this process touches from here
    try:
        dropped = drop_page_cache()
        from bench_warm import request

        # the server's own imports, as serve.py's warm_up makes them: Streamlit, pandas, Plotly, the app's modules
        import serve

        serve._first_uses()
        from albert_core.processes.parent_memory import available_bytes
        from albert_core.processes.parent_queue import Runner

        rest_server = rss()
        print(f"deploy {i}: page cache {'dropped' if dropped else 'NOT dropped (not root?)'}; server stand-in "
              f"{rest_server / MIB:,.0f} MiB; {split(cg)}", flush=True)
        r = Runner(warm=True)
        t0 = time.monotonic()
        r.prewarm()
        assert r.wait_until(r.warm_ready, 300), "the warm process was not ready in 300 s"
        ready = time.monotonic() - t0
        assert r.wait_until(r.idle, 60)
        rest_warm = r.reclaimable_bytes()
        print(f"  warm process ready after {ready:.1f} s, {rest_warm / MIB:,.0f} MiB; {split(cg)}", flush=True)
        times: dict[str, list[float]] = {}
        for name, b, s in CASES:
            assert r.wait_until(r.idle, 900)
            budget = available_bytes() + r.reclaimable_bytes()  # ui/jobs.budget_bytes, no setting
            t = time.monotonic()
            job = r.submit(request(name, b, s), memory_bytes=budget, timeout_s=600)
            assert r.wait(job, 900)
            took = time.monotonic() - t
            res = job.result or {}
            m = res.get("measurement") or {}
            ok = job.state == "done" and m.get("estimate") == m.get("total") and m.get("total") is not None
            eng = res.get("engine_seconds") or 0.0
            timings = ", ".join(f"{k} {v:.2f}" for k, v in (res.get("engine_timings") or {}).items())
            print(f"  {name} {b} x {s}: {took:.2f} s ({'exact' if ok else 'NOT MEASURED: ' + str(res.get('measure_error') or job.message)[:160]}); "
                  f"budget {budget / MIB:,.0f} MiB; engine {eng:.2f} s ({timings}), the rest {took - eng:.2f} s",
                  flush=True)
            times.setdefault("press", []).append(took)
            times.setdefault("exact", []).append(1.0 if ok else 0.0)
        assert r.wait_until(r.idle, 60)
        print(f"  after: server stand-in {rss() / MIB:,.0f} MiB ({(rss() - rest_server) / MIB:+,.0f}), warm process "
              f"{r.reclaimable_bytes() / MIB:,.0f} MiB ({(r.reclaimable_bytes() - rest_warm) / MIB:+,.0f}); {split(cg)}")
        print(f"  {cg.report()}")
        r.close()
        times["ready"] = [ready]
        return times
    finally:
        cg.leave()


def main() -> None:
    from timing import machine_line

    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cgroup-mb", type=int, default=1024)
    args = ap.parse_args()
    print(machine_line(), "load average", open("/proc/loadavg").read().split()[:3])
    for i in range(1, args.runs + 1):
        # each deploy in a fresh interpreter: nothing imported, nothing cached in this process
        out = subprocess.run([sys.executable, __file__, "--one", str(i), "--cgroup-mb", str(args.cgroup_mb)],
                             cwd=ROOT, check=False, env={**os.environ, "STREAMLIT_LOGGER_LEVEL": "error"})
        if out.returncode:
            print(f"deploy {i} failed: exit {out.returncode}")


def one(i: int, limit_mb: int) -> None:
    t = deploy(i, limit_mb)
    p = t["press"]
    print(f"  deploy {i}: {int(sum(t['exact']))}/5 exact, press -> result median {statistics.median(p):.2f} s, "
          f"max {max(p):.2f} s, warm process ready {t['ready'][0]:.1f} s after it was started\n", flush=True)


if __name__ == "__main__":
    if "--one" in sys.argv:
        a = argparse.ArgumentParser()
        a.add_argument("--one", type=int)
        a.add_argument("--cgroup-mb", type=int, default=1024)
        ns = a.parse_args()
        one(ns.one, ns.cgroup_mb)
    else:
        main()
