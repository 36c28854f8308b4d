"""Memory charts: activations against sequence length, training memory stacked, GPU budget lines."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .base import (
    HEIGHT,
    ByteUnit,
    legend_name,
    legend_rows_px,
    linear_ticks,
    log_axis,
    name_text,
    name_ticks,
    plotly_text,
    put,
    put_axes,
    sizes,
    style,
)
from .colors import MEMORY_COLORS, color_map

PART_LABELS = {"quadratic": "attention (grows with seq_len²)", "linear": "linear in seq_len"}
TRAINING_PARTS = {"weights": "weights", "master_weights": "fp32 master weights", "gradients": "gradients",
                  "optimizer": "optimizer state", "activations": "activations"}
BUDGET_DASHES = ("dash", "dot", "dashdot", "longdash", "longdashdot")
PANEL_TITLE_PX = 120  # a line of a panel title at 12 px (18 characters): two panels share a phone's 390 px
PANEL_TITLE_LINES = 2  # a panel title's lines at most: more would run into the panel above it
ROW_PX = 300  # px of figure height per row of panels: a panel and the gap below it
ROW_GAP_PX = 96  # px between rows (the x tick labels, then the next row's title): 0.16 of two rows' 600 px, as before
PANELS_CHROME_PX = 170  # px of figure height beside the rows: title, subtitle, x axis title, legend
SIDE_TICK_CLEAR = 0.06  # the fraction of a panel's log x range kept free of ticks at each end (a "10K" label is
# 8% of a panel's width on a 390-px phone, and the gap between panels 6% of the figure's)


def _hover_bytes(values) -> list[tuple[int, str]]:
    return [(int(v), s) for v, s in zip(values, sizes(values), strict=True)]


def activation_vs_seq(df: pd.DataFrame, *, log: bool = False, per_row: int = 2,
                      marks: dict[str, tuple[int, int, int]] | None = None,
                      measured: pd.DataFrame | None = None) -> go.Figure:
    """Activation memory against sequence length (= max_position): one panel per config, the seq_len² part
    stacked on the linear part (on log axes the two parts are drawn as separate lines).

    df: columns config, seq_len, part ("quadratic" | "linear"), bytes. Each trace carries its config in `meta`.
    marks: config -> (its own max_position, attention bytes there, total bytes there): a dotted line and a label.
    measured: columns config, seq_len, measured, estimate_cpu (measure.points_table): PyTorch's bytes as points
    on a dashed line of albert_core's estimate for the same (CPU) kernels.
    """
    names = list(dict.fromkeys(df["config"]))
    totals = df.groupby(["config", "seq_len"])["bytes"].sum()
    shown = [] if measured is None else [*measured["measured"], *measured["estimate_cpu"]]
    u = ByteUnit([*totals, *shown])
    cols = min(per_row, len(names))
    rows = -(-len(names) // cols)
    fig = make_subplots(rows=rows, cols=cols,
                        subplot_titles=[name_text(n, PANEL_TITLE_PX, PANEL_TITLE_LINES) for n in names],
                        shared_yaxes=True, horizontal_spacing=0.06, vertical_spacing=_row_gap(rows))
    for a in fig.layout.annotations:  # the panel titles (the only annotations yet)
        put(a, dict(font=dict(size=12)))
    for i, name in enumerate(names):
        d = df[df["config"] == name]
        r, c = i // cols + 1, i % cols + 1
        for part in ("linear", "quadratic"):
            p = d[d["part"] == part].sort_values("seq_len")
            fig.add_scatter(
                x=[int(s) for s in p["seq_len"]], y=_ys(p["bytes"], log, u), mode="lines+markers",
                name=PART_LABELS[part], legendgroup=part, showlegend=i == 0, meta=name,
                stackgroup=None if log else f"stack{i}", line=dict(color=MEMORY_COLORS[part]), marker=dict(size=4),
                customdata=_hover_bytes(p["bytes"]),
                hovertemplate=f"<b>{plotly_text(name)}</b><br>seq_len %{{x:,}}<br>{PART_LABELS[part]}: "
                              "%{customdata[0]:,} bytes (%{customdata[1]})<extra></extra>",
                row=r, col=c,
            )
        if marks and name in marks:
            _mark_max_position(fig, i + 1, marks[name], log, int(df["seq_len"].max()), u)
        if measured is not None and len(measured):
            _measured_points(fig, measured[measured["config"] == name], name, i == 0, r, c, u)
    style(fig, x="", y="", log_x=log, log_y=log)
    hi = int(df["seq_len"].max())
    # fixed x ranges: a label's box must not widen the autorange (plotly fits annotations into it)
    if log:
        # panels side by side: no tick label at a panel's end, where it met the next panel's first one, and at most
        # 4 (five 1-2-5 ticks were turned on end by Plotly on a phone's 150-px panel)
        side = cols > 1
        log_axis(fig, [int(s) for s in df["seq_len"]], axis="x", kind="count", most=4 if side else 5,
                 inner=SIDE_TICK_CLEAR if side else 0.0)
        extra = [] if measured is None else [u(int(b)) for b in measured["measured"] if int(b) > 0]
        log_axis(fig, [u(int(b)) for b in df["bytes"] if int(b) > 0] + [u(int(b)) for b in totals] + extra,
                 axis="y")
    else:
        vals, text = linear_ticks(hi, "count")  # at most 4: neighbouring panels' ticks clear ("4K")
        put_axes(fig, "x", dict(range=[0, hi * 1.02], tickmode="array", tickvals=vals, ticktext=text))
        # bytes are never negative: the stacked areas start at 0 (autorange padded them below 0 for the markers)
        put_axes(fig, "y", dict(rangemode="tozero"))
    put_axes(fig, "y", dict(matches="y"))  # one y range for every panel, across rows too (the caption says so)
    fig.layout.height = ROW_PX * rows + PANELS_CHROME_PX
    put(fig.get_subplot(rows, 1).xaxis, dict(title=dict(text="seq_len = max_position (tokens)" + (" (log)" if log else ""))))
    for r in range(1, rows + 1):
        put(fig.get_subplot(r, 1).yaxis, dict(title=dict(text=f"activation memory ({u.name})" + (" (log)" if log else ""))))
    return fig


def _row_gap(rows: int) -> float:
    """make_subplots' vertical_spacing (a fraction of the plotting height) for ROW_GAP_PX between rows: a fixed
    fraction (0.16) took 6 x 0.16 of seven rows' height and left the panels 12 px each."""
    return ROW_GAP_PX / (ROW_PX * rows) if rows > 1 else 0.1


MEASURED_COLOR = "#262730"


def _measured_points(fig: go.Figure, d: pd.DataFrame, name: str, legend: bool, r: int, c: int, u: ByteUnit) -> None:
    """PyTorch's measured bytes (filled circles) on albert_core's estimate for the same CPU kernels (dashed)."""
    d = d.sort_values("seq_len")
    xs = [int(s) for s in d["seq_len"]]
    fig.add_scatter(x=xs, y=[u(int(b)) for b in d["estimate_cpu"]], mode="lines", name="estimate, CPU kernels",
                    legendgroup="estimate_cpu", showlegend=legend, meta=name,
                    line=dict(color=MEASURED_COLOR, dash="dash", width=1.5), customdata=_hover_bytes(d["estimate_cpu"]),
                    hovertemplate=f"<b>{plotly_text(name)}</b><br>seq_len %{{x:,}}<br>estimate for the CPU kernels: "
                                  "%{customdata[0]:,} bytes (%{customdata[1]})<extra></extra>", row=r, col=c)
    fig.add_scatter(x=xs, y=[u(int(b)) for b in d["measured"]], mode="markers", name="measured in PyTorch (CPU)",
                    legendgroup="measured", showlegend=legend, meta=name,
                    marker=dict(color=MEASURED_COLOR, size=9, symbol="circle"), customdata=_hover_bytes(d["measured"]),
                    hovertemplate=f"<b>{plotly_text(name)}</b><br>seq_len %{{x:,}}<br>measured by PyTorch (fake "
                                  "tensors, CPU kernels): %{customdata[0]:,} bytes (%{customdata[1]})<extra></extra>",
                    row=r, col=c)


def _ys(values, log: bool, u: ByteUnit) -> list[float | None]:
    """Bytes -> the axis' unit; on a log axis a zero (nothing of that part) is left out, not drawn at 10^-inf."""
    return [u(int(b)) if int(b) > 0 or not log else None for b in values]


def _axis(n: int, letter: str) -> str:
    return letter if n == 1 else f"{letter}{n}"


def _mark_max_position(fig: go.Figure, n: int, mark: tuple[int, int, int], log: bool, end: int,
                       u: ByteUnit) -> None:
    """A dotted line at the config's max_position in panel n, labelled with the attention memory there.

    On a log axis plotly.js 3 places shapes in data coordinates but annotations in log10 units."""
    pos, quad, total = mark
    xref, yref = _axis(n, "x"), _axis(n, "y")
    fig.add_shape(type="line", x0=pos, x1=pos, y0=0, y1=1, xref=xref, yref=f"{yref} domain",
                  line=dict(color="#262730", dash="dot", width=1.5))
    left = (math.log10(pos) < (math.log10(end) + math.log10(128)) / 2) if log else pos < end / 2
    # the empty corner: on linear axes the curves hug the bottom on the left, on log axes they rise to the top right
    low = log and left
    fig.add_annotation(x=math.log10(pos) if log else pos, y=0 if low else 1, xref=xref, yref=f"{yref} domain",
                       xanchor="left" if left else "right", yanchor="bottom" if low else "top",
                       showarrow=False, align="right", font=dict(size=11, color="#262730"),
                       bgcolor="rgba(255,255,255,0.85)",
                       text=f"max_position {pos:,}<br>attention {sizes([quad])[0]}<br>of {sizes([total])[0]}")
    # an invisible point at the mark carries the exact numbers (hover; tests read it)
    fig.add_scatter(x=[pos], y=[u(total)], mode="markers", showlegend=False, name="max_position",
                    meta=f"mark {n}", marker=dict(symbol="diamond", size=10, color="#262730"),
                    cliponaxis=False,  # whole at the axis's end (ModernBERT's 8,192 was cut in half on a phone)
                    customdata=[(quad, sizes([quad])[0], total, sizes([total])[0])],
                    hovertemplate="max_position %{x:,}<br>attention (seq_len²): %{customdata[0]:,} bytes "
                                  "(%{customdata[1]})<br>all activations: %{customdata[2]:,} bytes (%{customdata[3]})"
                                  "<extra></extra>",
                    xaxis=xref, yaxis=yref)


def variants(df: pd.DataFrame, name: str, *, log: bool = False, max_position: int | None = None) -> go.Figure:
    """Total activation memory of one config under several settings (eager/sdpa, dtype, checkpointing).

    df: columns variant, seq_len, bytes. A variant equal to an earlier one at every length is drawn dotted with
    open markers on top of it and says so in the legend ("= eager, checkpointing"), so neither hides the other.
    """
    fig = go.Figure()
    u = ByteUnit(df["bytes"])
    dashes = ("solid", "dash", "solid", "dash")
    symbols = ("circle", "square", "diamond", "x")
    palette = ("#D55E00", "#0072B2", "#009E73", "#CC79A7")
    seen: dict[tuple, str] = {}
    for i, (variant, d) in enumerate(df.groupby("variant", sort=False)):
        d = d.sort_values("seq_len")
        key = tuple(int(b) for b in d["bytes"])
        same = seen.get(key)
        seen.setdefault(key, variant)
        fig.add_scatter(
            x=[int(s) for s in d["seq_len"]], y=_ys(d["bytes"], log, u), mode="lines+markers",
            name=variant + (f" (= {same})" if same else ""),
            line=dict(color=palette[i % len(palette)], dash="dot" if same else dashes[i % len(dashes)],
                      width=2 if same else 3),
            marker=dict(symbol=symbols[i % len(symbols)] + ("-open" if same else ""), size=11 if same else 7),
            customdata=_hover_bytes(d["bytes"]),
            hovertemplate=f"<b>{plotly_text(name)}</b>, {variant}<br>seq_len %{{x:,}}<br>"
                          "%{customdata[0]:,} bytes (%{customdata[1]})<extra></extra>",
        )
    if max_position:
        fig.add_shape(type="line", x0=max_position, x1=max_position, y0=0, y1=1, yref="paper",
                      line=dict(color="#262730", dash="dot", width=1.5))
        fig.add_annotation(x=math.log10(max_position) if log else max_position, y=1, yref="paper", xanchor="right",
                           yanchor="top", showarrow=False, text=f"max_position {max_position:,}",
                           font=dict(size=11, color="#262730"), bgcolor="rgba(255,255,255,0.85)")
    style(fig, x="seq_len = max_position (tokens" + (", log)" if log else ")"),
          y=f"activation memory ({u.name}" + (", log)" if log else ")"), log_x=log, log_y=log)
    if log:
        log_axis(fig, [int(s) for s in df["seq_len"]], axis="x", kind="count")
        log_axis(fig, [u(int(b)) for b in df["bytes"]], axis="y")
    return fig


def merge_budgets(budgets: dict[str, int], within: float = 0.02) -> dict[str, int]:
    """GPUs whose memory differs by less than `within` share one line ("L4 24 GB / A10 24 GB", the smaller size)."""
    merged: list[tuple[list[str], int]] = []
    for gpu, b in sorted(budgets.items(), key=lambda kv: kv[1]):
        if merged and b - merged[-1][1] <= within * b:
            merged[-1][0].append(gpu)
        else:
            merged.append(([gpu], b))
    return {" / ".join(names): b for names, b in merged}


def budget_label(budgets: dict[str, int], merged: str) -> str:
    """The label of a (merged) GPU line: each GPU with its own memory from albert_core.estimate.gpus, one size when they
    print the same ("L4 24 GB / A10 24 GB: 22.49 GiB", "H100 80 GB: 79.65 GiB / A100 80 GB: 80.00 GiB")."""
    gpus = merged.split(" / ")
    shown = [sizes([budgets[g]])[0] for g in gpus]
    if len(set(shown)) == 1:
        return f"{merged}: {shown[0]}"
    return " / ".join(f"{g}: {s}" for g, s in zip(gpus, shown, strict=True))


def _budget_lines(fig: go.Figure, budgets: dict[str, int], u: ByteUnit, *, log: bool = False) -> None:
    """Dashed GPU lines at each GPU's memory (the smaller of a merged pair); neighbouring labels alternate between
    the left and the right end, so two GPUs of close sizes (16 and 24 GB) never print over each other.

    A shape on a log axis takes data units, an annotation log10 units (plotly.js 3): a label at y = 80 on a log
    axis would sit at 10^80 and stretch the axis to it."""
    for i, (gpu, b) in enumerate(merge_budgets(budgets).items()):
        y = u(b)
        fig.add_shape(type="line", xref="paper", x0=0, x1=1, y0=y, y1=y, name=f"budget {gpu}",
                      line=dict(color="rgba(38,39,48,0.6)", dash=BUDGET_DASHES[i % len(BUDGET_DASHES)], width=1.5))
        left = i % 2 == 0
        fig.add_annotation(xref="paper", x=0 if left else 1, xanchor="left" if left else "right",
                           y=math.log10(y) if log else y, yanchor="bottom", showarrow=False,
                           text=plotly_text(budget_label(budgets, gpu)), name=f"budget {gpu}",
                           font=dict(size=11, color="#262730"), bgcolor="rgba(255,255,255,0.8)")


def _budget_traces(fig: go.Figure, budgets: dict[str, int], span: tuple[int, int], u: ByteUnit) -> None:
    """GPU memory as dashed grey lines across the sweep, named in the legend: labels written on the lines cross
    each other and the curves where the lines lie close (T4 16 GB and A100 40 GB on a 0-600 GiB axis)."""
    for i, (gpu, b) in enumerate(merge_budgets(budgets).items()):
        label = budget_label(budgets, gpu)
        fig.add_scatter(x=list(span), y=[u(b), u(b)], mode="lines", name=plotly_text(label),
                        meta=f"budget {gpu}", legendgroup="gpus", legendrank=2000 + i,
                        line=dict(color="rgba(38,39,48,0.6)", dash=BUDGET_DASHES[i % len(BUDGET_DASHES)], width=1.5),
                        hovertemplate=f"{plotly_text(label)} per GPU ({b:,} bytes)<extra></extra>")


PEAK_HALF_WIDTH = 0.4  # the peak's bar each side of a stack's centre, in categories: a bar's half width (bargap 0.2)


def training_stack(df: pd.DataFrame, budgets: dict[str, int], title: str | None = None,
                   peaks: dict[str, int] | None = None) -> go.Figure:
    """Stacked bars per config: weights, master weights, gradients, optimizer state, activations; GPU budgets.

    df: columns config, part (a key of TRAINING_PARTS), bytes (per GPU). peaks: config -> the training step's
    peak (bytes), drawn as a black bar across each config's stack.
    """
    fig = go.Figure()
    order = list(dict.fromkeys(df["config"]))
    parts = df[df["part"].isin(list(TRAINING_PARTS))]
    tallest = max([int(b) for b in parts.groupby("config")["bytes"].sum()] + list((peaks or {}).values()))  # bytes
    near = {g: b for g, b in budgets.items() if b <= 2.5 * tallest}  # a line far above squashes the bars
    u = ByteUnit([tallest, *near.values()])
    for part, label in TRAINING_PARTS.items():
        d = df[df["part"] == part].set_index("config").reindex(order)
        if d["bytes"].isna().all() or not any(int(b) for b in d["bytes"].dropna()):
            continue
        vals = [int(b) for b in d["bytes"]]
        fig.add_bar(
            name=label, x=[plotly_text(n) for n in order], y=[u(v) for v in vals], marker_color=MEMORY_COLORS[part],
            customdata=_hover_bytes(vals),
            hovertemplate="<b>%{x}</b><br>" + label + ": %{customdata[0]:,} bytes (%{customdata[1]})<extra></extra>",
        )
    fig.layout.barmode = "stack"
    if peaks:
        shown = [n for n in order if n in peaks]
        fig.add_scatter(name="the step's peak", x=[plotly_text(n) for n in shown], y=[u(peaks[n]) for n in shown],
                        # the marker: the hover and the legend's line; the bar across the stack is a shape below
                        mode="markers", marker=dict(symbol="line-ew", size=12, color="#000000",
                                                    line=dict(width=4, color="#000000")),
                        customdata=_hover_bytes([peaks[n] for n in shown]),
                        hovertemplate="<b>%{x}</b><br>the step's peak: %{customdata[0]:,} bytes "
                                      "(%{customdata[1]})<extra></extra>")
        # as wide as the bars at every width, in category units (a shape: Plotly draws no error bars on a category
        # axis); a fixed 44-px mark ran into its neighbours where six configs share a phone's plot (46 px apiece)
        for n in shown:
            i = order.index(n)
            fig.add_shape(type="line", x0=i - PEAK_HALF_WIDTH, x1=i + PEAK_HALF_WIDTH, y0=u(peaks[n]), y1=u(peaks[n]),
                          xref="x", yref="y", line=dict(color="#000000", width=4), name="the step's peak")
    name_ticks(fig, order)
    _budget_lines(fig, near, u)
    far = {g: b for g, b in budgets.items() if g not in near}
    if far:  # said in the corner instead, with how much of it the tallest bar uses
        fig.add_annotation(xref="paper", yref="paper", x=1, y=1, xanchor="right", yanchor="top", showarrow=False,
                           align="right", font=dict(size=11, color="#262730"), bgcolor="rgba(255,255,255,0.85)",
                           name="budget off the axis",
                           text="<br>".join(f"{plotly_text(budget_label(far, g))}<br>above this axis: the "
                                            f"tallest<br>bar is {100 * tallest / b:.0f}% of it"
                                            for g, b in merge_budgets(far).items()))
    top = u(max([tallest, *near.values()]))
    style(fig, x="config", y=f"memory per GPU ({u.name})", title=title)
    put_axes(fig, "y", dict(range=[0, top * ((1.5 if peaks else 1.3) if far else 1.1)]))  # the peaks clear of the corner note
    # the parts, the peak and the GPU line in the legend, turned names below the bars and the settings above:
    # on a 390-px phone with six configs the plot kept 96 px at HEIGHT (figure audit), so the figure is taller
    fig.layout.height = HEIGHT + 80
    return fig


ABOVE_GPUS = 4  # a linear axis stops above the GPU lines where a curve reaches past 4 times the largest GPU
CAPPED_HEADROOM = 1.6  # ... at 1.6 times it: the largest GPU's line, its crossings and the corner note in view
LOG_IN_GPU_UNIT = 10_000  # a log axis reads in the GPU lines' unit up to 10,000 of it (ticks 1 ... 10K GiB)


def training_vs_seq(df: pd.DataFrame, budgets: dict[str, int], *, log: bool = False,
                    marks: dict[str, int] | None = None, measured: pd.DataFrame | None = None,
                    what: str = "training memory", x_title: str = "seq_len = max_position") -> go.Figure:
    """Training memory per GPU against sequence length, one line per config, with the GPU budget lines.

    what: what the bytes are, in the hover text ("training memory", "the step's peak"); x_title: what the x axis is.

    df: columns config, seq_len, bytes. marks: config -> its own max_position (a point of df): a large diamond.
    A config equal to an earlier one at every length is drawn dotted with open markers over it ("(= name)").
    measured: columns config, seq_len, measured, modelled_cpu (measure.step_points_table): the training step's
    peak measured by PyTorch (filled circles) on albert_core's modelled peak for the same CPU step (dashed).
    """
    fig = go.Figure()
    top = max([int(b) for b in df["bytes"]] + ([] if measured is None else [int(b) for b in measured["measured"]]))
    gpu_top = max(budgets.values(), default=0)
    # past ABOVE_GPUS times the largest GPU, a linear axis over every curve squeezed the GPU lines (what this chart
    # is read against) into its bottom tenth: it stops above them, and the corner says how far the curves go on
    capped = not log and gpu_top > 0 and top > ABOVE_GPUS * gpu_top
    # the unit of the GPU lines where the axis is read against them (log up to 10,000 of it, or capped): 0.001 ...
    # 1 TiB read worse than 1 ... 1,000 GiB beside "A100 80 GB: 80.00 GiB"; past it, the largest value's unit
    gpu_unit = ByteUnit([gpu_top])
    u = gpu_unit if gpu_top and (capped or log and top < LOG_IN_GPU_UNIT * gpu_unit.size) else ByteUnit([top, gpu_top])
    colors = color_map(df["config"].unique())
    seen: dict[tuple, str] = {}
    for name, d in df.groupby("config", sort=False):
        d = d.sort_values("seq_len")
        key = tuple(zip((int(s) for s in d["seq_len"]), (int(b) for b in d["bytes"]), strict=True))
        same = seen.get(key)  # equal to an earlier config at every length: dotted on top of it, said in the legend
        seen.setdefault(key, name)
        fig.add_scatter(
            x=[int(s) for s in d["seq_len"]], y=[u(int(b)) for b in d["bytes"]], mode="lines+markers",
            name=legend_name(name + (f" (= {same})" if same else "")), legendgroup=name,
            line=dict(color=colors[name], dash="dot" if same else "solid", width=2 if same else 3),
            marker=dict(symbol="circle-open" if same else "circle", size=10 if same else 6),
            customdata=_hover_bytes(d["bytes"]),
            hovertemplate=f"<b>{plotly_text(name)}</b><br>seq_len %{{x:,}}<br>"
                          f"{what} %{{customdata[0]:,}} bytes (%{{customdata[1]}}) per GPU<extra></extra>",
        )
        own = d[d["seq_len"] == (marks or {}).get(name)]
        if len(own):
            fig.add_scatter(x=[int(own["seq_len"].iloc[0])], y=[u(int(own["bytes"].iloc[0]))], mode="markers",
                            name=f"{plotly_text(name)}: its max_position", showlegend=False, legendgroup=name,
                            marker=dict(symbol="diamond-open", size=16, color=colors[name], line=dict(width=3)),
                            customdata=_hover_bytes(own["bytes"]),
                            hovertemplate=f"<b>{plotly_text(name)}</b> at its max_position %{{x:,}}<br>"
                                          "%{customdata[0]:,} bytes (%{customdata[1]}) per GPU<extra></extra>")
        if measured is not None and len(measured[measured["config"] == name]):
            _step_points(fig, measured[measured["config"] == name].sort_values("seq_len"), name, colors[name], u)
    _budget_traces(fig, budgets, (int(df["seq_len"].min()), int(df["seq_len"].max())), u)
    style(fig, x=f"{x_title} (tokens" + (", log)" if log else ")"),
          y=f"memory per GPU ({u.name}" + (", log)" if log else ")"), log_x=log, log_y=log)
    # the GPU lines' legend entries take room below the plot, and a config's each past the default ones (13 on a
    # 390-px phone: the plot 108 px high, the legend's last GPU lines below the figure's edge)
    fig.layout.height = HEIGHT + 80 + legend_rows_px(df["config"].nunique())
    if log:  # the range over the curves and the GPU lines, so that the lines show where each curve crosses them
        log_axis(fig, [int(s) for s in df["seq_len"]], axis="x", kind="count")
        extra = [] if measured is None else [u(int(b)) for b in measured["measured"] if int(b) > 0]
        log_axis(fig, [u(int(b)) for b in df["bytes"]] + [u(b) for b in budgets.values()] + extra, axis="y")
    elif capped:
        put_axes(fig, "y", dict(range=[0, u(gpu_top) * CAPPED_HEADROOM]))
        d = df.loc[df["bytes"].astype(object).map(int).idxmax()]
        fig.add_annotation(xref="paper", yref="paper", x=0, y=1, xanchor="left", yanchor="top", showarrow=False,
                           align="left", font=dict(size=11, color="#262730"), bgcolor="rgba(255,255,255,0.85)",
                           name="curves above the axis",
                           text=f"above this axis: up to {sizes([int(d['bytes'])])[0]},<br>{legend_name(str(d['config']))}"
                                f"<br>at {int(d['seq_len']):,} tokens (the log scale shows all)")
    else:  # memory is never negative: the autorange padded the markers below 0
        put_axes(fig, "y", dict(rangemode="tozero"))
    return fig


def _step_points(fig: go.Figure, d: pd.DataFrame, name: str, color: str, u: ByteUnit) -> None:
    xs = [int(s) for s in d["seq_len"]]
    modelled = [int(v) for v in d["modelled_cpu"] if v is not None and v == v]
    if len(modelled) == len(xs):
        fig.add_scatter(x=xs, y=[u(v) for v in modelled], mode="lines", name=f"{legend_name(name)}: modelled peak, CPU",
                        legendgroup=name, showlegend=False, line=dict(color=color, dash="dash", width=1.5),
                        customdata=_hover_bytes(modelled),
                        hovertemplate=f"<b>{plotly_text(name)}</b><br>seq_len %{{x:,}}<br>modelled step peak (CPU "
                                      "kernels): %{customdata[0]:,} bytes (%{customdata[1]})<extra></extra>")
    fig.add_scatter(x=xs, y=[u(int(b)) for b in d["measured"]], mode="markers",
                    name=f"{legend_name(name)}: measured step peak", legendgroup=name, showlegend=False,
                    marker=dict(color=color, size=10, symbol="circle", line=dict(color=MEASURED_COLOR, width=1.5)),
                    customdata=_hover_bytes(d["measured"]),
                    hovertemplate=f"<b>{plotly_text(name)}</b><br>seq_len %{{x:,}}<br>training step peak measured by "
                                  "PyTorch (fake tensors, CPU kernels): %{customdata[0]:,} bytes (%{customdata[1]})"
                                  "<extra></extra>")
