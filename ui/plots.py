"""Draw a figure the same way everywhere: titled, captioned, wrapped to the width it is drawn at, and with a
slide-ready PNG export."""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from charts.base import HEIGHT, refit, slide, title_of, titles_meta

from .text import file_stem

EXPORT_WIDTH = 1600  # px of the exported PNG before the scale: a 16:9 slide at 3200 px wide with scale 2
EXPORT_SCALE = 2


def export_config(fig: go.Figure, name: str) -> dict:
    """Plotly's config: the toolbar only on hover, no logo; "Download plot as png" with a descriptive file name
    at slide resolution (the figure's own background and fonts are kept: white, dark text)."""
    height = int(fig.layout.height or HEIGHT)
    return {
        "displaylogo": False,
        "displayModeBar": "hover",
        "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d"],
        "toImageButtonOptions": {"format": "png", "filename": file_stem(name)[:120], "scale": EXPORT_SCALE,
                                 "width": EXPORT_WIDTH, "height": max(height, 700)},
    }


def show(fig: go.Figure, key: str, title: str | None = None, caption: str = "", *, where=st,
         share: float = 1.0) -> go.Figure:
    """Title and caption on the figure itself (what an export keeps; a figure from ui.figures has them
    already), wrapped for the width the figure is drawn at (figure_px), then st.plotly_chart with theme=None:
    Streamlit's theme would restyle the figure in the app but not in the export.

    share: the part of the page's width the figure's column takes (0.5: one of two columns).
    """
    px, v = figure_px(share), view()
    main = v["main"] if v else None
    if title:
        slide(fig, title, caption, figure_px=px, main_px=main)
    fig = fitted(fig, px, main)
    where.plotly_chart(fig, key=key, width="stretch", theme=None,
                       config=export_config(fig, f"albert-explorer_{key}_{title_of(fig)}"))
    return fig


# ---- the width figures are drawn at ------------------------------------------------------------------------
# Plotly does not wrap text, and the server cannot see the screen: a small component at the foot of the main
# area reports the main area's width (floored to 10 px, so a figure is never narrower than it was wrapped
# for) and whether columns stack (Streamlit stacks them on screens up to 640 px wide), once and then on each
# change, each time once the app is idle; that reruns the script, and the figures' titles are wrapped again. Before
# its first report, the first run wraps them for the view the page's script estimated (serve.py's cookie): where
# that is what the component measures, it reports nothing and the visit runs the script once. Without either they
# wrap for a phone (charts.base.TEXT_PX), which fits every screen.
WIDTH_KEY = "_figure_width"
COLUMN_GAP_PX = 16  # st.columns' "small" gap (1rem)
_WIDTH_JS = """
export default function({parentElement, data, setStateValue}) {
  let last = JSON.stringify((data && data.known) || null), timer = null;
  window.__aeKnown = last;  // for the browser tests: the view the last run's figures were wrapped for
  // for the browser tests: the number of this session's script runs that drew the whole page (this component is
  // drawn last), and whether a width report is waiting (a resize seen, not yet reported or found unchanged)
  window.__aeDrawn = (data && data.run) || 0;
  window.__aePending = true;
  // the width as if the scroll container always showed its scrollbar: a page that grows one (a result arrives)
  // or loses it changes nothing, and a figure is never narrower than the width reported
  const probe = document.createElement('div');
  probe.style.cssText = 'position:absolute;top:-9999px;width:100px;height:100px;overflow:scroll';
  document.body.appendChild(probe);
  const bar = probe.offsetWidth - probe.clientWidth;  // this browser's scrollbar (0 where they overlay)
  probe.remove();
  const scroller = () => {
    for (let el = parentElement.parentElement; el; el = el.parentElement) {
      const y = getComputedStyle(el).overflowY;
      if ((y === 'auto' || y === 'scroll') && el.clientHeight > 0) return el;
    }
    return null;
  };
  const report = () => {
    const box = scroller();
    const shown = box ? box.offsetWidth - box.clientWidth - (parseFloat(getComputedStyle(box).borderLeftWidth) || 0)
        - (parseFloat(getComputedStyle(box).borderRightWidth) || 0) : window.innerWidth - document.documentElement.clientWidth;
    const width = parentElement.getBoundingClientRect().width + Math.max(0, shown) - bar;
    const main = Math.floor(width / 10) * 10;
    if (main <= 0) { window.__aePending = false; return; }  // not laid out (a hidden page)
    const view = {main: main, stacked: window.matchMedia('(max-width: 640px)').matches};
    window.__aeView = view;  // for the browser tests: the view the figures are to be wrapped for
    const now = JSON.stringify(view);
    if (now === last) { window.__aePending = false; return; }
    // never while a script run is under way: a new value would stop that run midway (before the sidebar's
    // widgets and the link are drawn) and start another; report once the app is idle
    const app = document.querySelector('[data-testid="stApp"]');
    if (app && app.getAttribute('data-test-script-state') === 'running') { timer = setTimeout(report, 150); return; }
    last = now;
    window.__aeReports = (window.__aeReports || 0) + 1;  // for the browser tests: reports sent by this page
    window.__aePending = false;  // the run this report starts is awaited through __aeDrawn and __aeKnown
    setStateValue('view', view);
  };
  // a ResizeObserver calls back once on observe, then on every change: debounced, one report per change
  const observer = new ResizeObserver(() => {
    window.__aePending = true; clearTimeout(timer); timer = setTimeout(report, 120);
  });
  observer.observe(parentElement);
  return () => { observer.disconnect(); clearTimeout(timer); };
}
"""
_width_component = st.components.v2.component("albert_explorer.figure_width", js=_WIDTH_JS, isolate_styles=False)


VIEW_COOKIE = "ae_view"  # serve.py's VIEW_JS writes it into the page before the websocket opens


def cookie_view(value: object) -> dict[str, Any] | None:
    """The view in serve.py's cookie, "main:stacked" ("940:0"), or None where it is absent or malformed."""
    m = re.fullmatch(r"(\d{2,5}):([01])", value) if isinstance(value, str) else None  # AppTest's context: a mock
    return {"main": int(m.group(1)), "stacked": m.group(2) == "1"} if m and int(m.group(1)) > 0 else None


def view() -> dict[str, Any] | None:
    """The main area's width in px and whether columns stack, as the browser last reported them, or before its
    first report as the page's script estimated them (serve.py's cookie); None: neither (AppTest, or `streamlit run
    app.py`, which has no page script)."""
    state: Any = st.session_state.get(WIDTH_KEY)  # the component's result: a mapping of its state values
    got = state.get("view") if state is not None and hasattr(state, "get") else None
    if isinstance(got, dict) and isinstance(got.get("main"), int | float) and got["main"] > 0:
        return {"main": int(got["main"]), "stacked": bool(got.get("stacked"))}
    try:
        cookies = st.context.cookies
    except Exception:  # no script run context (a thread of its own)
        return None
    return cookie_view(cookies.get(VIEW_COOKIE) if hasattr(cookies, "get") else None)


def figure_px(share: float = 1.0) -> float | None:
    """Width a figure is drawn at, in px: the main area's, or one column's of it where columns stand side by
    side (None: unknown)."""
    v = view()
    if v is None:
        return None
    return float(v["main"]) if share >= 1 or v["stacked"] else (v["main"] - COLUMN_GAP_PX) * share


RUNS_KEY = "_ae_drawn_runs"


def measure_width() -> None:
    """The width component, at the foot of the main area (app.py): no height, nothing drawn. It also carries the
    count of this session's runs that reached it, the page drawn in full: the browser tests wait on that signal
    (window.__aeDrawn), not on a time."""
    runs = st.session_state[RUNS_KEY] = st.session_state.get(RUNS_KEY, 0) + 1
    _width_component(key=WIDTH_KEY, data={"known": view(), "run": runs}, default={"view": None},
                     on_view_change=lambda: None)


# Figures from ui.figures are cached objects shared by every session (callers must not change them): the
# copy wrapped for a width is made once and kept, by the figure it was made from.
_FITTED: OrderedDict[tuple[int, float, int], tuple[go.Figure, go.Figure]] = OrderedDict()
_FITTED_LOCK = threading.Lock()
_FITTED_MAX = 256


def fitted(fig: go.Figure, px: float | None, main: int | None) -> go.Figure:
    """`fig` with its title and subtitle wrapped for a figure `px` wide on a page `main` px wide: fig itself
    where it already is (or px is unknown, or it has no slide() title), else a copy made once per figure and
    width."""
    meta = titles_meta(fig)
    if meta is None or px is None or main is None or (meta.get("figure_px"), meta.get("main_px")) == (px, main):
        return fig
    key = (id(fig), px, main)
    with _FITTED_LOCK:
        hit = _FITTED.get(key)
        if hit is not None and hit[0] is fig:  # the same object, not a new one at a reused id
            _FITTED.move_to_end(key)
            return hit[1]
    copy = refit(fig, px, main)
    with _FITTED_LOCK:
        _FITTED[key] = (fig, copy)
        while len(_FITTED) > _FITTED_MAX:
            _FITTED.popitem(last=False)
    return copy


# Plotly's toolbar is always shown on touch screens, where it covers the title; on narrow screens it goes
# (exporting a slide is a desktop task). Style only: st.html puts it in an invisible container.
# on a phone: no Plotly toolbar over the charts; a table's toolbar (search, download, full screen), which a touch
# screen shows all the time above the table, gets room of its own instead of covering the caption above it;
# on every screen, the sidebar's Compare box shows every config it holds, each name whole (Streamlit's box stops at
# 155 px, about five chips, and scrolls; a chip cut "bert-base-multiling…")
NARROW_CSS = """<style>@media (max-width: 640px) {
  .js-plotly-plot .modebar-container { display: none !important; }
  [data-testid="stElementContainer"]:has([data-testid="stDataFrame"] > [data-testid="stElementToolbar"]) {
    margin-top: 2.75rem; }
}
.st-key-compare [data-testid="stMultiSelect"] div { max-height: none; }
.st-key-compare [data-testid="stMultiSelect"] span:has(> span[title]) { height: auto; min-height: 28px; }
.st-key-compare [data-testid="stMultiSelect"] span[title] { white-space: normal; overflow-wrap: anywhere; line-height: 1.25; }
</style>"""


def narrow_screen_css() -> None:
    st.html(NARROW_CSS)
