"""How much slower than a bare Streamlit app each page opens, measured side by side in one run.

Two `streamlit run` servers: this app, and a one-file app that draws a single Plotly bar chart
(generated into a temporary folder, its own port). Headless Chromium, a fresh browser context per
visit, the two apps' visits interleaved (app, one-chart, one-chart, app, ...) so that whatever else
loads the machine weighs on both alike: the ratio is the figure to read, not the seconds.

The time of a visit is measured in the page: from navigation start (performance.timeOrigin) to the
first animation frame in which a drawn Plotly chart (`.js-plotly-plot .main-svg`) exists; the same
definition for both apps. Verify has no chart before its button is pressed: its time is to that button.
"all" is when the page's last chart appeared (the run finished, nothing more arriving).

warm: both servers running and every page visited once before timing; median of --warm visits per page.
cold: the first visit after a start; each app's server started for that visit alone and stopped after it
(nothing of one app's start runs beside the other's visit); median of --cold.

Usage:
  .venv/bin/python benchmarks/bench_ratio.py                      # full table, every page, warm and cold
  .venv/bin/python benchmarks/bench_ratio.py --pages / /memory --warm 3 --cold 0
  .venv/bin/python benchmarks/bench_ratio.py --check / --max-ratio 3 --warm 3 --cold 0   # exit 1 past it
  .venv/bin/python benchmarks/bench_ratio.py --messages /parameters  # websocket messages and long tasks
  .venv/bin/python benchmarks/bench_ratio.py --chunks /memory        # JavaScript files fetched, beside the one-chart app
  .venv/bin/python benchmarks/bench_ratio.py --same-figure --cold 0   # also each page's first figure alone in a bare app
  .venv/bin/python benchmarks/bench_ratio.py --pin --warm 0 --cold 4  # the browser on one CPU, the servers on the other
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from timing import machine_line  # noqa: E402

from tests.browser.harness import launch_browser, streamlit_server  # noqa: E402

PAGES = ["/", "/parameters", "/memory", "/fit", "/compute", "/verify"]
CHART = ".js-plotly-plot .main-svg"
READY = {"/verify": '[class*="st-key-verify_run"] button'}  # no chart until the button is pressed
VIEWPORT = {"width": 1400, "height": 1000}

BASELINE_APP = '''"""One Plotly bar chart and nothing else: the floor a Streamlit page cannot go below."""
import plotly.graph_objects as go
import streamlit as st

st.plotly_chart(go.Figure(go.Bar(x=["embedding", "layers", "pooler"], y=[3_900_000, 7_100_000, 600_000])))
'''

BASELINE_NAME = "one_chart.py"
SAME_FIGURE_NAME = "same_figure.py"
SAME_FIGURE_APP = '''"""The first figure of one of the app's pages, alone in a bare app: /?page=memory (a page without one: one bar)."""
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st

spec = Path(__file__).with_name(st.query_params.get("page", "overview") + ".json")
st.plotly_chart(pio.from_json(spec.read_text()) if spec.is_file() else go.Figure(go.Bar(x=["a"], y=[1])))
'''

# runs in every page before its own scripts: timestamps, in ms since navigation start, of the first animation
# frame in which the ready element exists, and of the frame in which the last chart appeared
MARKS_JS = """(sel) => {
  const m = window.__bench = {first: null, last: null, charts: 0, longtasks: []};
  try {
    new PerformanceObserver(l => { for (const e of l.getEntries()) m.longtasks.push([e.startTime, e.duration]); })
      .observe({type: 'longtask', buffered: true});
  } catch (e) {}
  const tick = () => {
    const t = performance.now();
    if (m.first === null && document.querySelector(sel)) m.first = t;
    let n = 0;
    for (const d of document.querySelectorAll('.js-plotly-plot')) if (d.querySelector('.main-svg')) n++;
    if (n > m.charts) { m.charts = n; m.last = t; }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""

EXCEPTION = '[data-testid="stException"]'
BROKEN = f"!!document.querySelector('{EXCEPTION}')"
IDLE_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.getAttribute('data-test-script-state') !== 'running'
    && !document.querySelector('[data-testid="stStatusWidgetRunningIcon"]');
}"""


STARTED: dict[str, float] = {}  # base URL -> time.perf_counter() when its `streamlit run` was started


@contextmanager
def server(script: Path):
    """`streamlit run script` on a free loopback port, cwd = the script's folder; yields the base URL."""
    with streamlit_server(timeout=90, script=script) as (base, started):
        STARTED[base] = started
        yield base


def visit(browser, url: str, ready: str, *, settle: bool = True, timeout_ms: int = 120_000) -> dict:
    """One visit in a fresh context: {'first': s, 'all': s, 'charts': n, 'longtask_ms': sum}."""
    ctx = browser.new_context(viewport=VIEWPORT)
    try:
        page = ctx.new_page()
        page.add_init_script(f"({MARKS_JS})({json.dumps(ready)})")
        page.goto(url, wait_until="commit", timeout=timeout_ms)
        page.wait_for_function(f"() => (window.__bench && window.__bench.first !== null) || {BROKEN}",
                               timeout=timeout_ms, polling=50)
        if page.evaluate(f"() => {BROKEN}"):
            raise RuntimeError(f"{url} shows an exception: {page.inner_text(EXCEPTION)[:500]}")
        if settle:  # the run finished and nothing new was drawn for 0.5 s
            page.wait_for_function(IDLE_JS, timeout=timeout_ms, polling=100)
            page.wait_for_timeout(500)
            page.wait_for_function(IDLE_JS, timeout=timeout_ms, polling=100)
        m = page.evaluate("() => window.__bench")
    finally:
        ctx.close()
    return {"first": m["first"] / 1000, "all": (m["last"] or m["first"]) / 1000, "charts": m["charts"],
            "longtask_ms": sum(d for _, d in m["longtasks"])}


def target(base: str, script: Path, path: str) -> tuple[str, str]:
    """(URL, ready selector) of page `path` on the server of `script`: the one-chart app at /, the same-figure
    app at /?page=, this app at path."""
    if script.name == BASELINE_NAME:
        return base + "/", CHART
    if script.name == SAME_FIGURE_NAME:
        return base + "/?page=" + figure_name(path), CHART
    return base + path, READY.get(path, CHART)


def round_of(browser, bases: list[str], scripts: list[Path], path: str, i: int) -> list[dict]:
    """One visit to each server (bases[0] the one-chart app, the others at `path`), in an order rotated by i so
    that no app is always first after the other; returned in the order of bases."""
    out: list[dict | None] = [None] * len(bases)
    for k in [(i + j) % len(bases) for j in range(len(bases))]:
        out[k] = visit(browser, *target(bases[k], scripts[k], path))
    print(f"  {path} round {i}: " + ", ".join(f"{v['first']:.2f}" for v in out), file=sys.stderr, flush=True)
    return out


def warm_runs(browser, scripts: list[Path], pages: list[str], n: int) -> dict:
    """{page: [visits of scripts[0], visits of scripts[1], ...]}, every server started once."""
    out = {p: [[] for _ in scripts] for p in pages}
    with ExitStack() as stack:
        bases = [stack.enter_context(server(s)) for s in scripts]
        for p in pages:  # servers already running and visited once: imports done, caches filled
            round_of(browser, bases, scripts, p, 0)
        for i in range(n):
            for p in pages:
                for runs, v in zip(out[p], round_of(browser, bases, scripts, p, i), strict=True):
                    runs.append(v)
    return out


def cold_runs(browser, scripts: list[Path], pages: list[str], n: int) -> dict:
    """Like warm_runs, but the first visit after a start: each app's server started for its visit alone and
    stopped after it, in an order rotated by the sample, so that neither app's start nor its work after a visit
    (this app's warm-up imports, its measurement process starting a few seconds after its first page) runs
    beside the other app's visit."""
    out = {p: [[] for _ in scripts] for p in pages}
    for i in range(n):
        for p in pages:
            for k in [(i + j) % len(scripts) for j in range(len(scripts))]:
                with server(scripts[k]) as base:
                    since = time.perf_counter() - STARTED[base]  # the process's start to this navigation
                    v = visit(browser, *target(base, scripts[k], p))
                    out[p][k].append(v | {"since_start": since + v["first"]})
            print(f"  {p} first visit {i}: " + ", ".join(f"{runs[-1]['first']:.2f}" for runs in out[p]),
                  file=sys.stderr, flush=True)
    return out


def med(runs: list[dict], key: str = "first") -> float:
    return statistics.median(r[key] for r in runs)


def table(warm: dict, cold: dict, pages: list[str], labels: list[str], same: set[str] | None = None) -> str:
    """Markdown: per page, the one-chart app's median and each app's median and ratio, warm then cold.
    same: the pages with a figure in the same-figure app (the last server): its median, its ratio, and the last
    app's time divided by it (what the page around the figure adds)."""
    head = ["page"]
    for kind, res in (("warm", warm), ("first visit after start", cold)):
        if res:
            head += [f"{kind}: one-chart"] + [h for lab in labels for h in (lab, "ratio")]
            if same is not None:
                head += ["its figure alone", "ratio", "page ÷ figure"]
            elif len(labels) == 1 and kind == "warm":
                head.append("all charts drawn")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in pages:
        row = [f"`{p}`"]
        for kind, res in (("warm", warm), ("cold", cold)):
            if not res:
                continue
            base, *apps = res[p]
            alone = apps.pop() if same is not None else None
            row.append(f"{med(base):.2f} s")
            for a in apps:
                row += [f"{med(a):.2f} s", f"{med(a) / med(base):.2f}×"]
            if alone is not None:
                row += ([f"{med(alone):.2f} s", f"{med(alone) / med(base):.2f}×", f"{med(apps[-1]) / med(alone):.2f}×"]
                        if p in same else ["—", "—", "—"])
            elif len(apps) == 1 and kind == "warm":
                row.append(f"{med(apps[0], 'all'):.2f} s ({apps[0][0]['charts']} charts)")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def start_table(cold: dict, pages: list[str], labels: list[str]) -> str:
    """Markdown: the first visit counted from the server process's start instead of from the navigation (which
    begins once the server answers /_stcore/health): what a server doing more before it answers would hide."""
    head = ["page", "from the start: one-chart"] + [h for lab in labels for h in (lab, "ratio")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in pages:
        base, *apps = cold[p]
        row = [f"`{p}`", f"{med(base, 'since_start'):.2f} s"]
        for a in apps[:len(labels)]:  # not the same-figure app
            row += [f"{med(a, 'since_start'):.2f} s", f"{med(a, 'since_start') / med(base, 'since_start'):.2f}×"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def write_baseline(folder: Path) -> Path:
    script = folder / BASELINE_NAME
    script.write_text(BASELINE_APP)
    return script


def figure_name(path: str) -> str:
    return path.strip("/") or "overview"


def write_same_figure(folder: Path, pages: list[str]) -> Path:
    """A bare app that draws, at /?page=NAME, the first figure of this app's page NAME exactly as the page
    sends it (taken from an AppTest run of this checkout): the figure's own cost, without the page around it."""
    import logging

    from streamlit.testing.v1 import AppTest

    logging.getLogger("streamlit").setLevel(logging.ERROR)  # AppTest's "missing ScriptRunContext" lines
    for path in pages:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.switch_page(f"pages/{figure_name(path)}.py").run()
        charts = at.get("plotly_chart")
        if charts:
            (folder / f"{figure_name(path)}.json").write_text(charts[0].proto.spec)
    script = folder / SAME_FIGURE_NAME
    script.write_text(SAME_FIGURE_APP)
    return script


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", nargs="+", default=PAGES, help="URL paths (default: every page)")
    ap.add_argument("--warm", type=int, default=5, help="timed warm visits per page (0: none)")
    ap.add_argument("--cold", type=int, default=5, help="cold samples per page, servers restarted each (0: none)")
    ap.add_argument("--check", metavar="PAGE", help="measure PAGE only; exit 1 if its warm ratio exceeds --max-ratio")
    ap.add_argument("--max-ratio", type=float, default=3.0)
    ap.add_argument("--app", type=Path, action="append",
                    help="the app's entry script (default: this checkout's serve.py, what the README runs); repeat it "
                         "to compare versions in one run, e.g. app.py of a `git worktree` of an older commit")
    ap.add_argument("--same-figure", action="store_true",
                    help="also a bare app that draws each page's own first figure: the figure's cost apart from the "
                         "page around it")
    ap.add_argument("--json", type=Path, help="also write every visit's numbers here")
    ap.add_argument("--pin", action="store_true",
                    help="the browser on CPU 1 and the servers on CPU 0 (Linux), as if the browser ran on another "
                         "machine: a server's work at its start no longer takes the browser's CPU")
    ap.add_argument("--messages", metavar="PAGE", help="instead: websocket messages and long tasks of one warm visit")
    ap.add_argument("--chunks", metavar="PAGE", help="instead: the JavaScript files one warm visit fetches, and when, "
                                                     "beside the one-chart app's")
    args = ap.parse_args()
    if args.pin and not (hasattr(os, "sched_setaffinity") and {0, 1} <= os.sched_getaffinity(0)):
        ap.error("--pin needs Linux and CPUs 0 and 1")
    pages = [args.check] if args.check else args.pages
    apps = [a.resolve() for a in args.app or [ROOT / "serve.py"]]
    labels = [a.parent.name for a in apps]
    if args.check and args.warm < 1:
        ap.error("--check needs --warm 1 or more")
    if args.same_figure and args.check:
        ap.error("--same-figure is for the table, not --check")
    from playwright.sync_api import sync_playwright

    if args.pin:  # Playwright's driver, and the browser it starts, inherit this process's CPUs when started
        os.sched_setaffinity(0, {1})
    with sync_playwright() as pw, tempfile.TemporaryDirectory(prefix="one-chart-") as tmp:
        browser = launch_browser(pw)
        if args.pin:  # the servers started from here on run on CPU 0
            os.sched_setaffinity(0, {0})
        base_script = write_baseline(Path(tmp))
        if args.messages:
            from messages import report  # benchmarks/messages.py

            with server(apps[0]) as app:
                print(report(browser, app, args.messages))
            return
        if args.chunks:
            from chunks import report as chunk_report  # benchmarks/chunks.py

            with server(apps[0]) as app, server(base_script) as one:
                print(chunk_report(browser, app, one, args.chunks, MARKS_JS, CHART, VIEWPORT))
            return
        print(machine_line() + f"  ({load()} at start)")
        scripts = [base_script] + apps
        same = None
        if args.same_figure:
            scripts.append(write_same_figure(Path(tmp), pages))
            same = {p for p in pages if (Path(tmp) / f"{figure_name(p)}.json").is_file()}
        warm = warm_runs(browser, scripts, pages, args.warm) if args.warm else {}
        cold = cold_runs(browser, scripts, pages, args.cold) if args.cold else {}
        browser.close()
    print(f"warm: median of {args.warm} visits per page; cold: median of {args.cold} first visits after a start; "
          f"visits interleaved; {load()} at the end\n")
    print(table(warm, cold, pages, labels, same))
    if cold:
        print("\n" + start_table(cold, pages, labels))
    if args.json:
        args.json.write_text(json.dumps({"warm": warm, "cold": cold}, indent=1))
    if args.check:
        b, a = warm[args.check][:2]
        ratio = med(a) / med(b)
        verdict = "ok" if ratio <= args.max_ratio else "TOO SLOW"
        print(f"\n{args.check}: warm ratio {ratio:.2f} (bound {args.max_ratio:.2f}): {verdict}")
        sys.exit(0 if ratio <= args.max_ratio else 1)


if __name__ == "__main__":
    main()
