"""Layout shared by every figure: slide-ready (title, settings caption, opaque white, dark text, legend below)."""

from __future__ import annotations

import html
import math
import re

import plotly.graph_objects as go

from albert_core.units import GIB, format_bytes, format_count, format_flops

INK = "#262730"  # text: Streamlit's light-theme text color, readable on the white background
MUTED = "#5C5F6A"  # caption
GRID = "rgba(38,39,48,0.12)"
PAPER = "#FFFFFF"  # opaque: a PNG export pastes onto a dark slide unchanged
HEIGHT = 520  # px of one chart, legend included
# Arial's metrics on every system (Arial; Liberation Sans and Arimo on Linux; Helvetica on Apple; Roboto on
# Android is as wide or narrower): the server cannot measure text, but it can tell how wide a line will be drawn
FONT = 'Arial, "Liberation Sans", Arimo, Helvetica, Roboto, sans-serif'
PHONE_PX = 358  # px of a figure on a 390-px phone: what a figure is wrapped for until the browser says its width


def line_px(figure_px: float) -> float:
    """The widest line of a title or subtitle in a figure drawn `figure_px` wide: it starts 1% in (title x=0.01,
    xref container) and keeps 9 px clear of the right edge."""
    return 0.99 * figure_px - 9


MIN_LINE_PX = 160  # a figure narrower than 170 px still wraps its titles at 160 px (Plotly clips what is wider)
TEXT_PX = line_px(PHONE_PX)  # 345.4 px: the widest line on a phone, and on any screen until its width is known

# Advance widths of ASCII 32..126 in 1/100 em (Liberation Sans, measured in Chromium), bold and regular
_WIDTHS = {
    True: (28, 33, 47, 56, 56, 89, 72, 24, 33, 33, 39, 58, 28, 33, 28, 28, 56, 56, 56, 56, 56, 56, 56, 56, 56, 56,
           33, 33, 58, 58, 58, 61, 98, 72, 72, 72, 72, 67, 61, 78, 72, 28, 56, 72, 61, 83, 72, 78, 67, 78, 72, 67,
           61, 72, 67, 94, 67, 67, 61, 33, 28, 33, 58, 56, 33, 56, 61, 56, 61, 56, 33, 61, 61, 28, 28, 56, 28, 89,
           61, 61, 61, 61, 39, 56, 33, 61, 56, 78, 56, 56, 50, 39, 28, 39, 58),
    False: (28, 28, 35, 56, 56, 89, 67, 19, 33, 33, 39, 58, 28, 33, 28, 28, 56, 56, 56, 56, 56, 56, 56, 56, 56, 56,
            28, 28, 58, 58, 58, 56, 102, 67, 67, 72, 72, 67, 61, 78, 72, 28, 50, 67, 56, 83, 72, 78, 67, 78, 72, 67,
            61, 72, 67, 94, 67, 67, 61, 28, 28, 28, 47, 56, 33, 56, 56, 50, 56, 56, 28, 56, 56, 22, 22, 50, 22, 83,
            56, 56, 56, 56, 33, 50, 28, 56, 50, 72, 50, 50, 50, 33, 26, 33, 58),
}


def text_px(text: str, size: float, *, bold: bool = False) -> float:
    """How wide `text` is drawn in FONT at `size` px (a character outside ASCII: one em, the widest)."""
    w = _WIDTHS[bold]
    return size * sum(w[o - 32] if 32 <= (o := ord(ch)) < 127 else 100 for ch in text) / 100


def wrap_px(text: str, size: float, *, bold: bool = False, width: float = TEXT_PX, at: str = " ") -> list[str]:
    """Lines of `text` no wider than `width` px when drawn (text_px), broken after the characters in `at` (prose:
    at spaces; a config name: also after - _ / .), a piece wider than a line on its own cut where it must."""
    pieces = re.findall(rf"[^{re.escape(at)}]*[{re.escape(at)}]+|[^{re.escape(at)}]+$", str(text))
    lines: list[str] = []
    line = ""
    for piece in pieces:
        while text_px(piece.rstrip(), size, bold=bold) > width:  # too long for any line: cut it to fit
            if line:
                lines.append(line.rstrip())
                line = ""
            n = max(1, max(i for i in range(1, len(piece) + 1) if text_px(piece[:i], size, bold=bold) <= width)
                    if text_px(piece[:1], size, bold=bold) <= width else 1)
            lines.append(piece[:n])
            piece = piece[n:]
        if line and text_px((line + piece).rstrip(), size, bold=bold) > width:
            lines.append(line.rstrip())
            line = ""
        line += piece
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


def put(obj, props: dict) -> None:
    """obj.update(props) for a Plotly object (a layout, an axis), by item: a nested dict is merged into the child
    object, or given whole where that child has nothing set yet. The same figure as update(), in a tenth of the
    time: Plotly's update() walks every path through its validators (_frame's layout: 5.6 ms against 0.6 ms, and
    a page's figures are built on every change of a control)."""
    for key, value in props.items():
        if isinstance(value, dict):
            child = obj[key]
            if getattr(child, "_props", None):  # something is set there: merge, key by key
                put(child, value)
                continue
        obj[key] = value


def put_axes(fig: go.Figure, axis: str, props: dict) -> None:
    """put(props) into every x (axis="x") or y axis of fig, as fig.update_xaxes(props) / update_yaxes does."""
    for ax in (fig.select_xaxes() if axis == "x" else fig.select_yaxes()):
        put(ax, props)


def style(fig: go.Figure, *, x: str, y: str, title: str | None = None, log_x: bool = False,
          log_y: bool = False, hovermode: str = "closest") -> go.Figure:
    """Axis titles with units, white background, legend below the plot (clear of Plotly's toolbar)."""
    put(fig.layout, dict(template="none", hovermode=hovermode, height=max(HEIGHT, fig.layout.height or 0)))
    _frame(fig)
    if title:
        fit_titles(fig, title)
    put_axes(fig, "x", dict(title=dict(text=x), type="log" if log_x else None, dtick=1 if log_x else None))  # log: powers of ten
    put_axes(fig, "y", dict(title=dict(text=y), type="log" if log_y else None, dtick=1 if log_y else None))
    return fig


FRAME = dict(paper_bgcolor=PAPER, plot_bgcolor=PAPER, font=dict(size=13, color=INK, family=FONT),
             legend=dict(orientation="h", yref="container", y=0.0, yanchor="bottom", xanchor="left", x=0,
                         title=dict(text=""), font=dict(size=12, color=INK), bgcolor="rgba(255,255,255,0.9)"),
             margin=dict(l=70, r=24, t=60, b=40), hoverlabel=dict(font=dict(size=12)))
FRAME_AXIS = dict(gridcolor=GRID, zerolinecolor=GRID, linecolor=GRID, automargin=True)
# An x axis's title set down from its tick labels as drawn: without a standoff Plotly puts it at a fixed depth and
# moves it only off a label it overlaps, so under names turned on end it sat up among them (Overview at 462 px, 48
# px up). 4.8 px keeps the margin an upright line of labels took (bottom_px: 11.2 + 4.8 = X_TITLE_PX).
X_TITLE_STANDOFF_PX = 4.8


def _frame(fig: go.Figure) -> None:
    put(fig.layout, FRAME)
    put_axes(fig, "x", dict(FRAME_AXIS, title=dict(standoff=X_TITLE_STANDOFF_PX)))
    put_axes(fig, "y", FRAME_AXIS)


SLIDE_PAD = 14  # px between a slide's subtitle and its plot


def slide(fig: go.Figure, title: str, caption: str = "", *, pad: int = SLIDE_PAD, figure_px: float | None = None,
          main_px: int | None = None) -> go.Figure:
    """Title (bold) and a subtitle with the settings, on an opaque white figure: what a PNG export keeps.

    Plotly does not wrap text: the title and the subtitle are wrapped here, in lines measured in the font's own
    widths (wrap_px), for a figure drawn `figure_px` wide. The server learns that width from the browser
    (ui/plots.py); until it does (None), they wrap where a 390-px phone's figure needs it (TEXT_PX), which no
    screen overflows. The titles are written short enough to keep one line there.
    pad: room between the subtitle and the plot (more where subplot titles sit above the panels).
    """
    _frame(fig)
    fit_titles(fig, title, caption, pad=pad, figure_px=figure_px, main_px=main_px)
    put(fig.layout, dict(margin=dict(b=bottom_px(fig))))  # drawn once, not twice (bottom_px)
    return fig


# ---- the bottom margin Plotly settles on ---------------------------------------------------------------------
# Every axis has automargin: Plotly grows a margin that its tick labels and title (and the legend below them) do not
# fit, then draws the whole figure again (plots.doAutoMargin calls _doPlot once the margins move by more than 1 px).
# With FRAME's 40 px every figure of the app was drawn twice: the bottom settled at 69-102 px on a desktop, and
# Memory's activation figure took 65 ms to draw against 31 ms with its margin set (docs/benchmarks.md, issue 30).
# bottom_px is what it settles on for labels upright and a legend in one row, measured in Chromium in FONT's
# metrics (Liberation Sans; Arial's). It is a lower bound everywhere else (labels turned on a phone, a legend in two
# rows, a taller font), and Plotly never draws a margin below the bound either, so the drawn figure is the same:
# only the second drawing is gone where the bound is exact.
X_LABELS_PX = 31.6  # below the plot: the axis's pad and one line of 13-px tick labels
X_LABEL_LINE_PX = 16.9  # each further line of a tick label (13 px at Plotly's line spacing 1.3)
X_TITLE_PX = 16.0  # a one-line 13-px axis title (title.text set, even to ""): Plotly's approxTitleDepth, 13 px, + 3
X_TITLE_CAP_PX = 11.2  # the same title set `standoff` px down from the labels takes 11.2 px + its standoff
X_BARE_PX = 12.0  # an axis without tick labels: its pad
LEGEND_FOOT_PX = 29  # held below the plot by FRAME's legend (at the container's foot): one row of one-line 12-px entries
LEGEND_LINE_PX = 15.6  # each further line of its tallest entry (12 px at 1.3)
_LEGEND_TYPES = {"scatter", "scattergl", "bar"}  # traces whose legend entries bottom_px counts (one each)


def _round(x: float) -> int:
    return math.floor(x + 0.5)  # JavaScript's Math.round, as Plotly rounds a margin (Python's round() is to even)


def _x_depth(lay: dict, name: str) -> float:
    """How far below its subplot x axis `name` of layout dict `lay` reaches, tick labels upright (0: not at the
    figure's foot, or not counted: another font size, labels inside)."""
    ax = lay.get(name, {})
    anchor = ax.get("anchor", "y")
    domain = lay.get("yaxis" + anchor[1:], {}).get("domain", [0, 1]) if anchor.startswith("y") else [1, 1]
    if (domain[0] != 0 or ax.get("side", "bottom") != "bottom" or ax.get("visible") is False or ax.get("overlaying")
            or ax.get("tickfont", {}).get("size", 13) != 13
            or ax.get("ticklabelposition", "outside") != "outside"):
        return 0.0
    if ax.get("showticklabels", True) is False:
        depth = X_BARE_PX
    else:
        text = ax.get("ticktext") if ax.get("tickmode") == "array" else None
        lines = 1 + max((str(t).count("<br>") for t in text), default=0) if text is not None else 1
        depth = X_LABELS_PX + (ax.get("ticklabelstandoff") or 0) + X_LABEL_LINE_PX * (lines - 1)
    title = ax.get("title", {})
    if title.get("text") is not None and title.get("font", {}).get("size", 13) == 13:  # one line, however many it has
        depth += X_TITLE_PX if title.get("standoff") is None else X_TITLE_CAP_PX + title["standoff"]
    return depth


def _legend_px(fig: go.Figure, lay: dict) -> int:
    """What FRAME's legend holds below the plot in one row (0: no legend drawn, or one bottom_px does not count)."""
    leg = lay.get("legend", {})
    if (leg.get("orientation") != "h" or leg.get("yref") != "container" or leg.get("y") != 0
            or leg.get("yanchor") != "bottom" or leg.get("font", {}).get("size") != 12
            or leg.get("title", {}).get("text") or any(s.get("showlegend") for s in lay.get("shapes", ()))):
        return 0
    if any(t.type not in _LEGEND_TYPES for t in fig.data):
        return 0
    shown = [t for t in fig.data if t.visible is not False and t.showlegend is not False]
    # Plotly's legend defaults: drawn where layout.showlegend says, else where it has two entries, a trace set to
    # showlegend=True counting twice
    drawn = lay.get("showlegend")
    if drawn is None:
        drawn = sum(1 + (t.showlegend is True) for t in shown) > 1
    if not drawn or not shown:
        return 0
    lines = max(1 + str(t.name or "").count("<br>") for t in shown)
    return _round(LEGEND_FOOT_PX + LEGEND_LINE_PX * (lines - 1))


def bottom_px(fig: go.Figure) -> int:
    """The bottom margin Plotly's automargin settles on for `fig` with its tick labels upright and its legend in one
    row: the deepest x axis at the figure's foot and FRAME's legend below it; never below the margin set."""
    lay = fig.layout.to_plotly_json()
    depth = max((_x_depth(lay, k) for k in lay if re.fullmatch(r"xaxis\d*", k)), default=0.0)
    return max(int(lay.get("margin", {}).get("b", 0)), _round(depth) + _legend_px(fig, lay))


def fit_titles(fig: go.Figure, title: str, caption: str = "", *, pad: int = SLIDE_PAD,
               figure_px: float | None = None, main_px: int | None = None) -> go.Figure:
    """slide()'s title and subtitle alone, wrapped for a figure `figure_px` wide (None: a phone's), the top
    margin grown to hold their lines; nothing else of the figure changes. The figure's layout.meta keeps what
    it was made from (title, caption, pad), the width it was wrapped for (figure_px) and the page's width that
    gave it (main_px: ui/plots.py; the browser tests wait for figures wrapped for the page they see)."""
    width = TEXT_PX if figure_px is None else max(MIN_LINE_PX, line_px(figure_px))
    lines = [w for part in caption.split("\n") for w in wrap_px(part, 12, width=width)] if caption else []
    heads = wrap_px(title, 16, bold=True, width=width)
    sub = "<br>".join(plotly_text(s) for s in lines)
    put(fig.layout, dict(
        title=dict(text="<br>".join(f"<b>{plotly_text(h)}</b>" for h in heads), x=0.01, xanchor="left", xref="container", y=1,
                   yanchor="top", yref="container", pad=dict(t=12 + 20 * (len(heads) - 1)),  # more lines grow upwards
                   font=dict(size=16, color=INK),
                   subtitle=dict(text=sub, font=dict(size=12, color=MUTED))),
        margin=dict(t=18 + 22 * len(heads) + 18 * len(lines) + pad),  # title, its subtitle lines, then the gap
    ))
    fig.layout.meta = {"title": title, "caption": caption, "pad": pad, "figure_px": figure_px, "main_px": main_px}
    return fig


def refit(fig: go.Figure, figure_px: float | None, main_px: int | None = None) -> go.Figure:
    """A copy of a slide() figure with its title and subtitle wrapped for `figure_px` (fig is not changed: the
    app's figures are cached and shared); fig itself if it has no slide() title."""
    meta = titles_meta(fig)
    if meta is None:
        return fig
    return fit_titles(go.Figure(fig), meta["title"], meta["caption"], pad=meta["pad"], figure_px=figure_px,
                      main_px=main_px)


def titles_meta(fig: go.Figure) -> dict | None:
    """What slide() made a figure's title from (title, caption, pad, figure_px), or None (no slide title)."""
    meta = fig.layout.meta
    return meta if isinstance(meta, dict) and "title" in meta and "pad" in meta else None


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


BYTE_AXIS_UNITS = (("GiB", GIB), ("TiB", GIB << 10), ("PiB", GIB << 20), ("EiB", GIB << 30))


class ByteUnit:
    """The unit of a memory axis: GiB, or the first larger binary unit in which the largest value is under 1,000
    (a 3.5-trillion-parameter config's axis read 200K ... 800K GiB beside labels in TiB; now 200 ... 800 TiB).
    Calling it turns bytes (exact ints, any size) into axis values; the exact bytes go into the hover text."""

    def __init__(self, values) -> None:
        top = max((int(v) for v in values if v is not None and v == v), default=0)
        self.name, self.size = next(((n, b) for n, b in BYTE_AXIS_UNITS if top < 1000 * b), BYTE_AXIS_UNITS[-1])

    def __call__(self, n: int) -> float:
        return n / self.size


def value_angle(text: str) -> int | None:
    """textangle of a value drawn inside its bar: upright (0) for one character, else unset (plotly.js's "auto",
    which plotly.py does not take). Plotly turns a value on its side where turned it fits at a larger size: for one
    character, narrower than it is tall, that is any bar a little shorter than a line (a "7" read sideways in a Fit
    bar 10 px high). Longer values keep "auto": turned, they fit a tall narrow bar on a phone."""
    return 0 if len(text) <= 1 else None


def counts(values) -> list[str]:
    return [format_count(int(v)) for v in values]


def sizes(values) -> list[str]:
    return [format_bytes(int(v)) for v in values]


def flops(values) -> list[str]:
    return [format_flops(int(v)) for v in values]


# ---- names and log axes, shared by every chart ---------------------------------------------------------------
NAME_PX = 150  # a line of a config's name in a tick label at 12 px: about 22 characters (the full name: hover too)
NAME_LINE_PX = 18  # the height one more line of a 13-px tick label takes, turned as Plotly turns it or not
CROWDED_PX = 80  # six names upright under a 390-px phone's bars: the plot 91 px high, shorter than its axis title
NAME_STANDOFF_PX = 8  # x tick labels of names set down from their ticks (see name_ticks)
NAME_LINES = 3  # lines of a name at most: 60 characters in full; past them (names run to 80) the last line is cut
# the x axis of a phone's figure (PHONE_PX less FRAME's side margins): where names crowd it, Plotly turns them on end
# and each takes its lines' depth across the axis (X_LABEL_LINE_PX a line), which the names' spacing must hold
NAME_AXIS_PX = 264
NAME_GAP_PX = 2  # px at least between two names turned on end
# a name on one line (crowded axes: name_most) may run this long: turned on end its length lies along the figure's
# height, not across its neighbours, and the longest preset name (bert-base-multilingual-cased, 151 px) stays whole
ONE_LINE_PX = 160
LEGEND_PX = 250  # a legend entry's widest line at 12 px: with its symbol it fits a 390-px phone's figure
LEGEND_ROW_PX = 19  # a legend entry's row at 12 px (measured in Chromium): a phone's legend holds one config a row
LEGEND_HELD = 4  # configs whose legend rows a figure's height holds with its plot readable (the default four)


def legend_rows_px(configs: int) -> int:
    """How much taller a figure with a legend entry per config is made: past LEGEND_HELD configs the legend's rows
    take height from the plot (13 configs left a phone's FLOPs scatter 110 px), which grows back by as much."""
    return LEGEND_ROW_PX * max(0, configs - LEGEND_HELD)


def legend_name(name: str) -> str:
    """A config's legend entry: the whole name, in lines of at most LEGEND_PX broken after - _ / . or a space
    (a 60-character name takes two lines; nothing is cut)."""
    return "<br>".join(plotly_text(line) for line in wrap_px(str(name), 12, width=LEGEND_PX, at=" -_/."))


def name_lines(name: str, width: float = NAME_PX, most: int = NAME_LINES) -> list[str]:
    """A config name in lines no wider than `width` px at 12 px, broken after - _ / . or a space, so a long name
    reads in full ("bert-base-multilingual-" / "cased"); past `most` lines, the last line ends in … and the name's
    end (where versions and sizes sit) is kept, so two long names still read apart."""
    lines = wrap_px(str(name), 12, width=width, at=" -_/.")
    if len(lines) <= most:
        return lines
    name = str(name).rstrip()
    if most <= 1:  # one line: the name's start and its end either side of the ellipsis ("xlmr-large-pr…-pos-v2-final")
        k = max(i for i in range(len(name)) if text_px(_cut(name, i), 12) <= width)
        return [_cut(name, k)]
    # the last line: the name's end that fits beside the ellipsis (it is past the lines kept)
    n = max(i for i in range(len(name) + 1) if text_px("…" + name[len(name) - i:], 12) <= width)
    return lines[:most - 1] + ["…" + name[len(name) - n:].lstrip()]


def _cut(name: str, keep: int) -> str:
    """`name` with `keep` of its characters, the first half (rounded up) and the last, joined by an ellipsis."""
    head = (keep + 1) // 2
    return name[:head].rstrip() + "…" + name[len(name) - (keep - head):].lstrip() if keep < len(name) else name


def name_most(count: int) -> int:
    """Lines a name may take under an axis of `count` names: NAME_LINES where there is room, fewer where they crowd
    it. A phone turns crowded names on end; a name's lines then lie side by side across the axis, each
    X_LABEL_LINE_PX deep, and its neighbours sit NAME_AXIS_PX / count apart: twelve 3-line names (51 px) 22 px
    apart ran through each other (Overview's presets tab with four long custom names). A single line keeps the
    name's start and end; hover names it in full."""
    pitch = NAME_AXIS_PX / max(1, count)
    return max(1, min(NAME_LINES, int((pitch - NAME_GAP_PX) // X_LABEL_LINE_PX)))


def name_text(name: str, width: float = NAME_PX, most: int = NAME_LINES) -> str:
    """name_lines as Plotly text: each line escaped (plotly_text), joined by <br>."""
    return "<br>".join(plotly_text(line) for line in name_lines(name, width, most))


def name_ticks(fig: go.Figure, names, *, axis: str = "x") -> None:
    """Category ticks of config names: the categories stay the full (escaped) names, so hover shows them; the
    tick labels are the names in lines (name_text), in full up to NAME_LINES lines, or as many as the names' spacing
    holds on a phone (name_most)."""
    shown = [plotly_text(n) for n in names]
    most = name_most(len(shown)) if axis == "x" else NAME_LINES
    text = [name_text(n, ONE_LINE_PX if most == 1 else NAME_PX, most) for n in names]
    put_axes(fig, axis, dict(tickmode="array", tickvals=shown, ticktext=text))
    extra = max((t.count("<br>") for t in text), default=0)
    # the plot keeps its height: the figure grows by the labels' extra lines (style keeps it), and where five or
    # more names crowd the axis (a phone turns them upright) by CROWDED_PX more
    grow = NAME_LINE_PX * extra + (CROWDED_PX if len(text) >= 5 else 0)
    if axis == "x" and grow:
        fig.layout.height = (fig.layout.height or HEIGHT) + grow
    if axis == "x":  # a long label, turned as Plotly turns crowded ones, reaches up beside the axes' corner: set down
        put_axes(fig, "x", dict(ticklabelstandoff=NAME_STANDOFF_PX))  # from the ticks, it clears the y axis's lowest label


_SI = {"count": ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K")),
       "flops": ((10**18, "E"), (10**15, "P"), (10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "K")),
       "plain": ()}


def tick_text(v: float, kind: str = "plain") -> str:
    """A full tick label: 200M, 96.6G, 0.5, 2,048 (never Plotly's bare minor-tick digit)."""
    for scale, unit in _SI[kind]:
        if abs(v) >= scale:
            return f"{v / scale:.3g}{unit}"
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:.3g}"


def linear_ticks(hi: float, kind: str = "plain", most: int = 4) -> tuple[list[float], list[str]]:
    """Ticks from 0 to hi on a linear axis at a 1-2-5 step, at most `most` of them, labelled as tick_text labels
    the log axes' (4K, as the counts and the other charts write thousands; Plotly's "~s" wrote 4k)."""
    if hi <= 0:
        return [0.0], [tick_text(0.0, kind)]
    mag = 10.0 ** math.floor(math.log10(hi / most))  # hi / mag < 10 × most: a step of 10 × mag always fits
    step = next(m * mag for m in (1, 2, 5, 10) if int(hi // (m * mag)) + 1 <= most)
    vals = [i * step for i in range(int(hi // step) + 1)]
    return vals, [tick_text(v, kind) for v in vals]


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


def log_ticks(lo: float, hi: float, kind: str = "plain", most: int = 7, inner: float = 0.0
              ) -> tuple[list[float], list[str]]:
    """Tick values and labels for a log axis from 10^lo to 10^hi: 1-2-5 of each decade, or 1-3, or the powers of
    ten, or every other power, whichever is the densest with at most `most` ticks (and at least 2).
    inner: no tick within this fraction of the range from either end (panels side by side: a label at the right
    end of one panel and one at the left end of the next ran into each other across the gap, "10K100")."""
    d0, d1 = math.floor(lo), math.ceil(hi)
    a, b = lo + inner * (hi - lo), hi - inner * (hi - lo)
    best: list[float] = []
    for mantissas, step in (((1, 2, 5), 1), ((1, 3), 1), ((1,), 1), ((1,), 2), ((1,), 3), ((1,), 5), ((1,), 10)):
        vals = [m * 10.0 ** d for d in range(d0, d1 + 1) if d % step == 0 for m in mantissas]
        vals = [v for v in vals if a <= math.log10(v) <= b]
        if len(vals) <= most:
            best = vals
            break
    if len(best) < 2:  # too narrow for two of them: both ends
        best = [10.0 ** lo, 10.0 ** hi]
    return best, [tick_text(v, kind) for v in best]


def log_axis(fig: go.Figure, values, *, axis: str, kind: str = "plain", min_decades: float = 1.0,
             most: int = 7, inner: float = 0.0, **where) -> tuple[float, float]:
    """Make `axis` ("x" or "y") a log axis over the positive `values` (data units): its range fixed to them
    (log_range: shapes or labels cannot stretch it) and full-number ticks (log_ticks, `inner` clear of the ends).
    Returns the range."""
    lo, hi = log_range(values, min_decades=min_decades)
    vals, text = log_ticks(lo, hi, kind, most, inner)
    props = dict(type="log", range=[lo, hi], autorange=False, dtick=None, tickmode="array", tickvals=vals,
                 ticktext=text, minor=dict(showgrid=False))
    if where:  # some axes only (row=, col=): Plotly's own selection
        (fig.update_xaxes if axis == "x" else fig.update_yaxes)(**props, **where)
    else:
        put_axes(fig, axis, props)
    return lo, hi
