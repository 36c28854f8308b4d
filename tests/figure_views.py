"""The figures and tables a page sends, for a view (a link's query) and a screen, read through AppTest.

The app wraps each figure's titles for the width the browser reports (ui/plots.py: the width component writes
`_figure_width`); setting that state before the first run makes AppTest's run the one the browser gets at that
width. So every figure of every tab of every page is collected here without a server or a browser, exactly as
Streamlit sends it (the plotly_chart element's spec and config), and every table as st.dataframe gets it.
tests/browser/test_figure_audit.py draws the figures in plain Chromium and audits what Plotly drew;
tests/browser/test_figure_screens.py checks, in the real app, that these screens are what the browser reports
and that the app draws these very specs.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from albert_core.share import PAGE_TABS

APP = str(Path(__file__).resolve().parents[1] / "app.py")
COLUMN_GAP_PX = 16  # st.columns' "small" gap (ui/plots.COLUMN_GAP_PX)


@dataclass(frozen=True)
class Screen:
    name: str
    viewport: int  # px: the browser window's width
    main: int  # px: the main area's width as the width component reports it (floored to 10 px)
    laid_out: int  # px: the main area's width as the browser lays it out
    stacked: bool  # columns stack (Streamlit stacks them up to 640 px)

    def drawn_px(self, spec: dict) -> float:
        """The width Streamlit draws this figure at: the main area's, or its column's."""
        meta = spec["layout"].get("meta") or {}
        px = meta.get("figure_px") if isinstance(meta, dict) else None
        if self.stacked or px is None or px >= self.main:
            return float(self.laid_out)
        return (self.laid_out - COLUMN_GAP_PX) * px / (self.main - COLUMN_GAP_PX)


# measured in the real app (test_figure_screens.py holds them to it): a 1,400-px window, a 390-px phone
DESKTOP = Screen("desktop", 1400, 940, 940, False)
PHONE = Screen("phone", 390, 350, 358, True)
SCREENS = (DESKTOP, PHONE)


@dataclass(frozen=True)
class View:
    name: str
    query: str  # the link's query string (albert_core.share)
    theme: str  # "light" | "dark": the page around the figures (the figures are white in both: theme=None)
    pages: tuple[str, ...] = tuple(PAGE_TABS)


LONG_NAME = "xlmr-large-proposal-2026q3-shared-ffn-e256-rel-pos-v2-final"  # 60 characters, as a team writes them
# the most configs a page shows: MAX_COMPARE compared beside the sidebar's (albert-base), 13 in all (a tester's link)
MANY = ("compare=bert-base,bert-large,bert-xlarge,albert-large,albert-xlarge,albert-xxlarge,roberta-base,roberta-large,"
        "xlm-roberta-large,distilbert-base-uncased,deberta-v3-large,ModernBERT-large")
VIEWS = (
    View("log axes", "compare=bert-base,xlm-roberta-large&scale=log&params_scale=log", "dark",
         ("parameters", "memory", "compute")),
    # 8,192 positions: a tick at 10K closed the left panel's axis and one at 100 opened the right one's ("10K100")
    View("log axes to 8,192", "preset=ModernBERT-base&compare=bert-base,albert-base&scale=log", "light", ("memory",)),
    View("near-identical", "preset=bert-base&compare=c1,c2&c1.preset=bert-base&c1.name=bert-base-ffn3080"
         "&c1.intermediate_dim=3080&c2.preset=bert-base&c2.name=bert-base-ffn3088&c2.intermediate_dim=3088", "light"),
    View("very different sizes", "preset=electra-small-discriminator&compare=albert-xxlarge,bert-xlarge", "dark"),
    View("long name", f"preset=xlm-roberta-large&name={LONG_NAME}&compare=xlm-roberta-large,bert-base", "light"),
    View("six families", "compare=bert-base,roberta-base,deberta-v3-base,ModernBERT-base,electra-base-discriminator",
         "dark"),
    View("extreme", "preset=bert-large&family=bert&hidden_dim=8&num_heads=1&num_layers=192&embedding_dim=8"
         "&compare=bert-base", "light"),  # from tests/test_valid_configs.py: once crashed Parameters
    View("thirteen configs", MANY, "dark", ("memory", "compute")),  # 13 panels collapsed to 12 px each
)


@dataclass
class Tab:
    """What one tab of a page sends: its figures (key -> spec, config) and its tables, and any error shown."""
    figures: dict[str, dict] = field(default_factory=dict)
    configs: dict[str, dict] = field(default_factory=dict)
    tables: list[pd.DataFrame] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def open_view(query: str | dict, page: str, screen: Screen | None = None) -> AppTest:
    """The app opened on a link (query) at `page`, its figures wrapped for `screen` (None: as before the browser
    reports a width, a phone's)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(dict(parse_qsl(query, keep_blank_values=True)) if isinstance(query, str) else query)
    if screen is not None:
        at.session_state["_figure_width"] = {"view": {"main": screen.main, "stacked": screen.stacked}}
    at.run()
    if page != "overview":
        at.switch_page(f"pages/{page}.py").run()
    return at


def show_tab(at: AppTest, page: str, tab: str) -> AppTest:
    """Open one tab of a chart page, as clicking it does: the open tab is the page control "<page>_tab"."""
    store = dict(at.session_state["_ae_controls"])
    store[f"{page}_tab"] = tab
    at.session_state["_ae_controls"] = store
    return at.run()


def read_tab(at: AppTest) -> Tab:
    tab = Tab()
    for e in at.get("plotly_chart"):
        tab.figures[e.key] = json.loads(e.proto.spec)
        tab.configs[e.key] = json.loads(e.proto.config or "{}")
    tab.tables = [d.value for d in at.dataframe]
    tab.errors = [e.message for e in at.exception] + [e.value for e in at.error]
    return tab


def page_tabs(query: str, page: str, screen: Screen | None, tabs: tuple[str, ...] = ()) -> dict[str, Tab]:
    """Every tab of `page` (or those named) in the view a link's query opens, on `screen`: tab -> what it sends."""
    at = open_view(query, page, screen)
    out = {}
    for tab in tabs or PAGE_TABS[page]:
        out[tab] = read_tab(show_tab(at, page, tab))
    return out


def decoded(v):
    """A trace attribute as plain Python values: Plotly's typed arrays ({"dtype", "bdata", "shape"}) decoded."""
    if isinstance(v, dict) and "bdata" in v and "dtype" in v:
        arr = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        if v.get("shape"):
            arr = arr.reshape([int(s) for s in str(v["shape"]).split(",")])
        return arr.tolist()
    if isinstance(v, list):
        return [decoded(x) for x in v]
    return v


def traces(spec: dict) -> list[dict]:
    """A figure's traces as the browser holds them: the attributes the table comparisons read."""
    keys = ("name", "meta", "legendgroup", "text", "x", "y", "ids", "values", "customdata")
    out = []
    for t in spec["data"]:
        row = {k: decoded(t.get(k)) for k in keys}
        row["group"] = row.pop("legendgroup")
        row["xaxis"] = t.get("xaxis") or "x"
        out.append(row)
    return out
