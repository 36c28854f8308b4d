"""Compute charts: FLOPs against stored parameters, and where the FLOPs go."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from .base import HEIGHT, counts, flops, legend_name, legend_rows_px, log_axis, name_ticks, plotly_text, style
from .colors import color_map

FLOP_LABELS = {
    "embedding_projection": "E→H projection",
    "qkv": "Q, K, V projections",
    "attention_scores": "attention scores (S²)",
    "attention_values": "attention × V (S²)",
    "attention_output": "attention output",
    "ffn": "feed-forward",
    "pooler": "pooler",
    "relative_position": "relative positions (DeBERTa)",
    "lm_head": "LM head (H→vocab)",
}
FLOP_COLORS = {  # Okabe-Ito and Tol: distinct for colorblind readers
    "embedding_projection": "#E69F00", "qkv": "#0072B2", "attention_scores": "#D55E00",
    "attention_values": "#882255", "attention_output": "#009E73", "ffn": "#CC79A7", "pooler": "#999999",
    "relative_position": "#56B4E9", "lm_head": "#F0E442",
}


def flops_vs_params(df: pd.DataFrame, seq_len: int) -> go.Figure:
    """One marker per config: stored parameters (x) against forward FLOPs of one sequence (y), log-log.

    The names are in the legend (a label beside each marker would print over its neighbour's when two configs
    cost nearly the same), each config with its own marker shape too. Each axis spans at least a decade
    (charts.base.log_axis): three configs 0.1% apart sit together in the middle instead of stretching 0.1% over
    the whole height with no tick left.
    df: columns config, params, forward_flops, training_flops.
    """
    fig = go.Figure()
    colors = color_map(df["config"])
    for i, (_, r) in enumerate(df.iterrows()):
        fig.add_scatter(
            x=[int(r["params"])], y=[int(r["forward_flops"])], mode="markers", name=legend_name(r["config"]),
            text=[plotly_text(r["config"])],
            marker=dict(size=14, color=colors[r["config"]], symbol=SYMBOLS[i % len(SYMBOLS)],
                        line=dict(width=1, color="#FFFFFF")),
            customdata=[(counts([r["params"]])[0], flops([r["forward_flops"]])[0], int(r["training_flops"]),
                         flops([r["training_flops"]])[0], int(r.get("seq_len", seq_len)))],
            hovertemplate="<b>%{text}</b><br>%{x:,} parameters (%{customdata[0]})<br>"
                          "forward, one sequence of %{customdata[4]:,} tokens: %{y:,} FLOPs (%{customdata[1]})<br>"
                          "training step: %{customdata[2]:,} FLOPs (%{customdata[3]})<extra></extra>",
        )
    style(fig, x="stored parameters (log scale)", y="forward FLOPs (log scale)", log_x=True, log_y=True)
    fig.update_traces(cliponaxis=False)
    log_axis(fig, [int(v) for v in df["params"]], axis="x", kind="count")
    log_axis(fig, [int(v) for v in df["forward_flops"]], axis="y", kind="flops")
    # the legend's rows past the default configs: 13 left a 390-px phone's plot 110 px high, its y axis title
    # running into the subtitle
    fig.update_layout(height=HEIGHT + legend_rows_px(len(df)))
    return fig


SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross", "x", "triangle-down", "star", "pentagon",
           "hexagon", "triangle-left", "triangle-right")


def flops_breakdown(df: pd.DataFrame, seq_len: int, *, shares: bool = False) -> go.Figure:
    """Stacked bars of forward FLOPs by component per config.

    df: columns config, component, flops, pct (FlopCount.breakdown() of each config, stacked).
    shares: each bar its config's forward as 100% (the pct column), so a small config reads beside a large one.
    """
    fig = go.Figure()
    order = list(dict.fromkeys(df["config"]))
    # every component the table has, the known ones in FLOP_LABELS' order: the chart left out DeBERTa's relative
    # positions (24.2 GFLOPs of deberta-v3-base's 120.8 at 512 tokens), its bar as short as BERT-base's
    comps = sorted(dict.fromkeys(df["component"]), key=lambda c: list(FLOP_LABELS).index(c) if c in FLOP_LABELS else 99)
    for comp in comps:
        label = FLOP_LABELS.get(comp, str(comp).replace("_", " "))
        d = df[df["component"] == comp].set_index("config").reindex(order)
        if not any(int(v) for v in d["flops"].dropna()):  # none of the shown configs has it
            continue
        exact = [int(v) if v == v else 0 for v in d["flops"]]
        pct = [float(v) if v == v else 0.0 for v in d["pct"]]
        fig.add_bar(
            name=label, x=[plotly_text(n) for n in order], y=pct if shares else exact,
            marker_color=FLOP_COLORS.get(comp, "#BBBBBB"),
            customdata=list(zip(exact, flops(exact), pct, strict=True)),
            hovertemplate="<b>%{x}</b><br>" + label
            + ": %{customdata[0]:,} FLOPs (%{customdata[1]})<br>%{customdata[2]:.1f}% of the forward<extra></extra>",
        )
    fig.update_layout(barmode="stack")
    name_ticks(fig, order)
    style(fig, x="config", y="share of the forward FLOPs (%)" if shares else "forward FLOPs per sequence")
    if shares:
        fig.update_yaxes(range=[0, 100])
    return fig
