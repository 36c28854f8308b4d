"""Speed where users feel it, in headless Chromium against `streamlit run serve.py`.

1. cold start: from launching `streamlit run` to the first chart drawn on a page (median of N starts);
2. update: from pressing Enter on a changed control to the chart showing the new numbers (median of M edits).

Targets on the 2-core machine: first chart within 5 s of start, updates within 500 ms.
Usage: .venv/bin/python benchmarks/bench_browser.py [--starts 3] [--edits 10] [--page parameters]
(--starts 0 measures the updates only; benchmarks/bench_ratio.py compares the first chart with a bare app)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import machine_line  # noqa: E402

from tests.browser.harness import launch_browser, open_section, streamlit_server, wait_until_idle  # noqa: E402

FIRST_CHART = ".js-plotly-plot .main-svg"
# the first chart's first trace, as drawn: changes when the numbers behind it change
FIRST_TRACE_JS = "() => { const d = document.querySelector('.js-plotly-plot'); return d && d.data ? JSON.stringify(d.data[0].y) : null; }"


def cold_start(browser, page_path: str) -> float:
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    try:
        with streamlit_server() as (base, started):
            page.goto(f"{base}/{page_path}")
            page.wait_for_selector(FIRST_CHART, timeout=60_000)
            return time.perf_counter() - started
    finally:
        page.context.close()


def update_latencies(browser, base: str, page_path: str, edits: int) -> list[float]:
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(f"{base}/{page_path}")
    wait_until_idle(page)
    page.wait_for_selector(FIRST_CHART)
    open_section(page, "Model fields")  # closed in the default view: a summary line, no widgets
    box = page.get_by_role("spinbutton", name="vocab_size (V)")
    out = []
    for i in range(edits + 1):  # the first edit warms the caches and is not counted
        before = page.evaluate(FIRST_TRACE_JS)
        box.fill(str(30_000 + 1_000 * (i + 1)))
        t0 = time.perf_counter()
        box.press("Enter")
        page.wait_for_function(f"(before) => ({FIRST_TRACE_JS})() !== before", arg=before, timeout=30_000)
        if i:
            out.append(time.perf_counter() - t0)
        wait_until_idle(page)
    page.context.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--starts", type=int, default=3)
    ap.add_argument("--edits", type=int, default=10)
    ap.add_argument("--page", action="append", help="path after the host ('' is the default page, Overview); "
                    "repeatable; default: '' and parameters")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    print(machine_line())
    with sync_playwright() as p:
        browser = launch_browser(p)
        for path in args.page or ["", "parameters"] if args.starts else []:  # --starts 0: the updates only
            starts = [cold_start(browser, path) for _ in range(args.starts)]
            print(f"streamlit run -> first chart on /{path}: median {statistics.median(starts):.2f} s "
                  f"(runs: {', '.join(f'{s:.2f}' for s in starts)}; target < 5 s)")
        with streamlit_server() as (base, _):
            lat = update_latencies(browser, base, "parameters", args.edits)
        print(f"control change -> chart updated: median {1000 * statistics.median(lat):.0f} ms, "
              f"max {1000 * max(lat):.0f} ms over {len(lat)} edits (target < 500 ms)")
        browser.close()


if __name__ == "__main__":
    main()
