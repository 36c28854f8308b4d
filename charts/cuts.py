"""ALBERT's two cuts for any model: what it stores now, factorized at E, shared, and both (params.albert_cuts)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from .base import counts, plotly_text, style
from .colors import COMPONENT_COLORS

_PARTS = (("embedding", "Embedding"), ("layers", "Layers"), ("pooler", "Pooler"), ("final_norm", "Final norm"))


def cuts_bars(df: pd.DataFrame) -> go.Figure:
    """Horizontal stacked bars, one per variant (top: as stored now), embedding / layers / pooler parameters;
    the total and the change written under each variant's name (text at the bar's end ran off a phone's
    figure), and carried by an invisible marker at the bar's end (hover).

    df: one row per variant with columns variant, embedding, layers, total, saved_pct, and an encoder's pooler or a
    decoder's final_norm (decoders.decoder_params.decoder_cuts).
    """
    fig = go.Figure()
    y = [plotly_text(v) for v in df["variant"]]
    ends = [f"{c}  ({_change(p)})" if i else c
            for i, (c, p) in enumerate(zip(counts(df["total"]), df["saved_pct"], strict=True))]
    for col, label in _PARTS:
        if col not in ("embedding", "layers") and (col not in df or not (df[col] > 0).any()):
            continue  # no pooler in this family; a decoder's final norm in place of it
        fig.add_bar(
            name=label, y=y, x=[int(v) for v in df[col]], orientation="h",
            marker_color=COMPONENT_COLORS[col],
            customdata=counts(df[col]),
            hovertemplate="<b>%{y}</b><br>" + label + ": %{x:,} parameters (%{customdata})<extra></extra>",
        )
    fig.add_scatter(x=[int(v) for v in df["total"]], y=y, mode="markers", text=ends, marker=dict(opacity=0, size=8),
                    showlegend=False, hovertemplate="<b>%{y}</b><br>total %{text}<extra></extra>")
    fig.update_layout(barmode="stack", legend_traceorder="normal")
    style(fig, x="stored parameters", y="")
    fig.update_yaxes(autorange="reversed", tickmode="array", tickvals=y,
                     ticktext=[f"{v}<br><b>{e}</b>" for v, e in zip(y, ends, strict=True)])
    fig.update_xaxes(range=[0, 1.04 * max(int(v) for v in df["total"])])
    return fig


def _change(saved_pct: float) -> str:
    """-40% when the variant stores 40 % less, +12% when more, "same" when within 0.5 %."""
    if abs(saved_pct) < 0.5:
        return "same"
    return f"{'−' if saved_pct > 0 else '+'}{abs(saved_pct):.0f}%"
