"""Where a page load's time goes (issue 30): script runs per load, each run's seconds on the server, the bytes the
server sends, and the browser's time to draw the first chart, for one warm load and one first visit of each page.

warm: the server running and the page visited once before in another browser context; first visit: a server
started for it, nothing visited yet. Each visit is a fresh context (nothing cached), 1400 x 1000 px.
Runs per load: the runs that drew the whole page (window.__aeDrawn, ui/plots.py); seconds per run: app.py's own
line per finished run (ALBERT_EXPLORER_RUN_LOG); bytes: the websocket frames the server sent, until the page is
idle and its figures wrapped for the width reported (tests/browser/harness.wait_until_idle); first chart: ms from
navigation start to the first animation frame with a drawn Plotly chart (bench_ratio.py's definition).

Usage:
  .venv/bin/python benchmarks/runs.py                      # every page, warm and first visit, this checkout
  .venv/bin/python benchmarks/runs.py --app /tmp/old/serve.py --pages / /memory
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_ratio import CHART, MARKS_JS, PAGES, READY, VIEWPORT  # noqa: E402
from timing import machine_line  # noqa: E402

from tests.browser.harness import launch_browser, streamlit_server, wait_until_idle  # noqa: E402


def load(browser, base: str, path: str, log: Path) -> dict:
    """One visit in a fresh context: runs, seconds of each run, bytes received over the websocket, first chart."""
    log.write_text("")
    ctx = browser.new_context(viewport=VIEWPORT)
    sent: list[int] = []
    try:
        page = ctx.new_page()
        page.on("websocket", lambda ws: ws.on("framereceived", lambda f: sent.append(len(f))))
        page.add_init_script(f"({MARKS_JS})({json.dumps(READY.get(path, CHART))})")
        page.goto(base + path, wait_until="commit", timeout=180_000)
        wait_until_idle(page, 180_000)
        runs, first = page.evaluate("() => [window.__aeDrawn || 0, window.__bench.first]")
    finally:
        ctx.close()
    seconds = [float(line.split()[-1]) for line in log.read_text().splitlines() if line.strip()]
    return {"runs": runs, "server_s": seconds, "bytes": sum(sent), "first_chart_ms": round(first or 0)}


def row(kind: str, path: str, r: dict) -> str:
    each = ", ".join(f"{s:.2f}" for s in r["server_s"])
    return f"| {path} | {kind} | {r['runs']} | {each} | {r['bytes'] / 1024:,.0f} KiB | {r['first_chart_ms']:,} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--app", type=Path, default=ROOT / "serve.py", help="the script to serve (default: serve.py)")
    ap.add_argument("--pages", nargs="+", default=PAGES)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    print(machine_line())
    print("| page | load | script runs | seconds per run (server) | sent | first chart (ms) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        log = Path(tmp) / "runs.log"
        env = {"ALBERT_EXPLORER_RUN_LOG": str(log)}
        browser = launch_browser(p)
        try:
            for path in args.pages:
                with streamlit_server(timeout=90, script=args.app, env=env) as (base, _):
                    print(row("first visit", path, load(browser, base, path, log)), flush=True)
                    print(row("warm", path, load(browser, base, path, log)), flush=True)
        finally:
            browser.close()


if __name__ == "__main__":
    main()
