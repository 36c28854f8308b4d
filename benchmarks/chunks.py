"""Which JavaScript files a visit fetches, and when, beside the one-chart app (bench_ratio.py --chunks PAGE).

Streamlit's frontend loads the code of each element type on first use (a lazy chunk per widget type: NumberInput,
Selectbox, Multiselect, Checkbox, DownloadButton, Metric, PageLink, ...; Plotly's 4.7 MB is one of them). A fresh
browser context fetches each from the same server as the page, and React draws the page in one commit when the
last of them has arrived: every element type on the first screen is on the way to the first chart.
"""

from __future__ import annotations

import json

RESOURCES_JS = """() => performance.getEntriesByType('resource').filter(e => e.name.endsWith('.js'))
    .map(e => [e.name.split('/').pop(), e.startTime, e.responseEnd, e.decodedBodySize])"""
PLOTLY = "PlotlyChart."


def visit(browser, url: str, marks_js: str, chart: str, viewport: dict) -> dict:
    """One visit in a fresh context: first chart (ms), the JS files fetched [(name, start ms, end ms, bytes)]."""
    ctx = browser.new_context(viewport=viewport)
    try:
        page = ctx.new_page()
        page.add_init_script(f"({marks_js})({json.dumps(chart)})")
        page.goto(url, wait_until="commit")
        page.wait_for_function("() => window.__bench && window.__bench.first !== null", timeout=120_000, polling=50)
        page.wait_for_timeout(1000)
        first = page.evaluate("() => window.__bench.first")
        files = page.evaluate(RESOURCES_JS)
    finally:
        ctx.close()
    return {"first": first, "files": files}


def summary(label: str, v: dict, after_ms: float = 300) -> str:
    """A line for the visit, then the files requested after the page's own bundle (after_ms), in request order."""
    files = sorted(v["files"], key=lambda f: f[1])
    plotly = next((f for f in files if f[0].startswith(PLOTLY)), None)
    head = (f"{label}: first chart {v['first']:.0f} ms; {len(files)} JS files, {sum(f[3] for f in files) / 1e6:.2f} MB"
            + (f"; Plotly's chunk requested at {plotly[1]:.0f} ms, arrived at {plotly[2]:.0f} ms" if plotly else ""))
    late = [f for f in files if f[1] > after_ms]
    rows = [f"  {f[1]:6.0f} {f[2]:6.0f} ms {f[3] / 1e3:8.1f} kB  {f[0]}" for f in late]
    return "\n".join([head, f"  {len(late)} lazy chunks (requested after {after_ms:.0f} ms):", *rows])


def report(browser, app_base: str, one_base: str, path: str, marks_js: str, chart: str, viewport: dict) -> str:
    """Warm both servers on the page, then one visit each; the two summaries."""
    for base, p in ((app_base, path), (one_base, "/")):
        visit(browser, base + p, marks_js, chart, viewport)
    one = visit(browser, one_base + "/", marks_js, chart, viewport)
    app = visit(browser, app_base + path, marks_js, chart, viewport)
    return summary("one-chart app /", one) + "\n\n" + summary(f"this app {path}", app)
