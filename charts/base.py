"""Layout shared by every figure: neutral colors that read on Streamlit's light and dark themes."""

from __future__ import annotations

import html

import plotly.graph_objects as go

from albert_core.units import GIB, format_bytes, format_count, format_flops


def style(fig: go.Figure, *, x: str, y: str, title: str | None = None, log_x: bool = False,
          log_y: bool = False, hovermode: str = "closest") -> go.Figure:
    """Axis titles with units, transparent backgrounds (the app's theme shows through), legend on top."""
    fig.update_layout(
        template="none",
        title=title,
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        hovermode=hovermode,
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0, title_text=""),
        margin=dict(l=70, r=20, t=60 if title else 30, b=60),
        font=dict(size=13),
    )
    grid = "rgba(128,128,128,0.25)"
    fig.update_xaxes(title_text=x, type="log" if log_x else None, gridcolor=grid, zerolinecolor=grid,
                     dtick=1 if log_x else None)  # log axes: ticks at powers of ten only
    fig.update_yaxes(title_text=y, type="log" if log_y else None, gridcolor=grid, zerolinecolor=grid,
                     dtick=1 if log_y else None)
    return fig


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
