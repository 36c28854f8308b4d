"""Draw a figure the same way everywhere: titled, captioned, and with a slide-ready PNG export."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from charts.base import HEIGHT, slide, title_of

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


def show(fig: go.Figure, key: str, title: str | None = None, caption: str = "", *, where=st) -> go.Figure:
    """Title and caption on the figure itself (what an export keeps; a figure from ui.figures has them
    already), then st.plotly_chart with theme=None: Streamlit's theme would restyle the figure in the app
    but not in the export."""
    if title:
        slide(fig, title, caption)
    where.plotly_chart(fig, key=key, width="stretch", theme=None,
                       config=export_config(fig, f"albert-explorer_{key}_{title_of(fig)}"))
    return fig


# Plotly's toolbar is always shown on touch screens, where it covers the title; on narrow screens it goes
# (exporting a slide is a desktop task). Style only: st.html puts it in an invisible container.
NARROW_CSS = """<style>@media (max-width: 640px) {
  .js-plotly-plot .modebar-container { display: none !important; }
}</style>"""


def narrow_screen_css() -> None:
    st.html(NARROW_CSS)
