"""Serve ALBERT Explorer: `streamlit run serve.py`.

app.py is the app (it routes the pages; AppTest runs it). This file only wraps it as Streamlit's ASGI app
(`st.App`) for one thing `streamlit run app.py` has no hook for: warming the server when it starts. The first
visit after a start otherwise waits for the imports every page needs (pandas alone 0.4-0.5 s on the 2-core
machine), which a bare Streamlit app does not have (docs/app.md, "Speed in the browser": first visit after a
start 1.58-1.66x a one-chart app without the warm-up, 1.28-1.44x with it).
"""

from __future__ import annotations

import threading
from contextlib import asynccontextmanager

import streamlit as st


def warm_up() -> None:
    """Import what every page needs, and let Plotly load the code of the traces the pages draw (it does so lazily,
    on first use). In a thread: the server answers at once, and a first visit that comes before it is done
    waits only for the rest (Python's import lock)."""
    import plotly.graph_objects as go

    from ui import comparison, data, figures, plots, report, sections, sidebar, tables  # noqa: F401

    go.Figure([go.Bar(x=[1], y=[1]), go.Scatter(x=[1], y=[1])])


@asynccontextmanager
async def lifespan(_app):
    threading.Thread(target=warm_up, name="albert-explorer-warm-up", daemon=True).start()
    yield


app = st.App("app.py", lifespan=lifespan)
