"""The figure audit (issue 17, moved out of Streamlit by issue 25): what Plotly draws, for every figure on every tab
of every page, over stress views, at a desktop and a 390-px phone width, in light and dark.

Where the figures come from: tests/figure_views.py opens each view in AppTest with the browser's width already
reported, so each figure is the very spec (and config) Streamlit sends at that width; test_figure_screens.py holds
that to the real app (its widths, its drawn specs). Here each spec is drawn by Plotly's own JavaScript in plain
headless Chromium, in a div as wide as Streamlit makes it, on a light or dark page, and read there. That is where
a figure's text and axes are laid out, and it costs a fraction of a second per figure instead of a page load,
a tab click and a resize rerun each.

For each figure it reads the drawn SVG and the figure's `_fullLayout` and checks:
- every cartesian axis that shows tick labels shows 2..30 of them, none overlapping another;
- no text (title, subtitle, axis titles, legend, annotations and panel titles, tick labels, text on the marks)
  overlaps another text or leaves the figure, and the x tick labels of panels side by side keep 3 px apart;
- every plotting area keeps a usable size (MIN_PLOT_PX), and every marker lies whole inside its plotting area
  along a log axis;
- every value drawn on a log axis is positive and inside the axis range;
- it has a title, a PNG export named after it and an opaque white background (what a slide keeps);
- every line of the title is narrower than the figure and inside it, and the title keeps one line where it fits
  on one (the desktop width); a subtitle of several lines fills at least 60% of the width (wrapped for the
  width it is drawn at, not for a phone's); the title, the subtitle and the legend stay off every plotting area.
And, where a page shows a table beside a figure (on its tab or another tab), the numbers the figure draws (its
traces) equal the table's (the DataFrame st.dataframe is given) for every config, in every view.
A failure names the view, the page and tab, the width, the figure and what is wrong.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd
import plotly
import pytest
from figure_views import DESKTOP, MANY, PHONE, SCREENS, VIEWS, Screen, View, page_tabs, traces

from albert_core.share import PAGE_TABS
from charts.base import FRAME

pytestmark = pytest.mark.browser

MIN_PLOT_PX = 100  # the height (and width) a plotting area keeps at least, on any screen
MAX_TICKS = 30
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
BACKGROUND = {"light": "#FFFFFF", "dark": "#0E1117"}  # Streamlit's page backgrounds

# One problem per line, for every figure in the page: what Plotly drew against what a reader needs.
AUDIT_JS = """([minPlot, maxTicks, minHigh]) => {
  const R = el => { const r = el.getBoundingClientRect();
                    return {l: r.left, t: r.top, r: r.right, b: r.bottom, w: r.width, h: r.height}; };
  const cut = (a, b) => Math.max(0, Math.min(a.r, b.r) - Math.max(a.l, b.l))
                      * Math.max(0, Math.min(a.b, b.b) - Math.max(a.t, b.t));
  // two boxes overlap when they share more than 15% of the smaller one, or a strip more than 4 px deep both ways
  // (a vertical axis title running up into a subtitle); glyph boxes touch at their padding
  const deep = (a, b) => Math.min(a.r, b.r) - Math.max(a.l, b.l) > 4 && Math.min(a.b, b.b) - Math.max(a.t, b.t) > 4;
  const overlap = (a, b) => cut(a, b) > 0.15 * Math.min(a.w * a.h, b.w * b.h) || deep(a, b);
  const shown = el => { const r = el.getBoundingClientRect(); if (!r.width || !r.height) return false;
                        const s = getComputedStyle(el); return s.display !== 'none' && s.visibility !== 'hidden'
                        && parseFloat(s.opacity || '1') > 0 && el.textContent.trim() !== ''; };
  // tick labels Plotly turned (30° or 90°): each label's own box (every line of it) in its own turned frame, where
  // two labels turned alike are both upright; they cross where they share a strip more than 4 px deep both ways
  // (screen boxes of turned text overlap even where the glyphs do not). A name of 3 lines turned on end is 3 lines
  // deep across the axis, not a font's height: twelve of them 22 px apart ran through each other on a phone
  const turn = t => { const m = (t.getAttribute('transform') || '').match(/rotate\\(([-\\d.e]+)/);
                      return m ? parseFloat(m[1]) : 0; };
  const tickOverlap = (a, b) => {
    const th = turn(a);
    if (Math.abs(th) < 1 || Math.abs(turn(b) - th) > 0.5) return overlap(R(a), R(b));
    const ba = a.getBBox(), bb = b.getBBox(), m = a.getScreenCTM().inverse().multiply(b.getScreenCTM());
    const corners = [[bb.x, bb.y], [bb.x + bb.width, bb.y], [bb.x, bb.y + bb.height], [bb.x + bb.width, bb.y + bb.height]];
    const xs = corners.map(([x, y]) => m.a * x + m.c * y + m.e), ys = corners.map(([x, y]) => m.b * x + m.d * y + m.f);
    return Math.min(Math.max(...xs), ba.x + ba.width) - Math.max(Math.min(...xs), ba.x) > 4
        && Math.min(Math.max(...ys), ba.y + ba.height) - Math.max(Math.min(...ys), ba.y) > 4;
  };
  const clip = s => s.length > 40 ? s.slice(0, 39) + '…' : s;
  const xTicks = g => /^xaxis\\d*tick$/.test(g);
  const out = [];
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    const holder = gd.closest('[class*="st-key-"]');
    const key = holder ? (holder.className.match(/st-key-([\\w-]+)/) || [])[1] : '?';
    const fl = gd._fullLayout;
    const fig = key + ' (' + clip(((fl.meta && fl.meta.title) || '').toString()) + ')';
    const problems = [];
    const svg = gd.querySelector('.main-svg');
    const box = R(svg);
    const texts = [];  // {what, group, rect}
    const axes = Object.keys(fl).filter(k => /^[xy]axis\\d*$/.test(k) && fl[k] && fl[k]._id);
    for (const k of axes) {
      const ax = fl[k];
      if (ax.visible === false) continue;
      const labels = Array.from(gd.querySelectorAll('g.' + ax._id + 'tick text')).filter(shown);
      if (ax.showticklabels !== false) {
        if (labels.length < 2 || labels.length > maxTicks)
          problems.push(k + ': ' + labels.length + ' tick labels (want 2..' + maxTicks + ')');
        for (let i = 0; i < labels.length; i++)
          for (let j = i + 1; j < labels.length; j++)
            if (tickOverlap(labels[i], labels[j]))
              problems.push(k + ': tick labels "' + clip(labels[i].textContent) + '" and "'
                            + clip(labels[j].textContent) + '" overlap');
      }
      labels.forEach(t => texts.push({what: k + ' tick "' + clip(t.textContent) + '"', group: k + 'tick', rect: R(t)}));
      const least = ax._id[0] === 'y' ? minHigh : minPlot;
      if (ax._length !== undefined && ax._length < least)
        problems.push(k + ': plotting area ' + Math.round(ax._length) + ' px ' + (ax._id[0] === 'y' ? 'high' : 'wide')
                      + ' (want at least ' + least + ')');
    }
    for (const t of gd._fullData || []) {
      if (t.visible !== true || !t.xaxis) continue;
      for (const [letter, id] of [['x', t.xaxis], ['y', t.yaxis]]) {
        const ax = fl[letter + 'axis' + id.slice(1)];
        if (!ax || ax.type !== 'log' || !t[letter]) continue;
        const [lo, hi] = [Math.min(...ax.range), Math.max(...ax.range)];
        for (const v of Array.from(t[letter])) {
          if (v === null || v === undefined || v === '') continue;
          if (!(v > 0)) { problems.push(ax._name + ': trace "' + clip(String(t.name)) + '" has ' + v + ' on a log axis'); break; }
          const e = Math.log10(v);
          if (e < lo - 1e-6 || e > hi + 1e-6) {
            problems.push(ax._name + ': trace "' + clip(String(t.name)) + '" value ' + v + ' outside the range 10^'
                          + lo.toFixed(2) + '..10^' + hi.toFixed(2));
            break;
          }
        }
      }
    }
    const add = (sel, what, group) => gd.querySelectorAll(sel).forEach((el, i) => {
      if (shown(el)) texts.push({what: what + ' "' + clip(el.textContent) + '"', group: group || what + i, rect: R(el)});
    });
    add('.gtitle', 'title'); add('.gtitle-subtitle', 'subtitle');
    add('.g-xtitle text, .g-ytitle text, [class^="g-x"][class$="title"] text, [class^="g-y"][class$="title"] text',
        'axis title');
    add('.legend .legendtext', 'legend', 'legend');
    add('.annotation-text-g', 'annotation');
    add('.textpoint text, .bartext', 'mark text');
    // the plotting areas (cartesian subplots), in screen px
    const plots = Object.values(fl._plots || {}).filter(sp => sp.xaxis && sp.yaxis).map(sp => ({
      l: box.l + sp.xaxis._offset, r: box.l + sp.xaxis._offset + sp.xaxis._length,
      t: box.t + sp.yaxis._offset, b: box.t + sp.yaxis._offset + sp.yaxis._length}));
    const into = (a, p) => Math.min(a.r, p.r) - Math.max(a.l, p.l) > 1 && Math.min(a.b, p.b) - Math.max(a.t, p.t) > 1;
    const legendBox = gd.querySelector('.legend .bg');
    const heads = [['title', gd.querySelector('.gtitle')], ['subtitle', gd.querySelector('.gtitle-subtitle')],
                   ['legend', legendBox && shown(gd.querySelector('.legend')) ? legendBox : null]];
    for (const [what, el] of heads) {
      if (!el || !R(el).w) continue;
      for (const p of plots) if (into(R(el), p))
        problems.push(what + ' "' + clip(el.textContent || (what === 'legend' ? gd.querySelector('.legend').textContent : ''))
                      + '" overlaps the plotting area');
    }
    // every marker whole inside its plotting area along a log axis: log_range pads the values clear of its ends, so a
    // marker across one reads as cut (on a linear axis from 0, a marker at 0 sits on the axis line by design)
    for (const [id, sp] of Object.entries(fl._plots || {})) {
      const g = sp.xaxis && sp.yaxis && gd.querySelector('.cartesianlayer .subplot.' + id);
      if (!g) continue;
      const p = plots.find(q => q.l === box.l + sp.xaxis._offset && q.t === box.t + sp.yaxis._offset);
      const logX = sp.xaxis.type === 'log', logY = sp.yaxis.type === 'log';
      g.querySelectorAll('.scatterlayer .trace .points path.point').forEach(pt => {
        const r = R(pt);
        if (!r.w || !r.h || !p || parseFloat(getComputedStyle(pt).opacity || '1') === 0) return;
        const out = Math.max(logX ? Math.max(p.l - r.l, r.r - p.r) : 0, logY ? Math.max(p.t - r.t, r.b - p.b) : 0);
        const cd = (pt.closest('.trace') || {}).__data__;  // the trace's calcdata: [0].trace is the trace
        if (out > 0.5) problems.push(id + ': a marker of "' + clip(String((cd && cd[0] && cd[0].trace.name) || ''))
                                     + '" runs ' + out.toFixed(1) + ' px past the plotting area');
      });
    }
    const title = gd.querySelector('.gtitle');
    if (title && shown(title)) {
      const lines = Array.from(title.querySelectorAll('tspan.line'));
      const rows = lines.length ? lines : [title];
      for (const ln of rows) {
        const r = R(ln);
        if (r.w > box.w || r.l < box.l - 1 || r.r > box.r + 1)
          problems.push('title line "' + clip(ln.textContent) + '" is ' + Math.round(r.w) + ' px wide, its figure '
                        + Math.round(box.w) + ' px (' + Math.round(r.l - box.l) + ', ' + Math.round(box.r - r.r)
                        + ' px from its left, right edge)');
      }
      if (rows.length > 1) {  // wrapped: it must not fit on one line here (a desktop figure wastes no line)
        const one = rows.reduce((n, ln) => n + ln.getComputedTextLength(), 0) + 5 * (rows.length - 1);
        const room = box.r - R(rows[0]).l - 8;
        if (one <= room) problems.push('title "' + clip(title.textContent) + '" takes ' + rows.length
                                       + ' lines where one fits (' + Math.round(one) + ' of ' + Math.round(room) + ' px)');
      }
    }
    const sub = gd.querySelector('.gtitle-subtitle');
    if (sub && shown(sub)) {  // wrapped for this width: a subtitle of several lines fills them (not a phone's lines)
      const lines = Array.from(sub.querySelectorAll('tspan.line'));
      const room = box.r - (lines.length ? R(lines[0]).l : box.l) - 8;
      const widest = Math.max(0, ...lines.map(ln => ln.getComputedTextLength()));
      if (lines.length > 1 && widest < 0.6 * room)
        problems.push('subtitle wrapped in ' + lines.length + ' lines of at most ' + Math.round(widest) + ' px in '
                      + Math.round(room) + ' px of room');
    }
    const seen = new Set();
    for (const t of texts) {
      const k = t.what + t.rect.l + ',' + t.rect.t;
      if (seen.has(k)) continue;
      seen.add(k);
      const r = t.rect;
      if (r.l < box.l - 2 || r.r > box.r + 2 || r.t < box.t - 2 || r.b > box.b + 2)
        problems.push(t.what + ' leaves the figure (' + [r.l - box.l, r.t - box.t, box.r - r.r, box.b - r.b]
                      .map(Math.round).join(', ') + ' px from its left, top, right, bottom edge)');
    }
    for (let i = 0; i < texts.length; i++)
      for (let j = i + 1; j < texts.length; j++) {
        const a = texts[i], b = texts[j];
        if (a.group === b.group) continue;  // a legend's entries, an axis's ticks: placed by Plotly (checked above)
        if (overlap(a.rect, b.rect)) problems.push(a.what + ' overlaps ' + b.what);
        // the tick labels of two panels side by side read as one where they touch ("10K100" on a phone)
        else if (xTicks(a.group) && xTicks(b.group) && a.rect.t < b.rect.b && b.rect.t < a.rect.b
                 && a.rect.l < b.rect.r + 3 && b.rect.l < a.rect.r + 3)
          problems.push(a.what + ' touches ' + b.what + ' (under the next panel)');
      }
    if (problems.length) out.push(fig + ': ' + Array.from(new Set(problems)).join('; '));
  }
  return out;
}"""


# One figure at a time in an empty page, as Streamlit draws it: a `st-key-<key>` holder (the audit names figures
# by it), a div as wide as the figure's column, the layout's own height, Plotly's config as sent.
DRAW_JS = """async ([key, spec, config, width, background]) => {
  document.body.style.cssText = 'margin:0;padding:8px;background:' + background;
  for (const gd of document.querySelectorAll('.js-plotly-plot')) Plotly.purge(gd);
  document.body.innerHTML = '';
  const holder = document.createElement('div');
  holder.className = 'st-key-' + key;
  const gd = document.createElement('div');
  gd.style.width = width + 'px';
  holder.appendChild(gd);
  document.body.appendChild(holder);
  const layout = Object.assign({}, spec.layout, {width: width, height: spec.layout.height || 450});
  await Plotly.newPlot(gd, spec.data, layout, config);
  return [gd._fullLayout.width, gd.querySelectorAll('.main-svg').length];
}"""


@pytest.fixture(scope="module")
def canvas(browser):
    """One page with Plotly's JavaScript, per theme; figures are drawn into it one after another."""
    pages = {}
    for theme in ("light", "dark"):
        ctx = browser.new_context(viewport={"width": DESKTOP.viewport, "height": 1000}, color_scheme=theme)
        page = ctx.new_page()
        page.set_content("<!doctype html><html><head><meta charset='utf-8'></head><body></body></html>")
        page.add_script_tag(path=str(PLOTLY_JS))
        pages[theme] = page
    yield pages
    for page in pages.values():
        page.context.close()


def _slide_ready(key: str, spec: dict, config: dict) -> list[str]:
    """What a pasted figure needs (issue 9): a title, a descriptive PNG file name, an opaque white background."""
    out = []
    if not ((spec["layout"].get("title") or {}).get("text") or "").strip():
        out.append(f"{key}: no title")
    png = (config.get("toImageButtonOptions") or {}).get("filename", "")
    if not png.startswith(f"albert-explorer_{key}_"):
        out.append(f"{key}: PNG export named {png!r}")
    if spec["layout"].get("paper_bgcolor") != "#FFFFFF":
        out.append(f"{key}: background {spec['layout'].get('paper_bgcolor')!r}, not opaque white")
    return out


# The bottom margin the server sets (charts.base.bottom_px) against what Plotly's automargin asks for at the foot of
# the drawn figure: its x axes there (pushes at the plot's bottom) and the legend's reserved room below them, as
# plots.doAutoMargin adds them from FRAME's 40 px. Set above that, a figure would keep a strip of empty room.
BOTTOM_JS = """([frame]) => {
  const fl = document.querySelector('.js-plotly-plot')._fullLayout;
  const pushes = Object.entries(fl._pushmargin || {}).filter(([k, v]) => k !== 'base' && v.b && v.b.val === 0);
  const deep = Math.max(0, ...pushes.map(([k, v]) => v.b.size));
  const held = Math.max(0, ...Object.values(fl._reservedMargin || {}).map(r => r.b || 0));
  const settles = Math.round(Math.max(frame, deep)) + Math.max(0, held - Math.max(0, frame - deep));
  return [fl.margin.b, settles, fl._size.b]; }"""
FRAME_BOTTOM_PX = FRAME["margin"]["b"]  # the bottom margin every figure had before bottom_px
# An x axis's title below its tick labels: Plotly sets a title without a standoff at a fixed depth and moves it only
# off the labels it overlaps, so under names turned on end it sat up among them, between two (Overview at 462 px:
# 48 px up; a new user's report, 2026-12-05).
TITLE_BELOW_JS = """() => {
  const gd = document.querySelector('.js-plotly-plot'), fl = gd._fullLayout, out = [];
  const seen = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0
                       && getComputedStyle(el).display !== 'none' && el.textContent.trim() !== ''; };
  for (const k of Object.keys(fl).filter(k => /^xaxis\\d*$/.test(k))) {
    const ax = fl[k];
    if (!ax || !ax._id || ax.side !== 'bottom') continue;
    const title = gd.querySelector('.g-' + ax._id + 'title text');
    const labels = [...gd.querySelectorAll('g.' + ax._id + 'tick text')].filter(seen);
    if (!title || !seen(title) || !labels.length) continue;
    const low = Math.max(...labels.map(l => l.getBoundingClientRect().bottom)), top = title.getBoundingClientRect().top;
    if (top < low - 1) out.push(ax._id + ' title ' + JSON.stringify(title.textContent) + ' ' + (low - top).toFixed(0)
                                + ' px up among its tick labels');
  }
  return out; }"""


def audit_figure(page, key: str, spec: dict, config: dict, screen: Screen, theme: str,
                 min_high: int = MIN_PLOT_PX) -> list[str]:
    """Draw one figure as Streamlit does on `screen` and return the audit's problems with it (min_high: the least
    height of a plotting area, MIN_PLOT_PX unless asked for more)."""
    width = screen.drawn_px(spec)
    drawn_width, svgs = page.evaluate(DRAW_JS, [key, spec, config, width, BACKGROUND[theme]])
    assert svgs and abs(drawn_width - width) < 1, f"{key}: drawn {drawn_width} px wide, want {width}"
    problems = page.evaluate(AUDIT_JS, [MIN_PLOT_PX, MAX_TICKS, min_high])
    problems += [f"{key}: {p}" for p in page.evaluate(TITLE_BELOW_JS)]
    set_b, settles, drawn_b = page.evaluate(BOTTOM_JS, [FRAME_BOTTOM_PX])
    if set_b > settles + 1:
        problems.append(f"{key}: bottom margin set to {set_b} px, drawn {drawn_b:.1f}; its axes and legend take "
                        f"{settles} px (charts.base.bottom_px is past what Plotly settles on)")
    return problems


def _num(cell) -> tuple[float, float]:
    """A table cell's number and how far the figure may be off it: the DataFrame's own value (floats to 1e-9
    relative); an integer past int64 is shown as text with separators ("1,234"), exact."""
    if isinstance(cell, str):
        return float(cell.replace(",", "").replace("%", "").strip()), 0.5
    v = float(cell)
    return v, 1e-9 * max(1.0, abs(v))


def _table(tables: list[pd.DataFrame], *columns: str) -> list[dict]:
    """The rows (column -> cell) of the one table on the tab that has these columns."""
    found = [t for t in tables if set(columns) <= set(t.columns)]
    assert len(found) == 1, f"want one table with columns {columns}, found {len(found)} in {[list(t.columns) for t in tables]}"
    rows = found[0].to_dict("records")
    assert rows, f"the table with columns {columns} is empty"
    return rows


def _same(out: list[str], what: str, drawn, cell: str | None) -> None:
    if cell is None:
        out.append(f"{what}: the figure draws {drawn!r}, the table has no such row")
        return
    v, tol = _num(cell)
    if drawn is None or abs(float(drawn) - v) > tol:
        out.append(f"{what}: the figure draws {drawn!r}, the table beside it {cell!r}")


def _bars_vs_params_table(figs, rows) -> list[str]:
    """Overview/Parameters: the share bars and the count bars against the parameters table, config by config."""
    out: list[str] = []
    by = {r["config"]: r for r in rows}
    for key, col in (("params_shares", "{}_pct"), ("params_components", "{}")):
        for t in figs.get(key) or []:
            part = {"Embedding": "embedding", "Layers": "layers", "Pooler": "pooler"}.get(t["name"])
            if part is None:
                continue
            name = col.format(part if col == "{}_pct" or part != "layers" else "all_layers")
            for x, y in zip(t["x"], t["y"], strict=True):
                cfg = html.unescape(str(x))
                _same(out, f"{key} {cfg!r} {t['name']}", y, by.get(cfg, {}).get(name))
    return out


def _sunburst_vs_breakdown(figs, rows) -> list[str]:
    out: list[str] = []
    (t,) = figs["params_sunburst"]
    value = dict(zip(t["ids"], t["values"], strict=True))
    for r in rows:
        node = f"{r['component']}/{r['sublayer']}/{r['module']}"
        _same(out, f"params_sunburst {node}", value.get(node), r["params"])
    return out


def _sharing_vs_table(figs, rows) -> list[str]:
    out: list[str] = []
    by = {(r["config"], r["sharing"]): r["total"] for r in rows}
    for t in figs["params_sharing"]:  # a config's bars: its legend group
        for x, y in zip(t["x"], t["y"], strict=True):
            _same(out, f"params_sharing {t['group']!r} sharing {x}", y, by.get((t["group"], x)))
    return out


def _marks_vs_max_position(figs, rows) -> list[str]:
    """Memory: the label at each panel's max_position (its invisible point) against the at-max_position table."""
    out: list[str] = []
    traces = figs["memory_activations"]
    names = list(dict.fromkeys(t["meta"] for t in traces if t["meta"] and not str(t["meta"]).startswith("mark ")))
    by = {r["config"]: r for r in rows}
    for t in traces:
        if not str(t["meta"]).startswith("mark "):
            continue
        cfg = names[int(t["meta"].split()[1]) - 1]
        quad, _, total, _ = t["customdata"][0]
        for what, drawn, col in (("max_position", t["x"][0], "max_position"), ("attention bytes", quad,
                                 "attention_seq_len2"), ("activation bytes", total, "activations")):
            _same(out, f"memory_activations {cfg!r} {what}", drawn, by.get(cfg, {}).get(col))
    return out


def _fit_vs_table(figs, rows) -> list[str]:
    out: list[str] = []
    by = {r["config"]: r for r in rows}
    for t in figs["fit_bars"]:  # a config's two bars: its legend group
        col = "max_batch_size" if t["xaxis"] == "x" else "longest_max_position"
        _same(out, f"fit_bars {t['group']!r} {col}", t["y"][0], by.get(t["group"], {}).get(col))
    return out


def _scatter_vs_table(figs, rows) -> list[str]:
    out: list[str] = []
    by = {r["config"]: r for r in rows}
    for t in figs["compute_scatter"]:  # a config's marker: its (escaped) name in its hover text
        cfg = html.unescape(t["text"][0])
        _same(out, f"compute_scatter {cfg!r} params", t["x"][0], by.get(cfg, {}).get("params"))
        _same(out, f"compute_scatter {cfg!r} forward_flops", t["y"][0], by.get(cfg, {}).get("forward_flops"))
    return out


def _paper_vs_table(figs, rows) -> list[str]:
    """The paper's points (and the rings on the configs that are exactly one of its networks) against the rows
    table beside them: each point's exact parameters and Avg, found by its name (Table N: row)."""
    out: list[str] = []
    by = {f"Table {r['table']}: {r['row']}": r for r in rows}
    for key, drawn in figs.items():
        for t in drawn:
            for name, x, y in zip(t["text"], t["x"], t["y"], strict=True):
                n = html.unescape(name)
                _same(out, f"{key} {t['meta']!r} {n!r} params_exact", x, by.get(n, {}).get("params_exact"))
                _same(out, f"{key} {t['meta']!r} {n!r} avg", y, by.get(n, {}).get("avg"))
    return out


# (page, the figures' tab, their keys, the table's tab, the table's columns, the comparison)
PAIRS = (
    ("parameters", "shares", ("params_shares", "params_components"), "table",
     ("config", "embedding_pct", "layers_pct", "pooler_pct", "embedding", "all_layers", "pooler"), _bars_vs_params_table),
    ("parameters", "breakdown", ("params_sunburst",), "breakdown", ("component", "sublayer", "module", "params"),
     _sunburst_vs_breakdown),
    ("parameters", "sharing", ("params_sharing",), "sharing", ("config", "sharing", "total"), _sharing_vs_table),
    ("memory", "activations", ("memory_activations",), "max_position",
     ("config", "max_position", "attention_seq_len2", "activations"), _marks_vs_max_position),
    ("fit", "chart", ("fit_bars",), "table", ("config", "max_batch_size", "longest_max_position"), _fit_vs_table),
    ("compute", "scatter", ("compute_scatter",), "table", ("config", "params", "forward_flops"), _scatter_vs_table),
    ("parameters", "factorization", ("paper_table3",), "factorization", ("table", "row", "params_exact", "avg"),
     _paper_vs_table),
    ("parameters", "sharing", ("paper_table4",), "sharing", ("table", "row", "params_exact", "avg"), _paper_vs_table),
    ("overview", "paper", ("paper_tradeoff",), "paper", ("table", "row", "params_exact", "avg"), _paper_vs_table),
)


FIGURES = {("overview", "presets"): 2, ("parameters", "shares"): 2, ("parameters", "breakdown"): 1,
           ("parameters", "sweep"): 1, ("parameters", "factorization"): 2, ("parameters", "sharing"): 2,
           ("parameters", "cuts"): 1, ("memory", "activations"): 1, ("memory", "variants"): 1,
           ("memory", "training"): 2, ("fit", "chart"): 1, ("compute", "scatter"): 1, ("compute", "breakdown"): 1,
           ("overview", "paper"): 1, ("compute", "paper"): 1, ("overview", "decoders"): 1, ("memory", "decoders"): 2,
           ("compute", "decoders"): 1, ("parameters", "decoders"): 1}
# figures whose plot must keep more than MIN_PLOT_PX on every screen: the paper's scatter, whose 13-entry legend takes a
# row each on a phone (its plot was 222 px high there, under the legend, in a new user's review; 280 px now)
PLOT_PX = {"paper_tradeoff": 260}
CASES = [(v, p) for v in VIEWS for p in v.pages]
SEEN: dict[str, int] = {}  # figures audited, for the count in docs/app.md (printed with -s)
COMPARED: dict[str, int] = {}  # table rows compared with a figure


@pytest.mark.parametrize(("view", "path"), CASES, ids=[f"{v.name}-{p}" for v, p in CASES])
def test_every_figure_reads_right(canvas, view: View, path: str):
    problems: list[str] = []
    figures = 0
    for screen in SCREENS:
        tabs = page_tabs(view.query, path, screen)
        for tab, sent in tabs.items():
            where = f"[{view.name}, {view.theme}] {path} / {tab}"
            assert sent.errors == [], f"{where}: {sent.errors}"
            want = FIGURES.get((path, tab))
            if want is not None:
                assert len(sent.figures) == want, f"{where}: {len(sent.figures)} figures sent, want {want}"
            for key, spec in sent.figures.items():
                problems += [f"{where}: {p}" for p in _slide_ready(key, spec, sent.configs[key])]
                problems += [f"{where} at {screen.viewport} px: {p}"
                             for p in audit_figure(canvas[view.theme], key, spec, sent.configs[key], screen, view.theme,
                                                   PLOT_PX.get(key, MIN_PLOT_PX))]
            figures += len(sent.figures) if screen is DESKTOP else 0
        if screen is PHONE:
            continue
        for page, fig_tab, keys, table_tab, columns, compare in PAIRS:  # the same numbers in figure and table
            if page != path:
                continue
            drawn = {k: traces(tabs[fig_tab].figures[k]) for k in keys}
            rows = _table(tabs[table_tab].tables, *columns)
            problems += [f"[{view.name}] {path} / {fig_tab} against {table_tab}: {m}" for m in compare(drawn, rows)]
            COMPARED[f"{view.name}/{path}/{table_tab}"] = len(rows)
    SEEN[f"{view.name}/{path}"] = figures
    print(f"audit {view.name}/{path}: {figures} figures x {len(SCREENS)} widths, {view.theme}; tables compared: "
          f"{ {k: n for k, n in COMPARED.items() if k.startswith(view.name + '/' + path + '/')} }")
    assert not problems, "\n".join(problems)


MANY_PLOT_PX = 200  # a panel's plotting height with 13 configs at least: 211-218 px drawn (4 configs: 225-252)
# the drawn figure's y axes: name, type, where the range starts, plotting height (px)
Y_AXES_JS = """() => { const fl = document.querySelector('.js-plotly-plot')._fullLayout;
  return Object.keys(fl).filter(k => /^yaxis\\d*$/.test(k) && fl[k] && fl[k]._id)
    .map(k => [k, fl[k].type, fl[k].range[0], fl[k]._length]); }"""


@pytest.mark.parametrize("screen", SCREENS, ids=[s.name for s in SCREENS])
def test_thirteen_configs_keep_readable_panels(canvas, screen: Screen):
    """The most configs a page shows (13, a tester's link): a fixed fraction of the height between rows left the
    activation panels 12 px high (y ticks "10k" over "-10k"), and a phone's FLOPs scatter 110 px, its axis title
    through the subtitle and a marker across its top. Every activation panel (linear and log axes) and the scatter
    keep MANY_PLOT_PX, the linear activation axes start at 0 (bytes are never negative: they started at -196 GiB),
    and the linear panels and the scatter pass the whole audit (no text over another, every marker inside).

    The log panels are held to their heights alone: at 390 px a panel's "10K" x tick meets its neighbour's "100"
    wherever a config's max_position is 8,192 (two configs show it too; not a matter of how many)."""
    sent = {f"memory_activations, {scale}": (page_tabs(f"{MANY}&scale={scale}", "memory", screen, ("activations",)),
                                             "activations", "memory_activations") for scale in ("linear", "log")}
    sent["compute_scatter"] = (page_tabs(MANY, "compute", screen, ("scatter",)), "scatter", "compute_scatter")
    # a new user's review: with eight configs on a phone the factorization plot was 161 px, its axis title through
    # the subtitle; the share sweep's 125 px; each figure with a legend entry per config now grows by its rows
    params = page_tabs(MANY, "parameters", screen, ("sweep", "factorization", "sharing"))
    for tab, key in (("sweep", "params_share_sweep"), ("factorization", "params_factorization"),
                     ("sharing", "params_sharing")):
        sent[key] = (params, tab, key)
    problems: list[str] = []
    for what, (tabs, tab, key) in sent.items():
        spec, config = tabs[tab].figures[key], tabs[tab].configs[key]
        found = audit_figure(canvas["light"], key, spec, config, screen, "light", MANY_PLOT_PX)
        axes = canvas["light"].evaluate(Y_AXES_JS)
        if what.endswith("log"):
            found = [f"{k}: plotting area {h:.0f} px high" for k, _, _, h in axes if h < MANY_PLOT_PX]
        assert len(axes) == (13 if key == "memory_activations" else 1), f"{what}: {len(axes)} y axes"
        found += [f"{k} starts at {lo:.1f}, not 0" for k, kind, lo, _ in axes
                  if key == "memory_activations" and kind == "linear" and lo != 0]
        problems += [f"{what} at {screen.viewport} px: {p}" for p in found]
        print(f"{what} at {screen.viewport} px: plots {sorted({round(h) for *_, h in axes})} px high, "
              f"y from {axes[0][2]:.3g}")
    assert not problems, "\n".join(problems)


# the figure on the page, then the same spec drawn from FRAME's bottom margin: both as Plotly drew them
SETTLED_JS = """async ([spec, config, width, frame]) => {
  const sides = ['l', 'r', 't', 'b'], size = g => sides.map(k => g._fullLayout._size[k]);
  const gd = document.querySelector('.js-plotly-plot');
  const out = {set: sides.map(k => gd._fullLayout.margin[k]), drawn: size(gd),
               turned: [...gd.querySelectorAll('g.xtick text')].some(t => /rotate\\([-\\d.]*[1-9]/.test(
                 t.getAttribute('transform') || ''))};
  const other = document.createElement('div');
  other.style.width = width + 'px';
  document.body.appendChild(other);
  await Plotly.newPlot(other, spec.data, Object.assign({}, spec.layout, {width: width, height: spec.layout.height || 450,
                       margin: Object.assign({}, spec.layout.margin, {b: frame})}), config);
  out.frame = size(other);
  Plotly.purge(other);
  other.remove();
  return out; }"""


def test_a_pages_first_figure_is_drawn_once_and_as_before(canvas):
    """charts.base.bottom_px: on a desktop the first figure of every page in the default view is drawn with the
    margins Plotly settles on from FRAME's 40 px (the same figure), and drawn once: its margins as the server set
    them, so Plotly's automargin grew none and did not draw the figure a second time (every figure was drawn twice).
    The bound counts tick labels upright: where Plotly turns them (Overview's two half-width bar charts) it is drawn
    twice, as before. (On a phone, and in every view, the audit's BOTTOM_JS holds the margin to what Plotly settles
    on.)"""
    screen = DESKTOP
    problems, twice, once = [], [], []
    for path in PAGE_TABS:
        first = PAGE_TABS[path][0]
        sent = page_tabs("", path, screen, (first,))[first]
        for key, spec in sent.figures.items():
            width = screen.drawn_px(spec)
            canvas["light"].evaluate(DRAW_JS, [key, spec, sent.configs[key], width, BACKGROUND["light"]])
            m = canvas["light"].evaluate(SETTLED_JS, [spec, sent.configs[key], width, FRAME_BOTTOM_PX])
            if any(abs(a - b) > 0.5 for a, b in zip(m["drawn"], m["frame"], strict=True)):
                problems.append(f"{path} {key} at {width:.0f} px: margins drawn {m['drawn']}, from FRAME's {m['frame']}")
            if m["turned"]:
                continue
            if any(abs(a - b) > 1 for a, b in zip(m["drawn"], m["set"], strict=True)):
                twice.append(f"{path} {key} at {width:.0f} px: margins set {m['set']}, drawn {m['drawn']}")
            else:
                once.append(key)
    assert not problems, "\n".join(problems)
    assert not twice, "drawn twice (Plotly grew a margin):\n" + "\n".join(twice)
    assert len(once) >= 5, once  # Parameters' two, Memory's, Fit's and Compute's stand upright on a desktop


def test_every_tab_is_known():
    """FIGURES names only tabs that exist (a renamed tab would silently leave the count unchecked)."""
    assert all(tab in PAGE_TABS[page] for page, tab in FIGURES), [k for k in FIGURES if k[1] not in PAGE_TABS[k[0]]]


def test_a_one_character_value_is_never_drawn_on_its_side(canvas):
    """A Fit bar a little shorter than a line: Plotly turned a one-digit value in it by 90 degrees (a new user's run,
    2026-12-05). Drawn in Chromium at a desktop's and a phone's width, every one-character value is upright or
    hidden (uniformtext: shown on hover and in the table), never turned; the multi-digit values are drawn."""
    from charts.base import slide
    from charts.fit import fit_bars

    rows = [dict(config=n, max_batch_size=b, longest_max_position=p, seq_len=512, batch_size=8, needed_bytes=10**9,
                 gpu_bytes=10**10, max_seq_len=512)
            for n, b, p in (("bert-base", 90, 8192), ("albert-xxlarge", 9, 4096), ("bert-large", 8, 512),
                            ("xlm-roberta-large", 7, 9))]
    fig = slide(fit_bars(pd.DataFrame(rows)), "Fit", "one-digit values")
    drawn = {}
    for width in (DESKTOP.viewport - 460, PHONE.viewport - 32):
        canvas["light"].evaluate(DRAW_JS, ["fit_digits", json.loads(fig.to_json()), {}, width, "#fff"])
        drawn[width] = canvas["light"].evaluate("""() => [...document.querySelectorAll('.bartext')].map(t => [
            t.textContent, t.getAttribute('transform') || '', t.getBoundingClientRect().height])""")
    turned = [(w, text, tr) for w, marks in drawn.items() for text, tr, h in marks
              if len(text) == 1 and h > 0 and "rotate" in tr and "scale(0)" not in tr]
    assert not turned, turned
    shown = {text for marks in drawn.values() for text, tr, h in marks if h > 0 and "scale(0)" not in tr}
    assert {"90", "8,192", "4,096"} <= shown, drawn


# four configs of a team's long names (60-63 characters): the sidebar's and three custom compared ones (cN in a link)
LONG_NAMES = ("xlmr-large-proposal-2026q3-shared-ffn-e256-rel-pos-v2-final",
              "albert-base-proposal-2026q3-shared-attn-e128-abs-pos-v3-draft",
              "bert-base-proposal-2026q3-unshared-ffn-e768-rel-pos-v1-baseline",
              "albert-large-proposal-2026q4-shared-all-e128-rope-v5-candidate")
LONG_NAMES_QUERY = (f"preset=xlm-roberta-large&name={LONG_NAMES[0]}&compare=c1,c2,c3"
                    + "".join(f"&c{i}.preset={p}&c{i}.name={n}"
                              for i, (p, n) in enumerate(zip(("albert-base", "bert-base", "albert-large"), LONG_NAMES[1:],
                                                             strict=True), 1)))


@pytest.mark.parametrize("screen", SCREENS, ids=[s.name for s in SCREENS])
def test_long_names_under_overviews_bars_stay_apart(canvas, screen: Screen):
    """issue 52 item 5: four names of 60 characters or more beside the eight BERT and ALBERT presets on Overview's
    first tab. Shown in full (3 lines each) and turned on end, each name was 51 px deep across the axis with its
    neighbours 22 px apart: at 390 px seven pairs of tick labels ran through each other in each of the two bar
    charts (four at 1,400 px, two figures side by side). Each now takes the lines the spacing holds
    (charts.base.name_most), and the audit passes; the hover keeps every name in full (the bars' x)."""
    tab = page_tabs(LONG_NAMES_QUERY, "overview", screen, ("presets",))["presets"]
    assert tab.errors == [] and set(tab.figures) == {"overview_shares", "overview_components"}, (tab.errors, tab.figures)
    problems: list[str] = []
    for key, spec in tab.figures.items():
        assert [html.unescape(x) for x in spec["data"][0]["x"][:4]] == list(LONG_NAMES), key  # the hover's %{x}
        problems += audit_figure(canvas["light"], key, spec, tab.configs[key], screen, "light")
    assert not problems, "\n".join(problems)
