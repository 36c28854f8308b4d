"""Memory charts: activations against sequence length, training memory stacked, GPU budget lines."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .base import gib, plotly_text, sizes, style
from .colors import MEMORY_COLORS, color_map

PART_LABELS = {"quadratic": "attention (grows with seq_len²)", "linear": "linear in seq_len"}
TRAINING_PARTS = {"weights": "weights", "master_weights": "fp32 master weights", "gradients": "gradients",
                  "optimizer": "optimizer state", "activations": "activations"}
BUDGET_DASHES = ("dash", "dot", "dashdot", "longdash", "longdashdot")


def _hover_bytes(values) -> list[tuple[int, str]]:
    return [(int(v), s) for v, s in zip(values, sizes(values), strict=True)]


def activation_vs_seq(df: pd.DataFrame, *, log: bool = False, per_row: int = 4) -> go.Figure:
    """Activation memory against sequence length (= max_position): one panel per config, the seq_len² part
    stacked on the linear part (on log axes the two parts are drawn as separate lines).

    df: columns config, seq_len, part ("quadratic" | "linear"), bytes. Each trace carries its config in `meta`.
    """
    names = list(dict.fromkeys(df["config"]))
    cols = min(per_row, len(names))
    rows = -(-len(names) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[plotly_text(n) for n in names], shared_yaxes=True,
                        horizontal_spacing=0.03, vertical_spacing=0.12)
    for i, name in enumerate(names):
        d = df[df["config"] == name]
        r, c = i // cols + 1, i % cols + 1
        for part in ("linear", "quadratic"):
            p = d[d["part"] == part].sort_values("seq_len")
            fig.add_scatter(
                x=[int(s) for s in p["seq_len"]], y=[gib(int(b)) for b in p["bytes"]], mode="lines+markers",
                name=PART_LABELS[part], legendgroup=part, showlegend=i == 0, meta=name,
                stackgroup=None if log else f"stack{i}", line=dict(color=MEMORY_COLORS[part]), marker=dict(size=4),
                customdata=_hover_bytes(p["bytes"]),
                hovertemplate=f"<b>{plotly_text(name)}</b><br>seq_len %{{x:,}}<br>{PART_LABELS[part]}: "
                              "%{customdata[0]:,} bytes (%{customdata[1]})<extra></extra>",
                row=r, col=c,
            )
    style(fig, x="", y="", log_x=log, log_y=log)
    fig.update_layout(height=320 * rows + 110, margin=dict(t=90),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0 + 0.12 / rows, x=0))
    fig.update_xaxes(title_text="seq_len = max_position (tokens)" + (" (log)" if log else ""), row=rows, col=1)
    for r in range(1, rows + 1):
        fig.update_yaxes(title_text="activation memory (GiB)" + (" (log)" if log else ""), row=r, col=1)
    return fig


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def variants(df: pd.DataFrame, name: str, *, log: bool = False) -> go.Figure:
    """Total activation memory of one config under several settings (eager/sdpa, dtype, checkpointing).

    df: columns variant, seq_len, bytes.
    """
    fig = go.Figure()
    dashes = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
    palette = ("#E4572E", "#3D7DD8", "#17A589", "#7D5BA6", "#F2A541", "#8E1B3A")
    for i, (variant, d) in enumerate(df.groupby("variant", sort=False)):
        d = d.sort_values("seq_len")
        fig.add_scatter(
            x=[int(s) for s in d["seq_len"]], y=[gib(int(b)) for b in d["bytes"]], mode="lines+markers",
            name=variant, line=dict(color=palette[i % len(palette)], dash=dashes[i % len(dashes)]),
            customdata=_hover_bytes(d["bytes"]),
            hovertemplate=f"<b>{plotly_text(name)}</b>, {variant}<br>seq_len %{{x:,}}<br>"
                          "%{customdata[0]:,} bytes (%{customdata[1]})<extra></extra>",
        )
    return style(fig, x="sequence length = max_position (tokens)" + (" (log scale)" if log else ""),
                 y="activation memory (GiB)" + (" (log scale)" if log else ""), log_x=log, log_y=log)


def merge_budgets(budgets: dict[str, int], within: float = 0.02) -> dict[str, int]:
    """GPUs whose memory differs by less than `within` share one line ("L4 24 GB / A10 24 GB", the smaller size)."""
    merged: list[tuple[list[str], int]] = []
    for gpu, b in sorted(budgets.items(), key=lambda kv: kv[1]):
        if merged and b - merged[-1][1] <= within * b:
            merged[-1][0].append(gpu)
        else:
            merged.append(([gpu], b))
    return {" / ".join(names): b for names, b in merged}


def _budget_lines(fig: go.Figure, budgets: dict[str, int]) -> None:
    for i, (gpu, b) in enumerate(merge_budgets(budgets).items()):
        fig.add_hline(y=gib(b), line=dict(color="rgba(128,128,128,0.8)", dash=BUDGET_DASHES[i % len(BUDGET_DASHES)],
                                          width=1.5),
                      annotation_text=f"{gpu}: {sizes([b])[0]}", annotation_position="top left",
                      name=f"budget {gpu}")


def training_stack(df: pd.DataFrame, budgets: dict[str, int], title: str | None = None) -> go.Figure:
    """Stacked bars per config: weights, master weights, gradients, optimizer state, activations; GPU budgets.

    df: columns config, part (a key of TRAINING_PARTS), bytes (per GPU).
    """
    fig = go.Figure()
    order = list(dict.fromkeys(df["config"]))
    for part, label in TRAINING_PARTS.items():
        d = df[df["part"] == part].set_index("config").reindex(order)
        if d["bytes"].isna().all() or not any(int(b) for b in d["bytes"].dropna()):
            continue
        vals = [int(b) for b in d["bytes"]]
        fig.add_bar(
            name=label, x=[plotly_text(n) for n in order], y=[gib(v) for v in vals], marker_color=MEMORY_COLORS[part],
            customdata=_hover_bytes(vals),
            hovertemplate="<b>%{x}</b><br>" + label + ": %{customdata[0]:,} bytes (%{customdata[1]})<extra></extra>",
        )
    fig.update_layout(barmode="stack")
    _budget_lines(fig, budgets)
    return style(fig, x="config", y="memory per GPU (GiB)", title=title)


def training_vs_seq(df: pd.DataFrame, budgets: dict[str, int], *, log: bool = False) -> go.Figure:
    """Total training memory per GPU against sequence length, one line per config, with the GPU budget lines.

    df: columns config, seq_len, bytes.
    """
    fig = go.Figure()
    colors = color_map(df["config"].unique())
    for name, d in df.groupby("config", sort=False):
        d = d.sort_values("seq_len")
        fig.add_scatter(
            x=[int(s) for s in d["seq_len"]], y=[gib(int(b)) for b in d["bytes"]], mode="lines+markers",
            name=plotly_text(name), line=dict(color=colors[name]), customdata=_hover_bytes(d["bytes"]),
            hovertemplate=f"<b>{plotly_text(name)}</b><br>seq_len %{{x:,}}<br>"
                          "training memory %{customdata[0]:,} bytes (%{customdata[1]}) per GPU<extra></extra>",
        )
    _budget_lines(fig, budgets)
    return style(fig, x="sequence length = max_position (tokens)" + (" (log scale)" if log else ""),
                 y="training memory per GPU (GiB)" + (" (log scale)" if log else ""), log_x=log, log_y=log)
