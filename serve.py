"""Serve ALBERT Explorer: `streamlit run serve.py`.

app.py is the app (it routes the pages; AppTest runs it). This file only wraps it as Streamlit's ASGI app
(`st.App`) for what `streamlit run app.py` has no hook for (docs/app.md, "Speed in the browser"):

1. warm_up: the server's start does what a first script run would otherwise do once on a visitor's time: imports
   (pandas alone 0.4-0.5 s on the 2-core machine), Plotly's classes, Streamlit's check for a REPL. The first visit after
   a start: 1.58-1.66x a one-chart app without any of it; with it, the first run 0.14-0.23 s (0.33-0.42 s with the
   imports alone).
2. PageBase: a page's HTML says the width its figures will be drawn at (VIEW_JS, below), so a first visit runs
   the script once, not twice. And it tells Streamlit's frontend where the server is. Opened at /memory, the frontend does not
   know whether /memory is a page or the app's base path, so it first asks /memory/_stcore/health and
   /memory/_stcore/host-config, gets 404s, and tries / after a pause: the websocket opened 130 ms later than at /.
   It also names Plotly's code (preload_links), so the browser fetches and compiles it while the websocket opens,
   not after every sidebar widget's code (PRELOAD, below).
"""

from __future__ import annotations

import ast
import json
import os
import re
import socket
import sys
import threading
from contextlib import asynccontextmanager
from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

APP = Path(__file__).with_name("app.py")
WARM = threading.Event()  # set when warm_up is done
WARM_LINE = "ALBERT Explorer: warmed up"  # what the server's log says then (a signal tests wait on)


def warm_up() -> None:
    """Do at the start what a first script run would otherwise do once, on the first visitor's time (issue 30;
    benchmarks/runs.py: a first run took 0.33-0.42 s on the server against 0.01-0.02 s warm). In a thread: the
    server answers at once, and a visit that comes before it is done waits only for the rest (Python's import
    lock). Each step is what a first run was measured to spend (cProfile of the server's first run of /memory):

    - the modules every page and app.py import (pandas alone 0.4-0.5 s on the 2-core machine);
    - the Plotly classes of what the charts draw (subplots, bars, lines, annotations, shapes, titles and
      subtitles, the house style of charts.base): Plotly builds each on its first use;
    - pandas' arrow-backed strings and the arrow table Streamlit sends a DataFrame as;
    - the page icon's PNG reader (st.set_page_config reads the file with PIL);
    - Streamlit's check for a REPL, marked done: its first element looks at the call stack once, to warn about an
      app run without `streamlit run` (delta_generator._maybe_print_use_warning; env_util.is_repl calls
      inspect.stack(): 0.11 s in the server's first run, 47 ms here to fill inspect's caches for it). Under
      `streamlit run` it never warns; a Streamlit without that flag gets inspect's caches filled as before;
    - gc.freeze(): what is loaded now lives as long as the server, so Streamlit's gc.collect(2) after every
      script run (runner.postScriptGC) stops walking it (0.06 s after the first run). The warm-up's own figure
      is garbage by then (Plotly's objects hold cycles): the collector is off from the figure on (_first_uses), so
      it and what follows stay in the youngest generation, collected alone (10,700 objects, 1.6 ms) instead of a
      full collection walking the 126,000 objects the imports made (47 ms of the first visit's time here).
    """
    import gc

    try:
        _first_uses()
    finally:
        gc.collect(0)
        gc.enable()
        gc.freeze()
        WARM.set()
        print(f"{WARM_LINE}: every page's modules imported, Plotly's classes built",
              file=sys.stderr, flush=True)


def _first_uses() -> None:
    """warm_up's steps (its docstring), in a function of their own: what they leave is garbage once it returns."""
    import gc
    import importlib
    import inspect
    import pkgutil

    import pandas as pd
    import plotly.graph_objects as go
    import pyarrow as pa
    import streamlit.material_icon_names  # noqa: F401  (the pages' :material/...: icons, checked on first use)
    from PIL import Image
    from plotly.subplots import make_subplots

    import charts
    import ui

    for package in (ui, charts):  # every module of the app's pages, whichever page is visited first
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{module.name}")
    importlib.import_module("albert_core.step.peak")  # the step's peak: step.training imports it on use
    Image.preinit()  # the page icon: PIL loads its image formats' readers on the first open
    from charts.base import style

    gc.disable()  # warm_up collects what follows alone (its docstring)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("a", "b"))
    fig.add_trace(go.Bar(x=["a"], y=[1], text=["1"], marker=dict(color="red")), row=1, col=1)
    fig.add_trace(go.Scatter(x=[1, 2], y=[1, 2], mode="lines+markers", line=dict(dash="dot")), row=1, col=2)
    fig.add_annotation(x=1, y=1, text="a", showarrow=False)
    fig.add_shape(type="line", x0=1, x1=1, y0=0, y1=1, line=dict(dash="dash"))
    fig.update_xaxes(minor=dict(showgrid=False))
    fig.update_yaxes(minor=dict(showgrid=False))
    style(fig, x="x (units)", y="y (units)", title="warm up", log_y=True).to_json()
    frame = pd.DataFrame({"a": ["x"], "b": [1]})
    pa.Table.from_pandas(frame)
    frame.to_csv()
    import streamlit.delta_generator as delta_generator

    if hasattr(delta_generator, "_use_warning_has_been_displayed"):
        delta_generator._use_warning_has_been_displayed = True
    else:
        inspect.stack()


@asynccontextmanager
async def lifespan(_app):
    from ui import legacy

    legacy.WARM_UP = WARM  # a script run waits for the warm-up before importing the app (ui.legacy.after_warm_up)
    threading.Thread(target=warm_up, name="albert-explorer-warm-up", daemon=True).start()
    yield


def page_paths(app: Path = APP) -> list[str]:
    """The url_path of every st.Page in app.py, read from its source (app.py is a script: importing it runs it)."""
    calls = (n for n in ast.walk(ast.parse(app.read_text())) if isinstance(n, ast.Call))
    return [k.value.value for c in calls if getattr(c.func, "attr", None) == "Page"
            for k in c.keywords if k.arg == "url_path" and isinstance(k.value, ast.Constant)]


# c: {"pages": [url paths], "base": "/" + server.baseUrlPath + "/"}; p: the path, r: p without its last segment
BASE_JS = ("(()=>{const c=CONFIG,p=location.pathname.replace(/\\/+$/,''),i=p.lastIndexOf('/'),r=p.slice(0,i+1),"
           "s=window.__streamlit||{};if(c.pages.includes(p.slice(i+1))&&r.endsWith(c.base)&&!s.BACKEND_BASE_URL)"
           "window.__streamlit=Object.assign({},s,{BACKEND_BASE_URL:location.origin+r})})()")


# The main area's width as ui/plots.py's width component will report it (floored to 10 px, as if the main area
# always showed its scrollbar) and whether columns stack, written into a cookie before the websocket opens: its
# cookies reach the session's first script run (st.context.cookies, ui/plots.view), which wraps the figures for it,
# and where the component then measures the same view it reports nothing, so no second run follows. Streamlit
# 1.67's layout="wide", measured in Chromium at 17 widths from 390 to 1920 px: the sidebar is 300 px beside the
# main area above 768 px (collapsed below), the main block's padding 5rem from 864 px, 1rem below; columns stack up
# to 640 px. A sidebar the user collapsed, or another layout, only costs the rerun the component then asks for.
VIEW_COOKIE = "ae_view"
VIEW_JS = ("(()=>{const w=innerWidth,d=document.createElement('div');d.style.cssText='position:absolute;"
           "top:-9999px;width:100px;height:100px;overflow:scroll';document.documentElement.appendChild(d);"
           "const bar=d.offsetWidth-d.clientWidth;d.remove();"
           "const m=Math.floor((w-(w>768?300:0)-2*(w>=864?80:16)-bar)/10)*10,"
           "s=matchMedia('(max-width: 640px)').matches?1:0;"
           "if(m>0)document.cookie='" + VIEW_COOKIE + "='+m+':'+s+';path=/;SameSite=Lax'})()")


# Plotly's element code, as Streamlit's frontend names its lazy chunk (static/js/PlotlyChart.<hash>.js, 4.7 MB with
# plotly.js). The frontend fetches a chunk only when the first element of its type arrives over the websocket: on
# /memory after the sidebar's 44 widget chunks, so Plotly was requested at 816 ms and arrived at 1,033 ms against
# 685 and 806 ms in a one-chart app (benchmarks/chunks.py). Named in the HTML, it is fetched and compiled while the
# websocket opens (requested at 26 ms, arrived at 538 ms). Preloading the widgets' chunks too was slower (warm
# /memory 1.82 s against 1.60 s with Plotly's alone, 1.37 s for the one-chart app; docs/benchmarks.md, issue 30).
# From the first request: a first visit after a start measured 1.25-1.32x the one-chart app with it, 1.29-1.39x
# with it written only once warm_up was done (bench_ratio.py --warm 0 --cold 4 and 6, 2026-12-04, docs/benchmarks.md).
PRELOAD = ("PlotlyChart",)
_IMPORT = re.compile(rb'(?:from|import)\s*"\./([^"]+\.js)"')


def preload_links(names: tuple[str, ...] = PRELOAD, static: Path | None = None) -> bytes:
    """<link rel="modulepreload"> for each named chunk and the modules it imports, in the form Streamlit's own
    index.html writes them, less those index.html names already. A name this Streamlit does not have is skipped."""
    static = static or Path(st.__file__).with_name("static")
    js = static / "static" / "js"
    have = set(re.findall(r'(?:href|src)="\./static/js/([^"]+\.js)"', (static / "index.html").read_text()))
    todo = [f.name for n in names for f in sorted(js.glob(f"{n}.*.js"))[:1]]
    seen: list[str] = []
    while todo:
        name = todo.pop(0)
        if name in seen or name in have or not (js / name).is_file():
            continue
        seen.append(name)
        todo += [m.decode() for m in _IMPORT.findall((js / name).read_bytes()[:20_000])]
    return "".join(f'<link rel="modulepreload" crossorigin href="./static/js/{n}">' for n in seen).encode()


def base_script(pages: list[str], base_url_path: str) -> bytes:
    """An inline script for the page's <head>: where the path's last segment is one of the pages, the rest of the
    path is the server's base URL, and Streamlit's frontend reads it from window.__streamlit.BACKEND_BASE_URL
    (the frontend's PD(): given that, it asks that one base instead of two). The rest must end with the server's
    own server.baseUrlPath; a proxy may put more in front of it. Anywhere else, or where the host set it already,
    nothing is set and the frontend finds the server as it always does."""
    base = "/" + "".join(f"{p}/" for p in base_url_path.split("/") if p)
    config = json.dumps({"pages": pages, "base": base}).replace("<", "\\u003c")
    return f"<script>{BASE_JS.replace('CONFIG', config)};{VIEW_JS}</script>".encode()


class PageBase:
    """ASGI middleware: puts base_script and preload_links into every page's HTML (Streamlit serves the same
    index.html at every page's path). Only a page's path is touched (no dot in its last segment, not under
    _stcore/); it is asked for uncompressed (4 KB), and an answer that is not HTML, or is compressed anyway, passes
    unchanged."""

    def __init__(self, app, script: bytes | None = None) -> None:
        self.app = app
        self.script = script  # given: put in as it is (tests); None: base_script and preload_links
        self.base: bytes = b""
        self.preload: bytes | None = None

    def _script(self) -> bytes:
        if self.script is not None:
            return self.script
        if self.preload is None:  # at the first request: the server's config is loaded by then
            self.base = base_script(page_paths(), st.get_option("server.baseUrlPath") or "")
            self.preload = preload_links()
        return self.base + self.preload

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path", "")
        if (scope["type"] != "http" or scope.get("method") not in ("GET", "HEAD") or "/_stcore/" in path
                or "." in path.rsplit("/", 1)[-1]):
            await self.app(scope, receive, send)
            return
        scope = dict(scope, headers=[(k, v) for k, v in scope["headers"] if k.lower() != b"accept-encoding"])
        start: dict = {}
        body: list[bytes] = []

        async def send_page(msg) -> None:
            if msg["type"] == "http.response.start":
                headers = dict(msg.get("headers", []))
                if (headers.get(b"content-type", b"").startswith(b"text/html")
                        and b"content-encoding" not in headers):
                    if scope["method"] == "HEAD":  # no body: only the length it would have
                        n = int(headers.get(b"content-length", b"0")) + len(self._script())
                        msg = dict(msg, headers=[*_without_length(msg), (b"content-length", str(n).encode())])
                    else:
                        start["msg"] = msg  # hold it: the body's length changes
                        return
            elif "msg" in start:
                body.append(msg.get("body", b""))
                if msg.get("more_body"):
                    return
                html = b"".join(body).replace(b"</head>", self._script() + b"</head>", 1)
                headers = [*_without_length(start["msg"]), (b"content-length", str(len(html)).encode())]
                await send(dict(start["msg"], headers=headers))
                msg = {"type": "http.response.body", "body": html}
            await send(msg)

        await self.app(scope, receive, send_page)


def _without_length(msg) -> list:
    return [(k, v) for k, v in msg.get("headers", []) if k.lower() != b"content-length"]


# Every response on a reused connection waited 40 ms: Streamlit 1.67's server binds its listening socket itself
# (starlette_server._bind_socket: socket.socket(family), so proto 0), and asyncio turns Nagle's algorithm off only on
# sockets whose proto is IPPROTO_TCP (asyncio.base_events._set_nodelay), so a response written in two parts (headers,
# then body; a websocket message behind one not yet acknowledged) waited for the browser's delayed ACK. A static file
# on a kept-alive connection took a median of 44.0 ms, 1.4 ms with TCP_NODELAY; a page's first screen fetches about
# 40 of them on 6 connections (docs/history/benchmarks-2026-12.md, issue 30). The server imports this module after
# binding its socket, before it accepts a connection, and each accepted connection inherits the option from the
# listener (Linux).
def tcp_nodelay() -> int:
    """Set TCP_NODELAY on this process's listening TCP sockets (read from /proc/self/fd); how many were set."""
    try:
        fds = [int(f) for f in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc (not Linux): left as the server made them
        return 0
    n = 0
    for fd in fds:
        try:
            dup = os.dup(fd)  # a duplicate: closing it leaves the server's descriptor open
        except OSError:  # closed meanwhile
            continue
        try:
            sock = socket.socket(fileno=dup)
        except OSError:  # not a socket
            os.close(dup)
            continue
        with sock:
            try:
                if (sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM
                        and sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    n += 1
            except OSError:
                continue
    return n


tcp_nodelay()
app = st.App(APP.name, lifespan=lifespan, middleware=[Middleware(PageBase)])
