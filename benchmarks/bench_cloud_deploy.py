"""Verify on Community Cloud as it really installs (issue 56): PyTorch's CPU build and its CUDA build side by side.

For each build (a Python whose environment has it: this repository's .venv has the CPU build; a CUDA build installs
from PyPI with `python -m venv V && V/bin/pip install --isolated -r requirements.txt`), a fresh deploy: a new 1 GiB
memory cgroup (v1), the page cache dropped, the server started in it as Cloud starts it (`streamlit run
cloud/streamlit_app.py` from the repository's root, with the options Cloud sets over config.toml), then, in
Chromium outside the cgroup, a first visit to /, the warm measurement process awaited, and issue 52's five
real-sized cases pressed on Verify one after another (press -> the result drawn). Where the memory goes is read
from the cgroup (resident, page cache, inactive and active file pages) at rest, at its peak and after, and from the
server's and the warm process's VmRSS.

Usage (root): .venv/bin/python benchmarks/bench_cloud_deploy.py --build cpu=.venv/bin/python \
    --build cuda=/tmp/cudavenv/bin/python [--runs 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_fresh_deploy import CASES, drop_page_cache, split  # noqa: E402
from cgroup import Cgroup, rss  # noqa: E402

from tests.browser.harness import (  # noqa: E402
    CLOUD_FLAGS,
    error_blocks,
    free_port,
    launch_browser,
    wait_for_figures,
    wait_until_idle,
)

MIB = 1 << 20
DONE_JS = """() => {
    const main = document.querySelector('[data-testid="stMain"]');
    const text = main ? main.innerText : '';
    return text.includes('exactly the parameters albert_core counts')
        || document.querySelectorAll('[data-testid="stAlertContentError"], [data-testid="stException"]').length > 0;
}"""


def children(pid: int) -> list[int]:
    out = []
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{p}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(p))
        except (OSError, ValueError, IndexError):
            continue
    return out


def deploy(name: str, python: str, limit_mb: int) -> dict:
    from playwright.sync_api import sync_playwright

    cg = Cgroup(limit_mb, f"cloud_{name}")
    dropped = drop_page_cache()
    port = free_port()
    cmd = [python, "-m", "streamlit", "run", "cloud/streamlit_app.py", "--server.headless", "true",
           "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
           *CLOUD_FLAGS]
    log: list[str] = []
    t_start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: cg.add(os.getpid()), env={**os.environ, "OMP_NUM_THREADS": "1"})
    threading.Thread(target=lambda: [log.append(line) for line in proc.stdout], daemon=True).start()

    def wait_log(*texts: str, since: int = 0, timeout: float = 300) -> str | None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            hit = next((line for line in log[since:] if any(t in line for t in texts)), None)
            if hit or proc.poll() is not None:
                return hit
            time.sleep(0.05)
        return None

    out: dict = {"build": name, "press": [], "exact": 0, "shown": []}
    try:
        assert wait_log("URL:", timeout=120), "".join(log[-20:])
        base = f"http://127.0.0.1:{port}"
        print(f"[{name}] page cache {'dropped' if dropped else 'NOT dropped'}; server listening "
              f"{time.monotonic() - t_start:.1f} s after its start; {split(cg)}", flush=True)
        with sync_playwright() as p:
            browser = launch_browser(p)
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            t = time.monotonic()
            page.goto(base + "/")
            wait_for_figures(page, 1)
            wait_until_idle(page, 120_000)
            print(f"[{name}] first visit to / drawn in {time.monotonic() - t:.2f} s", flush=True)
            ready = wait_log("ready after", "ended", "killed", "exited", timeout=300)
            print(f"[{name}] warm process: {ready.strip() if ready else 'no word in 300 s'}", flush=True)
            time.sleep(1.0)  # its first settle, as a person's first press comes after reading the page
            rest = {"server": rss(proc.pid), "warm": sum(rss(c) for c in children(proc.pid))}
            print(f"[{name}] at rest: server {rest['server'] / MIB:,.0f} MiB, warm process "
                  f"{rest['warm'] / MIB:,.0f} MiB; {split(cg)}", flush=True)
            for case, b, s in CASES:
                page.goto(f"{base}/verify?preset={case}&verify_batch={b}&verify_seq_len={s}&attention=eager")
                wait_until_idle(page, 120_000)
                note = "CUDA build" in page.inner_text('[data-testid="stMain"]')
                t = time.monotonic()
                page.get_by_role("button", name="Build, count and measure").click()
                page.wait_for_function(DONE_JS, timeout=600_000)
                took = time.monotonic() - t
                wait_until_idle(page, 120_000)
                errors = error_blocks(page)
                exact = not errors
                out["press"].append(took)
                out["exact"] += exact
                shown = "exact" if exact else "REFUSED/FAILED: " + " | ".join(e[:400] for e in errors)
                out["shown"].append(shown)
                print(f"[{name}] {case} {b} x {s}: {took:.2f} s, {shown}; CUDA note on Verify: {note}; "
                      f"server {rss(proc.pid) / MIB:,.0f} MiB, warm "
                      f"{sum(rss(c) for c in children(proc.pid)) / MIB:,.0f} MiB", flush=True)
            page.goto(f"{base}/parameters")
            wait_for_figures(page, 1)
            wait_until_idle(page, 120_000)
            print(f"[{name}] Parameters drawn, errors {error_blocks(page)}; server still up: "
                  f"{proc.poll() is None}", flush=True)
            browser.close()
        print(f"[{name}] after: server {rss(proc.pid) / MIB:,.0f} MiB ({(rss(proc.pid) - rest['server']) / MIB:+,.0f}); "
              f"{split(cg)}\n[{name}] {cg.report()}", flush=True)
        for line in log:
            if "ALBERT Explorer:" in line:
                print(f"[{name}]   server log: {line.strip()[:300]}")
        return out
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        for c in children(proc.pid):
            try:
                os.kill(c, 9)
            except OSError:
                pass
        time.sleep(1)
        cg.remove()


def main() -> None:
    from timing import machine_line

    ap = argparse.ArgumentParser()
    ap.add_argument("--build", action="append", required=True, help="NAME=PYTHON, e.g. cpu=.venv/bin/python")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--cgroup-mb", type=int, default=1024)
    args = ap.parse_args()
    print(machine_line(), "load average", open("/proc/loadavg").read().split()[:3], flush=True)
    rows = []
    for i in range(args.runs):
        for spec in args.build:
            name, python = spec.split("=", 1)
            r = deploy(f"{name}#{i + 1}", python, args.cgroup_mb)
            rows.append(r)
    for r in rows:
        p = r["press"]
        print(f"{r['build']}: {r['exact']}/{len(CASES)} exact, press -> result median {statistics.median(p):.2f} s, "
              f"max {max(p):.2f} s")


if __name__ == "__main__":
    main()
