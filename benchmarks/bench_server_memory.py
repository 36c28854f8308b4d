"""Server memory across Verify runs: `streamlit run serve.py`, Verify pressed in headless Chromium.

Runs Verify on the five real-sized cases of issue 16 (bert-base at Verify's defaults, xlm-roberta-large
8 x 512, deberta-v3-large 4 x 512, ModernBERT-large 1 x 8,192, albert-xxlarge 8 x 512; fake tensors, the
default) and times each from the press to the result drawn; samples every 0.1 s the resident memory (/proc/<pid>/status VmRSS) of the server alone and of the server with all its
descendants (the build processes, the warm measurement process): before each run, the peak during it, and
after it. Targets (issue 27): press -> result median at most 2 s, none over 4 s; the server with its warm
process within 600 MiB at rest and within +50 MiB of that after the runs. ALBERT_EXPLORER_WARM_WORKER=0 in
the environment measures a fresh process per press.

--budget-mb sets ALBERT_EXPLORER_MEMORY_BUDGET_MB for the server (default: the app's own default, the
memory the server has free).
--cgroup-mb N starts the server inside a new cgroup-v1 memory cgroup with memory.limit_in_bytes = N MiB
(as root, under this process's own memory cgroup) and reports its peak usage, failures and OOM kills;
afterwards every page is opened again to show that the server still serves.
Usage: .venv/bin/python benchmarks/bench_server_memory.py [--budget-mb 2400] [--cgroup-mb 1024]
       [--runs bert-base:auto,albert-base:hf:8:512,bert-base:hf:2:64:real]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cgroup import Cgroup, rss  # noqa: E402
from timing import machine_line  # noqa: E402

from tests.browser.harness import error_blocks, launch_browser, streamlit_server, wait_until_idle  # noqa: E402

MIB = 1 << 20
RUNS = ["bert-base:auto", "xlm-roberta-large:auto:8:512", "deberta-v3-large:auto:4:512",
        "ModernBERT-large:auto:1:8192", "albert-xxlarge:auto:8:512"]
PAGES = ["overview", "parameters", "memory", "fit", "compute", "verify"]



def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{p}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(p))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


class Sampler:
    """Samples server RSS and server + descendants RSS every 0.1 s; peak() since the last reset()."""

    def __init__(self, pid: int):
        self.pid, self._peak, self._peak_server, self._stop = pid, 0, 0, False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def now(self) -> tuple[int, int]:
        server = rss(self.pid)
        return server, server + sum(rss(c) for c in descendants(self.pid))

    def _loop(self) -> None:
        while not self._stop:
            s, t = self.now()
            with self._lock:
                self._peak, self._peak_server = max(self._peak, t), max(self._peak_server, s)
            time.sleep(0.1)

    def reset(self) -> None:
        with self._lock:
            self._peak, self._peak_server = 0, 0

    def peak(self) -> tuple[int, int]:
        with self._lock:
            return self._peak_server, self._peak

    def stop(self) -> None:
        self._stop = True



def verify(page, base: str, run: str) -> str:
    preset, source, *rest = run.split(":")
    query = f"preset={preset}&source={source}"
    if len(rest) >= 2:
        query += f"&verify_batch={rest[0]}&verify_seq_len={rest[1]}"
    if "real" in rest:
        query += "&verify_real=1"
    page.goto(f"{base}/verify?{query}")
    wait_until_idle(page, 120_000)
    t0 = time.monotonic()
    page.get_by_role("button", name="Build, count and measure").click()
    page.get_by_role("heading", name="Activation memory").or_(page.get_by_role("heading", name="Memory")) \
        .first.wait_for(timeout=600_000)
    wait_until_idle(page, 120_000)
    took = f"{time.monotonic() - t0:.1f} s press to result"
    main = page.inner_text('[data-testid="stMain"]')
    errors = error_blocks(page)
    if any("Not measured" in e for e in errors):
        return "refused: " + next(e for e in errors if "Not measured" in e)[:160].replace("\n", " ")
    if errors:
        return "error: " + errors[0][:160].replace("\n", " ")
    if "Measured (saved tensors)" not in main:
        return "no result"
    same = "estimate = measured" if re.search(r"Estimate error\s+\+0.00%", main) else "ESTIMATE DIFFERS"
    saved = re.search(r"Measured \(saved tensors\)\s+([\d.,]+ \w+)", main)
    step = re.search(r"Measured peak\s+([\d.,]+ \w+)", main)
    m = re.search(r"peaked at ([\d.,]+ \w+) resident[^;]*; estimated before building: ([\d.,]+ \w+)", main)
    return (f"measured, {same}: saved {saved.group(1) if saved else '?'}, step peak {step.group(1) if step else '?'}; "
            f"{took}; build process peak {m.group(1) if m else '?'}, estimated {m.group(2) if m else '?'}")


def pages_still_load(browser, base: str) -> list[str]:
    out = []
    for path in PAGES:
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        try:
            page.goto(f"{base}/{path}")
            wait_until_idle(page, 120_000)
            if path != "verify":
                page.wait_for_selector(".js-plotly-plot .main-svg", timeout=120_000)
            out.append(f"{path}: {'ok' if not error_blocks(page) else 'ERROR ' + error_blocks(page)[0][:80]}")
        finally:
            page.context.close()
    return out


def main() -> None:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser()
    ap.add_argument("--budget-mb", type=int, default=None)
    ap.add_argument("--cgroup-mb", type=int, default=None)
    ap.add_argument("--runs", default=",".join(RUNS),
                    help="preset:source[:batch:seq_len[:real]], comma-separated (default: the five runs above)")
    args = ap.parse_args()
    runs = args.runs.split(",")
    env = {"ALBERT_EXPLORER_MEMORY_BUDGET_MB": str(args.budget_mb)} if args.budget_mb else {}
    cgroup = Cgroup(args.cgroup_mb, "bench") if args.cgroup_mb else None
    procs = []
    warm_ready = threading.Event()

    def said(line: str) -> None:  # the runner's events in the server's log (ui/jobs._log)
        if "warm measurement process" in line and "ready after" in line:
            warm_ready.set()
        if "ALBERT Explorer:" in line:
            print("  [server]", line.strip().removeprefix("ALBERT Explorer: "), flush=True)

    def started(proc) -> None:
        procs.append(proc)
        if cgroup:
            cgroup.add(proc.pid)  # before the server imports anything; its build processes inherit the cgroup

    print(machine_line())
    print(f"budget: {args.budget_mb or 'app default'} MiB; cgroup: {args.cgroup_mb or 'none'} MiB")
    try:
        with streamlit_server(timeout=120, env=env, on_start=started, on_line=said) as (base, _), \
                sync_playwright() as p:
            browser = launch_browser(p)
            sampler = Sampler(procs[0].pid)
            warm = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            warm.goto(f"{base}/verify")  # the server as a user first meets it: one session, the Verify page
            wait_until_idle(warm, 120_000)
            warm.context.close()
            if os.environ.get("ALBERT_EXPLORER_WARM_WORKER", "1").lower() not in ("0", "false", "no", "off"):
                warm_ready.wait(180)  # the warm measurement process, started after that first page, has imported
            time.sleep(2)
            start, start_tree = sampler.now()
            print(f"server at start (after one visit): {start / MIB:,.0f} MiB; with its children (the warm measurement "
                  f"process, unless it is off): {start_tree / MIB:,.0f} MiB\n")
            print("| run | config:source:batch:seq_len | outcome | server before | server peak | server + builds peak "
                  "| server after |")
            print("|---|---|---|---|---|---|---|")
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            for i, run in enumerate(runs, 1):
                before = sampler.now()[0]
                sampler.reset()
                outcome = verify(page, base, run)
                time.sleep(2)
                peak_server, peak_all = sampler.peak()
                after = sampler.now()[0]
                print(f"| {i} | {run} | {outcome} | {before / MIB:,.0f} MiB | {peak_server / MIB:,.0f} MiB "
                      f"| {peak_all / MIB:,.0f} MiB | {after / MIB:,.0f} MiB |", flush=True)
            page.context.close()
            time.sleep(5)
            end, end_tree = sampler.now()
            print(f"\nserver after the runs (5 s later): {end / MIB:,.0f} MiB ({(end - start) / MIB:+,.0f} MiB from the start); "
                  f"with its children {end_tree / MIB:,.0f} MiB ({(end_tree - start_tree) / MIB:+,.0f} MiB); "
                  f"processes left under it: {len(descendants(procs[0].pid))} (1 is the warm measurement process, unless it is off)")
            print("pages afterwards:", "; ".join(pages_still_load(browser, base)))
            print(f"server alive: {procs[0].poll() is None}")
            sampler.stop()
            browser.close()
    finally:
        if cgroup:
            print(cgroup.report())
            if procs and procs[0].poll() is None:
                procs[0].kill()
                procs[0].wait()
            time.sleep(0.5)
            cgroup.remove()


if __name__ == "__main__":
    main()
