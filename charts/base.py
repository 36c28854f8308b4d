"""Layout shared by every figure: slide-ready (title, settings caption, opaque white, dark text, legend below)."""

from __future__ import annotations

import html
import math
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
    heads = wrap(title, 38)  # a phone's width at 16 px bold (44 characters ran 11 px past a 390-px screen)
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


# ---- names and log axes, shared by every chart ---------------------------------------------------------------
NAME_LIMIT = 22  # characters of a config name in a tick label or a panel title (the full name: hover)
LEGEND_LIMIT = 32  # characters of a config name in a legend entry: one entry still fits a 390-px phone


def legend_name(name: str) -> str:
    """A config's legend entry: the name, cut in the middle past LEGEND_LIMIT (the hover has it in full)."""
    return plotly_text(short(name, LEGEND_LIMIT))


def short(name: str, limit: int = NAME_LIMIT) -> str:
    """A config name cut in the middle to `limit` characters ("my-proposal-xlm…-v3-final"): the start and the end
    (where versions and sizes sit) stay, so two long names still read apart."""
    name = str(name)
    if len(name) <= limit:
        return name
    head = (limit - 1) * 3 // 5
    return name[:head] + "…" + name[len(name) - (limit - 1 - head):]


def name_ticks(fig: go.Figure, names, *, axis: str = "x") -> None:
    """Category ticks of config names: the categories stay the full (escaped) names, so hover shows them; the
    tick labels are short()."""
    shown = [plotly_text(n) for n in names]
    ticks = dict(tickmode="array", tickvals=shown, ticktext=[plotly_text(short(n)) for n in names])
    (fig.update_xaxes if axis == "x" else fig.update_yaxes)(**ticks)


_SI = {"count": ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K")),
       "flops": ((10**18, "E"), (10**15, "P"), (10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "K")),
       "plain": ()}


def tick_text(v: float, kind: str = "plain") -> str:
    """A full tick label: 200M, 96.6G, 0.5, 2,048 (never Plotly's bare minor-tick digit)."""
    for scale, unit in _SI[kind]:
        if abs(v) >= scale:
            return f"{v / scale:.3g}{unit}"
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:.3g}"


def log_range(values, *, min_decades: float = 1.0, pad: float = 0.07) -> tuple[float, float]:
    """[lo, hi] in log10 units around the positive values, at least `min_decades` wide (a narrow set of values,
    three configs 0.1% apart, sits in the middle of a decade instead of filling the plot with 0.1%)."""
    pos = [float(v) for v in values if v is not None and float(v) > 0]
    if not pos:
        return 0.0, 1.0
    lo, hi = math.log10(min(pos)), math.log10(max(pos))
    if hi - lo < min_decades:
        mid = (lo + hi) / 2
        lo, hi = mid - min_decades / 2, mid + min_decades / 2
    margin = max(pad * (hi - lo), 0.05)  # a marker at either end stays clear of the axis line
    return lo - margin, hi + margin


def log_ticks(lo: float, hi: float, kind: str = "plain", most: int = 7) -> tuple[list[float], list[str]]:
    """Tick values and labels for a log axis from 10^lo to 10^hi: 1-2-5 of each decade, or 1-3, or the powers of
    ten, or every other power, whichever is the densest with at most `most` ticks (and at least 2)."""
    d0, d1 = math.floor(lo), math.ceil(hi)
    best: list[float] = []
    for mantissas, step in (((1, 2, 5), 1), ((1, 3), 1), ((1,), 1), ((1,), 2), ((1,), 3), ((1,), 5), ((1,), 10)):
        vals = [m * 10.0 ** d for d in range(d0, d1 + 1) if d % step == 0 for m in mantissas]
        vals = [v for v in vals if lo <= math.log10(v) <= hi]
        if len(vals) <= most:
            best = vals
            break
    if len(best) < 2:  # too narrow for two of them: both ends
        best = [10.0 ** lo, 10.0 ** hi]
    return best, [tick_text(v, kind) for v in best]


def log_axis(fig: go.Figure, values, *, axis: str, kind: str = "plain", min_decades: float = 1.0,
             most: int = 7, **where) -> tuple[float, float]:
    """Make `axis` ("x" or "y") a log axis over the positive `values` (data units): its range fixed to them
    (log_range: shapes or labels cannot stretch it) and full-number ticks (log_ticks). Returns the range."""
    lo, hi = log_range(values, min_decades=min_decades)
    vals, text = log_ticks(lo, hi, kind, most)
    upd = fig.update_xaxes if axis == "x" else fig.update_yaxes
    upd(type="log", range=[lo, hi], autorange=False, dtick=None, tickmode="array", tickvals=vals, ticktext=text,
        minor=dict(showgrid=False), **where)
    return lo, hi
