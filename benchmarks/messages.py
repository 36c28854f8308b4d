"""Where a page's time goes in the browser: one warm visit, taken apart (bench_ratio.py --messages PAGE).

* the websocket's ForwardMsgs as they arrive (Streamlit's protobuf, decoded): count and bytes per element type;
* when each element type first appears in the DOM, and when each chart is drawn (ms since navigation);
* the JavaScript the main thread ran, by file (Chromium's sampling profiler over CDP: plotly, the data grid, ...);
* the resources loaded (the lazy JavaScript chunks: Plotly, the data grid) and the main thread's long tasks.
"""

from __future__ import annotations

import collections
import json
import time
from pathlib import Path

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

VIEWPORT = {"width": 1400, "height": 1000}

# first time (ms since navigation) each kind of element is in the DOM; each chart's drawn time, keyed
DOM_JS = """() => {
  const m = window.__dom = {first: {}, charts: {}};
  const kinds = {chart_container: '[data-testid="stPlotlyChart"]', chart_drawn: '.js-plotly-plot .main-svg',
    dataframe: '[data-testid="stDataFrame"]', dataframe_canvas: '[data-testid="stDataFrame"] canvas',
    sidebar_widget: '[data-testid="stSidebar"] input', main_widget: '[data-testid="stMain"] input',
    h1: '[data-testid="stMain"] h1', metric: '[data-testid="stMetric"]'};
  const tick = () => {
    const t = performance.now();
    for (const [k, s] of Object.entries(kinds)) if (!(k in m.first) && document.querySelector(s)) m.first[k] = t;
    for (const d of document.querySelectorAll('.js-plotly-plot')) {
      const h = d.closest('[class*="st-key-"]');
      const key = h ? (h.className.match(/st-key-([\\w-]+)/) || [])[1] : '?';
      if (!(key in m.charts) && d.querySelector('.main-svg')) m.charts[key] = t;
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  m.long = [];
  new PerformanceObserver(l => { for (const e of l.getEntries()) m.long.push([e.startTime, e.duration]); })
    .observe({type: 'longtask', buffered: true});
}"""


def element_kind(msg: ForwardMsg) -> str:
    kind = msg.WhichOneof("type")
    if kind != "delta":
        return kind or "?"
    d = msg.delta
    dk = d.WhichOneof("type")
    if dk == "new_element":
        return d.new_element.WhichOneof("type") or "element"
    if dk == "add_block":
        return "block:" + (d.add_block.WhichOneof("type") or "vertical")
    return dk or "delta"


def profile_by_file(profile: dict) -> list[tuple[str, float]]:
    """Self time (ms) per script file from a CDP Profiler profile."""
    url = {n["id"]: (n["callFrame"].get("url") or n["callFrame"].get("functionName") or "?") for n in profile["nodes"]}
    out: collections.Counter = collections.Counter()
    for node, dt in zip(profile["samples"], profile["timeDeltas"], strict=True):
        out[url[node].rsplit("/", 1)[-1][:60] or "?"] += dt / 1000
    return out.most_common(12)


def report(browser, base: str, path: str) -> str:
    warm = browser.new_context(viewport=VIEWPORT).new_page()  # visited once: the server's caches are filled
    warm.goto(base + path)
    warm.wait_for_selector('[data-testid="stMain"] h1', timeout=120_000)
    warm.wait_for_timeout(3000)
    warm.context.close()

    ctx = browser.new_context(viewport=VIEWPORT)
    page = ctx.new_page()
    frames: list[tuple[float, int, str]] = []
    t0 = [0.0]

    def on_ws(ws):
        def got(payload):
            if isinstance(payload, str):
                return
            m = ForwardMsg()
            m.ParseFromString(payload)
            frames.append((1000 * (time.perf_counter() - t0[0]), len(payload), element_kind(m)))
        ws.on("framereceived", got)

    page.on("websocket", on_ws)
    page.add_init_script(f"({DOM_JS})()")
    cdp = ctx.new_cdp_session(page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": 1000})
    cdp.send("Profiler.start")
    t0[0] = time.perf_counter()
    page.goto(base + path, wait_until="commit")
    page.wait_for_selector('[data-testid="stMain"] h1', timeout=120_000)
    page.wait_for_function("""() => document.querySelector('[data-testid="stApp"]')
        .getAttribute('data-test-script-state') !== 'running'""", timeout=120_000)
    sent = sum(k == "plotly_chart" for _, _, k in frames)  # every chart the server sent is drawn
    page.wait_for_function(f"() => Object.keys(window.__dom.charts).length >= {sent}", timeout=120_000)
    page.wait_for_timeout(1500)
    profile = cdp.send("Profiler.stop")["profile"]
    dom = page.evaluate("() => window.__dom")
    res = page.evaluate("""() => performance.getEntriesByType('resource').map(e =>
        [e.name.split('/').pop().slice(0, 50), Math.round(e.startTime), Math.round(e.responseEnd), e.encodedBodySize])""")
    ctx.close()

    lines = [f"## {path}: one warm visit", "", "Websocket ForwardMsgs (ms after goto, bytes, type), in order:"]
    lines += [f"  {t:7.0f} ms {n:9,d} B  {k}" for t, n, k in frames]
    by = collections.defaultdict(lambda: [0, 0])
    for _, n, k in frames:
        by[k][0] += 1
        by[k][1] += n
    lines += ["", f"Totals: {len(frames)} messages, {sum(n for _, n, _ in frames):,} bytes. By type:"]
    lines += [f"  {k:28s} {c:4d} msgs {b:10,d} B" for k, (c, b) in sorted(by.items(), key=lambda kv: -kv[1][1])]
    lines += ["", "First in the DOM (ms since navigation): "
              + ", ".join(f"{k} {v:.0f}" for k, v in sorted(dom["first"].items(), key=lambda kv: kv[1]))]
    lines += ["Charts drawn (ms): " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(dom["charts"].items(), key=lambda kv: kv[1]))]
    long = dom["long"]
    lines += [f"Long tasks: {len(long)}, {sum(d for _, d in long):.0f} ms in all; the largest: "
              + ", ".join(f"{d:.0f} ms at {s:.0f}" for s, d in sorted(long, key=lambda x: -x[1])[:6])]
    lines += ["", "JavaScript self time by file (sampling profiler, ms):"]
    lines += [f"  {f:60s} {ms:7.0f}" for f, ms in profile_by_file(profile)]
    big = sorted((r for r in res if r[3] > 20_000), key=lambda r: r[1])
    lines += ["", "Resources over 20 kB (start ms, end ms, bytes encoded):"]
    lines += [f"  {n:50s} {s:6d} {e:6d} {b:10,d}" for n, s, e, b in big]
    return "\n".join(lines) + "\n" + json.dumps({"charts": dom["charts"]})


def figures_of(app: str, page: str) -> dict[str, dict]:
    """The Plotly figures a page sends, by key, from an AppTest run of the app at `app` (its entry script)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(app, default_timeout=120).run()
    if page.strip("/"):
        at = at.switch_page(f"pages/{page.strip('/')}.py").run()
    return {e.key: json.loads(e.proto.spec) for e in at.get("plotly_chart")}


def draw_times(browser, figures: dict[str, dict], repeats: int = 5) -> dict[str, float]:
    """Median ms of Plotly.newPlot per figure (plotly.min.js of the plotly package), 1300 x 450 px, in Chromium."""
    import plotly

    js = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text()
    page = browser.new_context(viewport=VIEWPORT).new_page()
    page.set_content("<div id=g style='width:1300px;height:450px'></div>")
    page.add_script_tag(content=js)
    out = {}
    for key, fig in figures.items():
        out[key] = page.evaluate("""async ([fig, n]) => { const ts = [];
            for (let i = 0; i < n; i++) { const g = document.getElementById('g'); Plotly.purge(g);
              const t = performance.now(); await Plotly.newPlot(g, fig.data, fig.layout, {displaylogo: false});
              ts.push(performance.now() - t); }
            ts.sort((a, b) => a - b); return ts[Math.floor(n / 2)]; }""", [fig, repeats])
    page.context.close()
    return out
