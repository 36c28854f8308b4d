"""Parameter charts: where the parameters sit, and what ALBERT's two cuts save."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from .base import HEIGHT, counts, legend_name, legend_rows_px, log_axis, name_ticks, plotly_text, style
from .colors import COMPONENT_COLORS, color_map

COMPONENT_LABELS = {"embedding": "Embedding", "layers": "Layers", "pooler": "Pooler", "final_norm": "Final norm",
                    "heads": "Pre-training heads"}


def _by_component(df: pd.DataFrame):
    """(component, its rows indexed by config in the configs' order) for each component present, stacking order."""
    order = list(dict.fromkeys(df["config"]))
    for comp in [c for c in COMPONENT_LABELS if c in set(df["component"])]:
        yield comp, df[df["component"] == comp].set_index("config").reindex(order).dropna(subset=["params"])


def component_bars(df: pd.DataFrame) -> go.Figure:
    """Stacked bars of embedding / layers / pooler per config.

    df: one row per (config, component) with columns config, component, params, pct.
    """
    fig = go.Figure()
    for comp, d in _by_component(df):
        fig.add_bar(
            name=COMPONENT_LABELS[comp], x=[plotly_text(n) for n in d.index], y=[int(v) for v in d["params"]],
            marker_color=COMPONENT_COLORS[comp],
            customdata=list(zip(counts(d["params"]), d["pct"], strict=True)),
            hovertemplate="<b>%{x}</b><br>" + COMPONENT_LABELS[comp]
            + ": %{y:,} parameters (%{customdata[0]})<br>%{customdata[1]:.1f}% of the model<extra></extra>",
        )
    fig.update_layout(barmode="stack")
    name_ticks(fig, list(dict.fromkeys(df["config"])))
    return style(fig, x="config", y="parameters")


def share_bars(df: pd.DataFrame) -> go.Figure:
    """100%-stacked bars: the embedding / layers / pooler share of each config's parameters.

    df: one row per (config, component) with columns config, component, params, pct.
    """
    fig = go.Figure()
    for comp, d in _by_component(df):
        fig.add_bar(
            name=COMPONENT_LABELS[comp], x=[plotly_text(n) for n in d.index], y=[float(v) for v in d["pct"]],
            marker_color=COMPONENT_COLORS[comp], text=[f"{v:.1f}%" if v >= 4 else "" for v in d["pct"]],
            textposition="inside", insidetextanchor="middle",
            customdata=list(zip([int(v) for v in d["params"]], counts(d["params"]), strict=True)),
            hovertemplate="<b>%{x}</b><br>" + COMPONENT_LABELS[comp]
            + ": %{y:.2f}% of the model<br>%{customdata[0]:,} parameters (%{customdata[1]})<extra></extra>",
        )
    fig.update_layout(barmode="stack", uniformtext=dict(minsize=10, mode="hide"))
    name_ticks(fig, list(dict.fromkeys(df["config"])))
    style(fig, x="config", y="share of all parameters (%)")
    fig.update_yaxes(range=[0, 100])
    return fig


# the share of the model a sunburst slice needs to show its label: 2% of the circle is 7.2°, an arc of 14 px (a
# 12-px label's height, the label running along the radius) at 110 px from the centre, inside the outer ring of
# the sunburst drawn on a 390-px phone
LABEL_MIN_PCT = 2.0


def breakdown_sunburst(df: pd.DataFrame, name: str) -> go.Figure:
    """The fine breakdown of one config: component -> sublayer -> module, sized by stored parameters.

    df: ParameterCount.breakdown() (component, sublayer, module, shape, per_copy, copies, params, pct).
    """
    # the root's id is the name, made distinct from the component ids below it (a config named "layers")
    cs = list(zip(df["component"], df["sublayer"], df["module"], strict=True))
    taken = {c for c, _, _ in cs} | {f"{c}/{s}" for c, s, _ in cs} | {f"{c}/{s}/{m}" for c, s, m in cs}
    root = name
    while root in taken:
        root += " (config)"
    ids, labels, parents, values, text = [root], [plotly_text(name)], [""], [int(df["params"].sum())], [""]
    for comp, dc in df.groupby("component", sort=False):
        ids.append(comp)
        labels.append(COMPONENT_LABELS.get(comp, comp))
        parents.append(root)
        values.append(int(dc["params"].sum()))
        text.append("")
        for sub, ds in dc.groupby("sublayer", sort=False):
            sid = f"{comp}/{sub}"
            if sub != comp:
                ids.append(sid)
                labels.append(sub)
                parents.append(comp)
                values.append(int(ds["params"].sum()))
                text.append("")
            for _, r in ds.iterrows():
                ids.append(f"{sid}/{r['module']}")
                labels.append(r["module"])
                parents.append(sid if sub != comp else comp)
                values.append(int(r["params"]))
                text.append(f"{r['shape']} × {int(r['copies'])} stored")
    total = values[0]
    top = {i: i.split("/")[0] for i in ids}  # every node takes the color of its component
    colors = ["#FFFFFF"] + [COMPONENT_COLORS.get(top[i], "#9AA5B1") for i in ids[1:]]
    fig = go.Figure(go.Sunburst(
        ids=ids, labels=labels, parents=parents, values=values, branchvalues="total",
        marker=dict(colors=colors, line=dict(color="rgba(128,128,128,0.6)", width=1)),
        customdata=[(c, 100 * v / total, t) for c, v, t in zip(counts(values), values, text, strict=True)],
        hovertemplate="<b>%{label}</b><br>%{value:,} parameters (%{customdata[0]})<br>"
                      "%{customdata[1]:.2f}% of the model<br>%{customdata[2]}<extra></extra>",
        # each label turned the way it is drawn largest (radial alone shrank "embeddings" across a thin ring to 6 px
        # on a phone); a slice under LABEL_MIN_PCT of the model shows no label (labels of thin slices were shrunk
        # to 1-4 px and ran into each other), its name and numbers stay in the hover; any other label Plotly would
        # shrink under 10 px is hidden too
        insidetextorientation="auto", maxdepth=3,
        texttemplate=["%{label}" if 100 * v >= LABEL_MIN_PCT * total else "" for v in values],
    ))
    fig.update_layout(template="none", height=HEIGHT, uniformtext=dict(minsize=10, mode="hide"))
    return fig


def share_sweep(df: pd.DataFrame, field: str, *, log_x: bool = False) -> go.Figure:
    """Embedding share and layer share of the total as `field` varies, one color per config.

    df: columns config, value (the swept field), embedding_pct, layers_pct, total.
    """
    fig = go.Figure()
    colors = color_map(df["config"].unique())
    for name, d in df.groupby("config", sort=False):
        for col, label, dash in (("embedding_pct", "embedding share", "solid"), ("layers_pct", "layer share", "dot")):
            # one legend entry per config (its color); the caption says which line is which
            first = col == "embedding_pct"
            fig.add_scatter(
                x=[int(v) for v in d["value"]], y=list(d[col]), mode="lines+markers",
                name=legend_name(name) if first else f"{plotly_text(name)}: {label}", legendgroup=name,
                showlegend=first, meta=f"{name}: {label}",
                line=dict(color=colors[name], dash=dash),
                customdata=list(zip(counts(d["total"]), [int(t) for t in d["total"]], strict=True)),
                hovertemplate=f"<b>{plotly_text(name)}</b><br>{field} = %{{x:,}}<br>{label}: %{{y:.2f}}%<br>"
                              "total %{customdata[1]:,} (%{customdata[0]})<extra></extra>",
            )
        _mark_own(fig, d, "value", "embedding_pct", name, colors[name],
                  f"{plotly_text(name)}'s own {field}: %{{x:,}}<br>embedding share %{{y:.2f}}%")
    style(fig, x=f"{field} (log scale)" if log_x else field, y="share of all parameters (%)", log_x=log_x)
    fig.update_layout(height=HEIGHT + legend_rows_px(df["config"].nunique()))  # a phone's legend: a config a row
    fig.update_yaxes(range=[0, 100])
    if log_x:
        log_axis(fig, [int(v) for v in df["value"]], axis="x", kind="count")
    return fig


def _mark_own(fig: go.Figure, d: pd.DataFrame, x: str, y: str, name: str, color: str, hover: str) -> None:
    """A large open diamond at the config's own value of the swept field (rows with own == True)."""
    if "own" not in d:
        return
    own = d[d["own"]]
    if own.empty:
        return
    fig.add_scatter(x=[int(v) for v in own[x]], y=[float(v) for v in own[y]], mode="markers",
                    name=f"{plotly_text(name)}: its own value", legendgroup=name, showlegend=False,
                    marker=dict(symbol="diamond-open", size=16, color=color, line=dict(width=3)),
                    hovertemplate=f"<b>{hover}</b><extra></extra>")


def factorization(df: pd.DataFrame, band: tuple[int, int] = (64, 256)) -> go.Figure:
    """Embedding parameters against embedding_dim, and the unfactorized V×H embedding they replace.

    df: columns config, embedding_dim, embedding (factorized), unfactorized (same config, E = H, no projection),
    saved (unfactorized - embedding).
    """
    fig = go.Figure()
    colors = color_map(df["config"].unique())
    # on a log axis plotly.js 3 places shapes in data coordinates but annotations in log10 units
    fig.add_vrect(x0=band[0], x1=band[1], fillcolor="rgba(128,128,128,0.15)", line_width=0, layer="below")
    fig.add_annotation(x=math.log10(band[0]), y=0.02, xref="x", yref="paper", xanchor="left", yanchor="bottom",
                       showarrow=False, text=f"E = {band[0]}-{band[1]}",
                       font=dict(color="rgba(128,128,128,1)"))
    seen: dict[tuple, str] = {}  # a curve -> the first config that drew it
    for name, d in df.groupby("config", sort=False):
        curve = (tuple(int(v) for v in d["embedding_dim"]), tuple(int(v) for v in d["embedding"]))
        first = seen.setdefault(curve, name)
        same = None if first == name else first  # same V, H and tables as an earlier config: drawn dotted over it
        fig.add_scatter(  # the config's one legend entry (the caption says solid / dashed)
            x=[int(v) for v in d["embedding_dim"]], y=[int(v) for v in d["embedding"]], mode="lines+markers",
            name=legend_name(name + (f" (= {same})" if same else "")),
            legendgroup=name, line=dict(color=colors[name], dash="dot" if same else "solid", width=2 if same else 3),
            marker=dict(symbol="circle-open" if same else "circle", size=10 if same else 6),
            meta=f"{name}: factorized V×E + E×H",
            customdata=list(zip(counts(d["embedding"]), [int(v) for v in d["saved"]], counts(d["saved"]),
                                strict=True)),
            hovertemplate=f"<b>{plotly_text(name)}</b><br>E = %{{x:,}}<br>embedding %{{y:,}} (%{{customdata[0]}})<br>"
                          "saves %{customdata[1]:,} (%{customdata[2]}) against V×H<extra></extra>",
        )
        un = int(d["unfactorized"].iloc[0])
        fig.add_scatter(
            x=[int(d["embedding_dim"].min()), int(d["embedding_dim"].max())], y=[un, un], mode="lines",
            name=f"{plotly_text(name)}: unfactorized V×H", legendgroup=name, meta=f"{name}: unfactorized V×H",
            showlegend=False,
            line=dict(color=colors[name], dash="dashdot" if same else "dash", width=2 if same else 3),
            hovertemplate=f"<b>{plotly_text(name)}</b><br>unfactorized embedding {un:,} ({counts([un])[0]})<extra></extra>",
        )
        _mark_own(fig, d, "embedding_dim", "embedding", name, colors[name],
                  f"{plotly_text(name)}'s own embedding_dim: %{{x:,}}<br>embedding %{{y:,}}")
    style(fig, x="embedding_dim E (log scale)", y="embedding parameters (log scale)", log_x=True, log_y=True)
    # a phone's legend holds a config a row: with eight the plot was 161 px, its axis title through the subtitle
    fig.update_layout(height=HEIGHT + legend_rows_px(df["config"].nunique()))
    lo, hi = log_axis(fig, [int(v) for v in df["embedding_dim"]], axis="x")
    log_axis(fig, [int(v) for v in df["embedding"]] + [int(v) for v in df["unfactorized"]], axis="y", kind="count")
    ticks = sorted({int(v) for v in df["embedding_dim"]})  # the swept E: 16, 32, ... (every other when many)
    ticks = ticks[::2] if len(ticks) > 7 else ticks
    fig.update_xaxes(tickvals=ticks, ticktext=[f"{t:,}" for t in ticks])
    return fig


def sharing_modes(df: pd.DataFrame, *, log: bool = False) -> go.Figure:
    """Total parameters of each config under the four sharing modes, side by side.

    df: columns config, sharing, embedding, all_layers, total.
    """
    fig = go.Figure()
    colors = color_map(df["config"].unique())
    for name, d in df.groupby("config", sort=False):
        fig.add_bar(
            name=legend_name(name), x=list(d["sharing"]), y=[int(v) for v in d["total"]], marker_color=colors[name],
            legendgroup=name,  # the config (the figure audit matches the bars with the table beside them)
            customdata=list(zip(counts(d["total"]), [int(v) for v in d["all_layers"]], counts(d["all_layers"]),
                                strict=True)),
            hovertemplate=f"<b>{plotly_text(name)}</b>, sharing %{{x}}<br>total %{{y:,}} (%{{customdata[0]}})<br>"
                          "layers %{customdata[1]:,} (%{customdata[2]})<extra></extra>",
        )
    fig.update_layout(barmode="group", height=HEIGHT + legend_rows_px(df["config"].nunique()))
    style(fig, x="sharing mode", y="parameters (log scale)" if log else "parameters")  # the page says what each shares
    if log:  # a small config stays readable beside a 2.4B one (albert-xxlarge, not shared)
        log_axis(fig, [int(v) for v in df["total"]], axis="y", kind="count")
    return fig
