"""One self-contained HTML report: configs, comparison, figures (plotly.js inline, once), settings, date, link.

Pure: no Streamlit. Opens offline: the first figure carries plotly.js, the others reuse it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from .base import refit, title_of

FIGURE_PX = 900  # the report's figures are drawn at least this wide (.figure's min-width), their titles wrapped for it

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#262730;background:#fff;margin:0 auto;
max-width:1200px;padding:24px}
h1{font-size:28px;margin-bottom:4px} h2{margin-top:36px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;font-size:13px;margin:8px 0;display:block;overflow-x:auto}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top} th{background:#f4f4f6}
tbody th{min-width:10em;max-width:18em;font-weight:600} td{min-width:6em}
td.diff{background:#FFE8A3;font-weight:600} .meta{color:#5C5F6A} code{word-break:break-all}
.figures{overflow-x:auto} .figure{margin:16px 0;border:1px solid #eee;min-width:FIGURE_PXpx}
@media print{body{max-width:none;padding:0} table{font-size:10px} .figure{min-width:0;break-inside:avoid}}
""".replace("FIGURE_PX", str(FIGURE_PX))


def wrapped(fig: go.Figure) -> go.Figure:
    """A copy of fig with its title and subtitle wrapped for the report's FIGURE_PX (the app's figures come
    wrapped for a phone; they are cached and shared, so they are not changed)."""
    return refit(fig, FIGURE_PX)


def _cell(v: object) -> str:
    """A value's text, escaped, its change against the first config (in brackets) on a line of its own: cells and
    row labels wrap (a label's settings in its own column), so labels and values stay side by side at 900 px and
    in print."""
    value, sep, change = html.escape(str(v)).partition("  (")
    return f"{value}<br>({change}" if sep else value


def _table(df: pd.DataFrame, diff: pd.DataFrame | None = None) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in [df.index.name or ""] + list(df.columns))
    body = []
    for i, (idx, row) in enumerate(df.iterrows()):
        cells = []
        for j, v in enumerate(row):
            cls = ' class="diff"' if diff is not None and bool(diff.iloc[i, j]) else ""
            cells.append(f"<td{cls}>{_cell(v)}</td>")
        label = html.escape(str(idx)).replace("_", "_<wbr>")  # a field's name breaks after its "_", not mid-word
        body.append(f"<tr><th>{label}</th>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def build(*, title: str, date: str, link: str, settings: str, configs: pd.DataFrame,
          comparison: Sequence[tuple[str, str, pd.DataFrame, pd.DataFrame]], figures: Sequence[go.Figure],
          paper: Sequence[str] = ()) -> str:
    """The report as one HTML document.

    configs: one column per config, one row per ModelConfig field; comparison: the side-by-side tables, each
    (title, its settings stated once, text table, differs table);
    figures: titled figures (charts.base.slide), in page order; paper: one sentence per config, whether the
    ALBERT paper trained exactly its network (albert_core.estimate.paper_results.match_text).
    """
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{CSS}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>",
             f"<p class='meta'>Made {html.escape(date)} by the ALBERT Explorer. Settings: {html.escape(settings)}.</p>",
             f"<p class='meta'>The link that reproduces this view: <a href='{html.escape(link, quote=True)}'>"
             f"<code>{html.escape(link)}</code></a></p>",
             "<h2>Configs</h2>", _table(configs),
             "<h2>Side by side</h2><p class='meta'>Highlighted: differs from the first config; in brackets: the "
             "change against it.</p>",
             *(f"<section class='compare'><h3>{html.escape(t)}</h3><p class='meta'>Settings: {html.escape(h)}.</p>"
               f"{_table(text, diff)}</section>" for t, h, text, diff in comparison),
             *(["<h2>What the ALBERT paper measured</h2>", *(f"<p>{html.escape(p)}</p>" for p in paper)] if paper else []),
             "<h2>Figures</h2><div class='figures'>"]
    for i, fig in enumerate(wrapped(f) for f in figures):
        div = fig.to_html(full_html=False, include_plotlyjs="inline" if i == 0 else False,
                          config={"displaylogo": False, "responsive": True}, div_id=f"figure-{i + 1}")
        parts.append(f"<div class='figure' data-title='{html.escape(title_of(fig), quote=True)}'>{div}</div>")
    parts.append("</div></body></html>")
    return "\n".join(parts)
