"""What the ALBERT paper measured, beside exact counts: parameters against the paper's Avg, and speed against FLOPs.

No formulas here: every number comes in the DataFrames (ui/data.py builds them from albert_core.estimate.paper_results).
No line joins two measured points and nothing is interpolated: a config the paper did not train is not drawn.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from .base import HEIGHT, LEGEND_ROW_PX, counts, legend_name, log_axis, plotly_text, style
from .colors import color_map

# one color and marker per series of paper rows (Okabe-Ito, then Tol's muted): distinct for colorblind readers
SERIES_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#882255", "#999933",
                 "#44AA99", "#332288")
SERIES_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "triangle-down", "pentagon", "hexagon", "star",
                  "cross", "x")
AVG_AXIS = "paper's dev-set Avg (%)"
PARAMS_AXIS = "stored parameters, exact (log scale)"


def tradeoff(points: pd.DataFrame, marks: pd.DataFrame) -> go.Figure:
    """The paper's measured points: exact parameters (x, log) against the printed Avg (y), one trace per series.

    points: one row per paper row: key, series, name (the row as its table names it), params_exact,
      params_printed (None where the table prints none), avg, training (how it was trained).
    marks: one row per (config, paper row it equals exactly): config, key, params_exact, avg. A ring around the
      paper's point, in the config's color; a config with no row is not drawn (the page says so).
    """
    fig = go.Figure()
    for i, (series, d) in enumerate(points.groupby("series", sort=False)):
        printed = ["not printed" if pd.isna(v) else f"{int(v) // 1_000_000:,}M" for v in d["params_printed"]]
        fig.add_scatter(
            x=[int(v) for v in d["params_exact"]], y=[float(v) for v in d["avg"]], mode="markers",
            name=plotly_text(series), text=[plotly_text(n) for n in d["name"]], meta=str(series),
            marker=dict(size=10, color=SERIES_COLORS[i % len(SERIES_COLORS)],
                        symbol=SERIES_SYMBOLS[i % len(SERIES_SYMBOLS)], line=dict(width=1, color="#FFFFFF")),
            customdata=list(zip(d["key"], counts(d["params_exact"]), printed, [plotly_text(t) for t in d["training"]],
                                strict=True)),
            hovertemplate="<b>%{text}</b><br>%{x:,} parameters exact (%{customdata[1]}); printed %{customdata[2]}"
                          "<br>Avg %{y:.1f} (%{customdata[3]})<extra></extra>",
        )
    if len(marks):
        colors = color_map(marks["config"])
        for cfg, d in marks.groupby("config", sort=False):
            fig.add_scatter(
                x=[int(v) for v in d["params_exact"]], y=[float(v) for v in d["avg"]], mode="markers",
                name=legend_name(cfg), meta=f"config {cfg}", text=[plotly_text(n) for n in d["name"]],
                marker=dict(size=20, color=colors[cfg], symbol="circle-open", line=dict(width=2.5)),
                customdata=[(plotly_text(cfg), k) for k in d["key"]],
                hovertemplate="<b>%{customdata[0]}</b> is this network exactly<br>%{text}: Avg %{y:.1f}<br>"
                              "%{x:,} parameters<extra></extra>",
            )
    style(fig, x=PARAMS_AXIS, y=AVG_AXIS)
    entries = len(fig.data)
    # a phone's legend holds one entry a row: past two, each row adds its height, so the plot keeps 280 px or more
    # there (13 entries on a 390-px phone: 222 px when 22 px were added past six, 280 now; a desktop 447 -> 505 px)
    fig.update_layout(height=HEIGHT + LEGEND_ROW_PX * max(0, entries - 2))
    fig.update_traces(cliponaxis=False)
    log_axis(fig, [int(v) for v in points["params_exact"]] + [int(v) for v in marks.get("params_exact", [])],
             axis="x", kind="count")
    lo, hi = float(points["avg"].min()), float(points["avg"].max())
    pad = max(1.0, 0.08 * (hi - lo))
    fig.update_yaxes(range=[lo - pad, hi + pad])
    return fig


def speedup_bars(df: pd.DataFrame) -> go.Figure:
    """Table 2's models: the speed FLOPs alone predict against BERT-large, beside the speed the paper measured.

    df: model, flops_per_token, flops_vs_bert_large, flops_predicted_speedup (BERT-large's FLOPs per token over
      the model's), measured_speedup (Table 2, Cloud TPU v3), params_exact.
    """
    fig = go.Figure()
    models = [plotly_text(m) for m in df["model"]]
    fig.add_bar(
        name="FLOPs alone predict", x=models,
        y=[float(v) for v in df["flops_predicted_speedup"]], marker_color="#999999", meta="flops",
        customdata=list(zip([f"{v:,.0f}" for v in df["flops_per_token"]], df["flops_vs_bert_large"], strict=True)),
        hovertemplate="<b>%{x}</b><br>%{customdata[0]} forward FLOPs per token, %{customdata[1]:.2f}× BERT-large's"
                      "<br>FLOPs alone predict %{y:.2f}× BERT-large's speed<extra></extra>",
    )
    fig.add_bar(
        name="measured (paper, TPU)", x=models, y=[float(v) for v in df["measured_speedup"]],
        marker_color="#0072B2", meta="measured",
        customdata=[(int(v), c) for v, c in zip(df["params_exact"], counts(df["params_exact"]), strict=True)],
        hovertemplate="<b>%{x}</b><br>measured %{y:.1f}× BERT-large's training throughput<br>%{customdata[0]:,} "
                      "parameters (%{customdata[1]}) all-reduced per data-parallel step<extra></extra>",
    )
    fig.update_layout(barmode="group")
    return style(fig, x="model (Table 2)", y="training speed relative to BERT-large (×)")
