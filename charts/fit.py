"""Fit planner charts: the largest batch and the longest sequence per config on the chosen GPUs."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .base import HEIGHT, _frame, legend_name, name_ticks, plotly_text, sizes, value_angle
from .colors import color_map

SHORT_BAR = 0.12  # of its panel's tallest bar: shorter, a bar holds no line of text (a panel is 160-200 px high)


def _where(value: int, tallest: int) -> str:
    """A value's place: inside its bar at the top, or above a bar too short to hold it (Plotly hid it there: an
    albert-xxlarge batch of 24 beside an electra-small of 554 showed no number). Only short bars put their value
    outside, so the axis, which grows to hold outside text, is not pushed into the panel titles."""
    return "outside" if value < SHORT_BAR * tallest else "inside"


def fit_bars(df: pd.DataFrame) -> go.Figure:
    """Two panels, one bar per config: largest batch at seq_len, longest sequence at the batch size.

    df: albert_core.step.fit.fit_table rows for one GPU (config, max_batch_size, max_seq_len, seq_len, batch_size,
    needed_bytes, gpu_bytes) plus longest_max_position (the position table grown with the sequence).
    """
    # one panel above the other: side by side, the two panel titles cross each other on a phone
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.2, shared_xaxes=True,  # the names once, under both
                        subplot_titles=("largest batch per GPU at the sequence length",
                                        "longest sequence at the batch size"))  # max_position raised: caption
    colors = color_map(df["config"])
    tallest = (max(1, int(df["max_batch_size"].max())), max(1, int(df["longest_max_position"].max())))
    for _, r in df.iterrows():
        name, shown = r["config"], plotly_text(r["config"])
        batch, longest = f"{int(r['max_batch_size']):,}", f"{int(r['longest_max_position']):,}"
        fig.add_bar(
            name=legend_name(name), x=[shown], y=[int(r["max_batch_size"])], marker_color=colors[name],
            legendgroup=name, text=[batch], textposition=_where(int(r["max_batch_size"]), tallest[0]),
            insidetextanchor="end", textangle=value_angle(batch),
            customdata=[(int(r["seq_len"]), int(r["needed_bytes"]), sizes([r["needed_bytes"]])[0])],
            hovertemplate=f"<b>{shown}</b><br>largest batch %{{y:,}} sequences of %{{customdata[0]:,}} tokens<br>"
                          "(batch as set needs %{customdata[1]:,} bytes, %{customdata[2]})<extra></extra>",
            row=1, col=1,
        )
        fig.add_bar(
            name=legend_name(name), x=[shown], y=[int(r["longest_max_position"])], marker_color=colors[name],
            legendgroup=name, text=[longest], textposition=_where(int(r["longest_max_position"]), tallest[1]),
            insidetextanchor="end", textangle=value_angle(longest),
            showlegend=False, customdata=[(int(r["batch_size"]), int(r["max_seq_len"]))],
            hovertemplate=f"<b>{shown}</b><br>longest sequence %{{y:,}} tokens at batch %{{customdata[0]:,}}"
                          "<br>(max_position raised to it; at the config's own max_position: "
                          "%{customdata[1]:,})<extra></extra>",
            row=2, col=1,
        )
    # each value inside its bar, at its top (outside, it stretched the axes into the panel titles on a phone), but
    # above a bar too short to hold a line (_where); a bar too narrow for its value shows it on hover and in the
    # table; past three configs the legend's lines take height from the panels, which grow back by as much
    fig.update_layout(template="none", barmode="group", height=HEIGHT + 160 + 24 * max(0, len(df) - 3),
                      uniformtext=dict(minsize=9, mode="hide"))
    _frame(fig)
    name_ticks(fig, list(df["config"]))  # each bar named (in full, in lines) under the lower panel, its value above it
    fig.update_xaxes(showticklabels=False, row=1, col=1)  # the upper panel's bars stand above the same names
    fig.update_yaxes(title_text="batch (sequences)", row=1, col=1)
    fig.update_yaxes(title_text="sequence (tokens)", row=2, col=1)
    fig.update_annotations(font=dict(size=13))
    return fig
