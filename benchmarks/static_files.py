"""How long the server takes to send the small JavaScript chunks of a page's first screen (issue 30, TCP_NODELAY).

A browser asks for about 40 lazy chunks (most under 2 kB) on at most 6 kept-alive connections. Without TCP_NODELAY on
the server's connections every response after a connection's first waited 40 ms for the client's delayed ACK
(serve.tcp_nodelay). This fetches the chunks of the first screen's widget types (the files serve.preload_links
resolves for them, in the installed Streamlit) from this app's server and from a plain `streamlit run` of a one-chart
app, as a browser would: per request on one kept-alive connection, and all of them on 6 connections.

Usage: .venv/bin/python benchmarks/static_files.py [--app PATH/serve.py] [--rounds N]
"""

from __future__ import annotations

import argparse
import http.client
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from harness import streamlit_server  # noqa: E402

import serve  # noqa: E402

# the element types on every page's first screen (benchmarks/chunks.py lists what a visit fetches)
WIDGETS = ("Selectbox", "Multiselect", "Button", "Html", "BidiComponent", "NumberInput", "Checkbox")
ONE_CHART = "import plotly.graph_objects as go\nimport streamlit as st\n\nst.plotly_chart(go.Figure(go.Bar(y=[1, 2])))\n"


def chunk_names() -> list[str]:
    return re.findall(r'href="\./static/js/([^"]+)"', serve.preload_links(WIDGETS).decode())


def _get(conn: http.client.HTTPConnection, name: str) -> float:
    start = time.perf_counter()
    conn.request("GET", "/static/js/" + name)
    resp = conn.getresponse()
    resp.read()
    if resp.status != 200:
        raise RuntimeError(f"{name}: HTTP {resp.status}")
    return (time.perf_counter() - start) * 1000


def one_connection(host: str, port: int, names: list[str], rounds: int) -> list[float]:
    """ms per request, every request on one kept-alive connection."""
    conn = http.client.HTTPConnection(host, port)
    try:
        return [_get(conn, n) for _ in range(rounds) for n in names]
    finally:
        conn.close()


def six_connections(host: str, port: int, names: list[str]) -> float:
    """ms for all of names on 6 kept-alive connections, as a browser fetches them."""
    todo, lock = list(names), threading.Lock()

    def worker() -> None:
        conn = http.client.HTTPConnection(host, port)
        try:
            while True:
                with lock:
                    if not todo:
                        return
                    name = todo.pop()
                _get(conn, name)
        finally:
            conn.close()

    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--app", type=Path, default=ROOT / "serve.py")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    names = chunk_names()
    with tempfile.TemporaryDirectory() as tmp:
        one_chart = Path(tmp) / "app.py"
        one_chart.write_text(ONE_CHART)
        for label, script in ((str(args.app.relative_to(ROOT) if args.app.is_relative_to(ROOT) else args.app), args.app),
                              ("one-chart app (streamlit run)", one_chart)):
            with streamlit_server(script=script, timeout=90, warm_worker=False) as (base, _):
                host, port = base.removeprefix("http://").split(":")
                six_connections(host, int(port), names)  # the server's first answers are slower: not counted
                per = one_connection(host, int(port), names, args.rounds)
                batch = [six_connections(host, int(port), names) for _ in range(args.rounds)]
                print(f"{label}: {len(names)} chunks; per request on one connection median {statistics.median(per):.1f} ms "
                      f"(min {min(per):.1f}, max {max(per):.1f}); all on 6 connections median {statistics.median(batch):.0f} ms")


if __name__ == "__main__":
    main()
