"""serve.py: `streamlit run serve.py` serves app.py as Streamlit's ASGI app; its warm-up imports what every page
needs (never torch), and PageBase puts the server's base into every page's HTML. The browser suite runs the app
through serve.py (tests/browser/harness.py)."""

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import streamlit as st
from streamlit.web.server.app_discovery import discover_asgi_app

import serve

ROOT = Path(__file__).resolve().parents[1]


def test_streamlit_run_finds_the_app_in_serve_py():
    found = discover_asgi_app(ROOT / "serve.py")
    assert found.is_asgi_app and found.app_name == "app"
    assert not discover_asgi_app(ROOT / "app.py").is_asgi_app  # app.py stays a plain Streamlit script


def test_warm_up_imports_what_the_pages_need_and_not_torch():
    code = ("import json, sys; sys.path.insert(0, '.'); import serve; before = set(sys.modules); serve.warm_up(); "
            "print(json.dumps({'before': sorted(m for m in ('pandas', 'ui.figures') if m in before), "
            "'after': sorted(m for m in ('pandas', 'ui.figures', 'ui.sidebar', 'torch', 'transformers') "
            "if m in sys.modules)}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["before"] == []  # importing serve.py itself loads none of it: the server starts at once
    assert seen["after"] == ["pandas", "ui.figures", "ui.sidebar"]


def test_warm_up_freezes_what_lives_on_and_leaves_no_garbage_behind():
    """serve.warm_up ends with gc.freeze(): the loaded modules go to the permanent generation, so Streamlit's
    gc.collect(2) after every run stops walking them; the warm-up's own figure (Plotly's objects hold cycles) is
    collected before, not frozen with them: the collector is off from the figure on and the youngest generation is
    collected alone (a full collection cost the first visit 47 ms). The collector is on again afterwards (a server
    left without it would keep every cycle its runs make)."""
    code = ("import gc, sys; sys.path.insert(0, '.'); import serve; serve.warm_up(); "
            "from plotly.basedatatypes import BaseFigure; frozen, on = gc.get_freeze_count(), gc.isenabled(); "
            "gc.unfreeze(); print(frozen, int(on), sum(isinstance(o, BaseFigure) for o in gc.get_objects()))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    frozen, on, figures = map(int, out.stdout.split()[-3:])
    assert frozen > 100_000 and on == 1 and figures == 0


# Two threads importing the app at once (serve.py's warm-up, a script run that a visitor started meanwhile): the
# warm-up held inside albert_core/__init__ (a loader pauses it there), the run imports albert_core.step.compare.
IMPORT_RACE = """import importlib.abc
import importlib.machinery
import json
import sys
import threading
import time
sys.path.insert(0, '.')
import streamlit  # noqa: F401  (the server has it loaded before either thread starts)
from ui import legacy

gated = sys.argv[1] == "gated"
warm = threading.Event()
if gated:
    legacy.WARM_UP = warm
paused, resume = threading.Event(), threading.Event()


class PauseInsideAlbertCore(importlib.abc.MetaPathFinder):
    # holds the warm-up inside albert_core/__init__ (its module lock held, not the global import lock) while it runs
    # albert_core/config.py, before it imports .step.compare
    def find_spec(self, name, path, target=None):
        if name != "albert_core.config" or threading.current_thread().name != "warm-up":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        real = spec.loader

        class Pausing(importlib.abc.Loader):
            def create_module(self, spec):
                return real.create_module(spec)

            def exec_module(self, module):
                paused.set()
                resume.wait(30)
                real.exec_module(module)

        spec.loader = Pausing()
        return spec


sys.meta_path.insert(0, PauseInsideAlbertCore())
errors = []


def warm_up():
    try:
        import albert_core  # noqa: F401
    except Exception as e:
        errors.append(["warm-up", type(e).__name__])
    finally:
        warm.set()


def run():
    try:
        legacy.after_warm_up()
        from albert_core.step.compare import Settings  # noqa: F401
    except Exception as e:
        errors.append(["run", type(e).__name__])


def waiting_on(thread):
    # what the thread waits in: the module lock's name, 'after_warm_up', or None
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code.co_name == "acquire" and "_bootstrap" in frame.f_code.co_filename:
            return getattr(frame.f_locals.get("self"), "name", None)
        if frame.f_code.co_name == "after_warm_up":
            return "after_warm_up"
        frame = frame.f_back
    return None


a = threading.Thread(target=warm_up, name="warm-up")
a.start()
assert paused.wait(30)
b = threading.Thread(target=run, name="run")
b.start()
deadline = time.monotonic() + 30
while waiting_on(b) not in ("albert_core", "after_warm_up") and time.monotonic() < deadline:
    time.sleep(0.01)
seen = waiting_on(b)
resume.set()
a.join(30)
b.join(30)
print(json.dumps({"run waited on": seen, "errors": errors}))
"""


@pytest.mark.parametrize("gated", [False, True])
def test_a_run_waits_for_the_warm_up_before_importing_or_the_imports_deadlock(gated):
    """Without the gate (ui.legacy.after_warm_up) the run takes the submodule's module lock and waits for albert_core,
    whose lock the warm-up holds while it imports that submodule: Python raises _DeadlockError, and the page showed it
    (a deep link opened as the server started). With it the run waits for the warm-up, and both import cleanly."""
    out = subprocess.run([sys.executable, "-c", IMPORT_RACE, "gated" if gated else "ungated"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    if gated:
        assert seen == {"run waited on": "after_warm_up", "errors": []}
    else:
        assert seen["run waited on"] == "albert_core" and ["warm-up", "_DeadlockError"] in seen["errors"]


def test_the_servers_lifespan_gates_script_runs_on_its_warm_up():
    code = ("import asyncio, sys; sys.path.insert(0, '.'); import serve; from ui import legacy\n"
            "serve.warm_up = serve.WARM.set  # the thread's work is not what is tested here\n"
            "async def main():\n"
            "    async with serve.lifespan(None):\n"
            "        print(legacy.WARM_UP is serve.WARM, serve.WARM.wait(120))\n"
            "asyncio.run(main())")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-2:] == ["True", "True"]


FIRST_RUN = """
import inspect, json, sys
sys.path.insert(0, ".")
import serve
serve.warm_up()
from streamlit.testing.v1 import AppTest
new, stacks = {}, []
real_stack = inspect.stack
inspect.stack = lambda *a, **k: stacks.append(1) or real_stack(*a, **k)
for page in ("overview", "parameters", "memory", "fit", "compute", "verify"):  # each page's first run, in turn
    before = set(sys.modules)
    at = AppTest.from_file("app.py", default_timeout=120)
    at.switch_page(f"pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    new[page] = sorted(set(sys.modules) - before)
print(json.dumps({"imports": new, "inspect.stack calls": len(stacks)}))
"""
# what a first script run may still import: AppTest's own component discovery (the server does it at its start)
APPTEST_ONLY = ("packaging", "streamlit.components.v2.manifest_scanner")


def test_after_warm_up_a_pages_first_run_imports_nothing_and_walks_no_call_stack():
    """serve.warm_up does what a first script run would otherwise do on a visitor's time: every page's first run
    after it (in one fresh process, so a module a page needs is caught at the first page that imports it) loads
    no module of the app, pandas, Plotly, pyarrow or PIL, and never torch. Nor does it call inspect.stack: Streamlit's
    first element of a process asks whether it runs in a REPL that way (env_util.is_repl, 0.11 s in a server's first
    run), and the warm-up marks that check done, as `streamlit run` never warns."""
    out = subprocess.run([sys.executable, "-c", FIRST_RUN], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["inspect.stack calls"] == 0
    new = seen["imports"]
    assert set(new) == {"overview", "parameters", "memory", "fit", "compute", "verify"}
    roots = ("ui", "charts", "albert_core", "pandas", "plotly", "_plotly_utils", "pyarrow", "PIL", "streamlit",
             "torch", "transformers")
    late = {page: [m for m in mods if m.split(".")[0] in roots and not m.startswith(APPTEST_ONLY)]
            for page, mods in new.items()}
    assert late == {page: [] for page in new}, "import these in serve.warm_up"


# serve.PageBase: the server's base in every page's HTML (the browser side: tests/browser/test_page_base.py)
HTML = b"<!DOCTYPE html><html><head><title>Streamlit</title></head><body></body></html>"


def asgi(method: str, path: str, *, headers=None, body=HTML, content_type=b"text/html; charset=utf-8"):
    """serve.PageBase around an app that answers `body` in two parts; (what the app was asked, what was sent)."""
    asked = {}
    resp = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *(headers or [])]

    async def inner(scope, receive, send):
        asked.update(scope)
        await send({"type": "http.response.start", "status": 200, "headers": resp})
        if method == "HEAD":
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.body", "body": body[:20], "more_body": True})
        await send({"type": "http.response.body", "body": body[20:]})

    sent = []

    async def send(msg):
        sent.append(msg)

    async def receive():
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "method": method, "path": path, "headers": [(b"accept-encoding", b"gzip")]}
    asyncio.run(serve.PageBase(inner, script=serve.base_script(["memory"], ""))(scope, receive, send))
    return asked, sent


def sent_body(sent) -> bytes:
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def sent_length(sent) -> int:
    return int(dict(sent[0]["headers"])[b"content-length"])


def test_a_page_gets_the_base_script_once_with_its_length():
    asked, sent = asgi("GET", "/memory")
    body = sent_body(sent)
    script = serve.base_script(["memory"], "")
    assert body == HTML.replace(b"</head>", script + b"</head>")
    assert body.count(b"<script>") == 1 and sent_length(sent) == len(body)
    assert dict(asked["headers"]).get(b"accept-encoding") is None  # asked uncompressed, to be edited


def test_head_of_a_page_says_the_length_its_get_has():
    _, got = asgi("GET", "/memory")
    _, head = asgi("HEAD", "/memory")
    assert sent_length(head) == sent_length(got) == len(sent_body(got)) and sent_body(head) == b""


@pytest.mark.parametrize("method,path,kw", [
    ("GET", "/static/js/index.js", {}),  # a file: has a dot
    ("GET", "/_stcore/host-config", {}),
    ("GET", "/memory/_stcore/health", {}),
    ("POST", "/memory", {}),
    ("GET", "/memory", {"content_type": b"application/json"}),
    ("GET", "/memory", {"headers": [(b"content-encoding", b"gzip")]}),  # compressed anyway: not edited
])
def test_anything_else_passes_unchanged(method, path, kw):
    _, sent = asgi(method, path, **kw)
    assert sent_body(sent) == HTML and sent_length(sent) == len(HTML)


def test_the_base_script_knows_every_page_and_the_servers_base():
    assert serve.page_paths() == ["home", "overview", "parameters", "memory", "fit", "compute", "verify"]
    js = serve.base_script(["memory"], "/a/b/").decode()
    assert '"base": "/a/b/"' in js and '"pages": ["memory"]' in js
    assert '"base": "/"' in serve.base_script(["memory"], "").decode()
    assert "</script" not in serve.base_script(["</script>"], "").decode()[:-len("</script>")]


def test_the_page_script_writes_the_view_cookie_the_first_run_reads():
    """serve.VIEW_JS writes the cookie ui/plots.view reads before the first report; its breakpoints are Streamlit's
    (the browser test test_page_base.py holds its estimate equal to what the width component measures)."""
    from ui import plots

    js = serve.base_script(["memory"], "").decode()
    assert serve.VIEW_COOKIE == plots.VIEW_COOKIE and f"document.cookie='{plots.VIEW_COOKIE}='" in js
    assert js.count("<script>") == 1 and serve.VIEW_JS in js


def test_the_page_preloads_plotlys_chunk_and_what_it_imports(tmp_path):
    """serve.preload_links: the named chunk and its static imports, minus those index.html already names, as
    modulepreload links; in the installed Streamlit, Plotly's chunk is a file its static folder serves."""
    js = tmp_path / "static" / "js"
    js.mkdir(parents=True)
    (tmp_path / "index.html").write_text('<script type="module" src="./static/js/index.A.js"></script>'
                                         '<link rel="modulepreload" href="./static/js/shared.B.js">')
    (js / "PlotlyChart.X1.js").write_text('import{a}from"./index.A.js";import"./shared.B.js";import{b}from"./wrap.C.js";')
    (js / "wrap.C.js").write_text('import{c}from"./print.D.js";')
    (js / "print.D.js").write_text("export const c=1;")
    links = serve.preload_links(("PlotlyChart", "Missing"), static=tmp_path).decode()
    assert links == "".join(f'<link rel="modulepreload" crossorigin href="./static/js/{n}">'
                            for n in ("PlotlyChart.X1.js", "wrap.C.js", "print.D.js"))
    installed = serve.preload_links()
    names = [n.decode() for n in re.findall(rb'href="\./static/js/([^"]+)"', installed)]
    assert names[0].startswith("PlotlyChart.") and (Path(st.__file__).with_name("static") / "static" / "js" / names[0]).is_file()
    from tests.browser.harness import WARM_LINE

    assert serve.WARM_LINE == WARM_LINE  # the line the browser tests wait for (harness.WARMED)
    page = serve.PageBase(None)  # from the first request, warm_up done or not
    assert page._script() == serve.base_script(serve.page_paths(), "") + installed


def _listener() -> socket.socket:
    s = socket.socket(socket.AF_INET)  # proto 0, as Streamlit's starlette_server._bind_socket makes it
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


def test_tcp_nodelay_is_set_on_listening_sockets_and_accepted_connections_inherit_it():
    """serve.tcp_nodelay: without it every response on a kept-alive connection waited 40 ms for the browser's
    delayed ACK (docs/history/benchmarks-2026-12.md, issue 30)."""
    before = len(os.listdir("/proc/self/fd"))
    with _listener() as listening, socket.socket(socket.AF_INET) as bound_only:
        bound_only.bind(("127.0.0.1", 0))  # not listening: left alone
        assert listening.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
        assert serve.tcp_nodelay() >= 1
        assert listening.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        assert bound_only.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
        with socket.create_connection(listening.getsockname()) as client:
            accepted, _ = listening.accept()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
                assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0  # only the server's side
    assert len(os.listdir("/proc/self/fd")) == before  # every duplicate it opened is closed


def test_the_server_imports_serve_py_after_binding_so_its_socket_gets_tcp_nodelay():
    """The order `streamlit run serve.py` follows (st.App: the socket is bound, then uvicorn imports the app), in a
    fresh process: a listening socket made first has TCP_NODELAY once serve.py is imported."""
    code = ("import socket, sys; sys.path.insert(0, '.'); s = socket.socket(socket.AF_INET); s.bind(('127.0.0.1', 0)); "
            "s.listen(); import serve; print(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "1"
