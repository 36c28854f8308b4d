"""Layout shared by every figure: slide-ready (title, settings caption, opaque white, dark text, legend below)."""

from __future__ import annotations

import html
import re
import textwrap

import plotly.graph_objects as go

from albert_core.units import GIB, format_bytes, format_count, format_flops

INK = "#262730"  # text: Streamlit's light-theme text color, readable on the white background
MUTED = "#5C5F6A"  # caption
GRID = "rgba(38,39,48,0.12)"
PAPER = "#FFFFFF"  # opaque: a PNG export pastes onto a dark slide unchanged
HEIGHT = 520  # px of one chart, legend included


def style(fig: go.Figure, *, x: str, y: str, title: str | None = None, log_x: bool = False,
          log_y: bool = False, hovermode: str = "closest") -> go.Figure:
    """Axis titles with units, white background, legend below the plot (clear of Plotly's toolbar)."""
    fig.update_layout(template="none", hovermode=hovermode, height=HEIGHT)
    _frame(fig)
    if title:
        slide(fig, title)
    fig.update_xaxes(title_text=x, type="log" if log_x else None, dtick=1 if log_x else None)  # log: powers of ten
    fig.update_yaxes(title_text=y, type="log" if log_y else None, dtick=1 if log_y else None)
    return fig


def _frame(fig: go.Figure) -> None:
    fig.update_layout(
        paper_bgcolor=PAPER, plot_bgcolor=PAPER, font=dict(size=13, color=INK),
        legend=dict(orientation="h", yref="container", y=0.0, yanchor="bottom", xanchor="left", x=0,
                    title_text="", font=dict(size=12, color=INK), bgcolor="rgba(255,255,255,0.9)"),
        margin=dict(l=70, r=24, t=60, b=40),
        hoverlabel=dict(font=dict(size=12)),
    )
    fig.update_xaxes(gridcolor=GRID, zerolinecolor=GRID, linecolor=GRID, automargin=True)
    fig.update_yaxes(gridcolor=GRID, zerolinecolor=GRID, linecolor=GRID, automargin=True)


def wrap(text: str, width: int = 56) -> list[str]:
    """Caption lines short enough for a phone-width figure's title area."""
    return textwrap.wrap(text, width) or [""]


def slide(fig: go.Figure, title: str, caption: str = "", *, pad: int = 14) -> go.Figure:
    """Title (bold) and a subtitle with the settings, on an opaque white figure: what a PNG export keeps.

    The title sits above the plot area and pushes the top margin as far as it needs (automargin); pad: room
    between it and the plot (more where subplot titles sit above the panels).
    """
    _frame(fig)
    lines = wrap(caption) if caption else []
    heads = wrap(title, 44)  # a phone's width at 16 px
    sub = "<br>".join(plotly_text(s) for s in lines)
    fig.update_layout(
        title=dict(text="<br>".join(f"<b>{plotly_text(h)}</b>" for h in heads), x=0.01, xanchor="left", xref="container", y=1,
                   yanchor="top", yref="container", pad=dict(t=12 + 20 * (len(heads) - 1)),  # more lines grow upwards
                   font=dict(size=16, color=INK),
                   subtitle=dict(text=sub, font=dict(size=12, color=MUTED))),
        margin=dict(t=18 + 22 * len(heads) + 18 * len(lines) + pad),  # title, its subtitle lines, then the gap
    )
    fig.layout.meta = {"title": title, "caption": caption}
    return fig


def title_of(fig: go.Figure) -> str:
    """The plain title of a figure made by slide() (for file names and tests)."""
    meta = fig.layout.meta
    if isinstance(meta, dict) and meta.get("title"):
        return meta["title"]
    text = fig.layout.title.text or ""
    return html.unescape(re.sub(r"<[^>]+>", "", text.split("<br>")[0]))


def plotly_text(name: str) -> str:
    """A config name as Plotly text. Plotly renders tags (<b>, <br>, <a href>) in legends, tick labels,
    subplot titles and hover text, and fills %{...} in a hovertemplate: escape both, so the name shows as typed
    (Plotly turns the entities back into characters)."""
    return html.escape(str(name), quote=False).replace("%{", "%&#123;")


def gib(n: int) -> float:
    """Bytes -> GiB for a y axis; the exact bytes go into the hover text."""
    return n / GIB


def counts(values) -> list[str]:
    return [format_count(int(v)) for v in values]


def sizes(values) -> list[str]:
    return [format_bytes(int(v)) for v in values]


def flops(values) -> list[str]:
    return [format_flops(int(v)) for v in values]
