"""The figure audit (issue 17): what Plotly drew in the real app, for every figure on every tab of every page, over
stress views, at a desktop and a 390-px phone width, in light and dark.

For each figure it reads the drawn SVG and the figure's `_fullLayout` in the page and checks:
- every cartesian axis that shows tick labels shows 2..30 of them, none overlapping another;
- no text (title, subtitle, axis titles, legend, annotations and panel titles, tick labels, text on the marks)
  overlaps another text or leaves the figure;
- every plotting area keeps a usable size (MIN_PLOT_PX);
- every value drawn on a log axis is positive and inside the axis range;
- every line of the title is narrower than the figure and inside it, and the title keeps one line where it fits
  on one (the desktop width); a subtitle of several lines fills at least 60% of the width (wrapped for the
  width it is drawn at, not for a phone's); the title, the subtitle and the legend stay off every plotting area;
- where a page shows a table beside a figure (on its tab, or on the page's table tab in the views with
  tables=True: all six), the numbers the figure
  draws (its traces in the plotly div) equal the table's (the data grid's rendered cells) for every config.
A failure names the view, the page and tab, the width, the figure and what is wrong.

Bounded time: each (view, page) is one page load; its tabs are clicked in turn, and each tab is audited at the
desktop width, then the viewport is narrowed to the phone's width and it is audited again (Streamlit redraws
the figures at the new width). The theme alternates between the views (the figures are drawn white in both,
theme=None; the dark page around them is checked all the same). The log-axes view opens only the pages that
have a log axis control.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import pytest

from albert_core.share import PAGE_TABS

from .harness import error_blocks, open_tab, resize, wait_for_figures, wait_until_idle

pytestmark = pytest.mark.browser

DESKTOP, PHONE = 1400, 390
MIN_PLOT_PX = 100  # the height (and width) a plotting area keeps at least, on any screen
MAX_TICKS = 30
LONG_NAME = "xlmr-large-proposal-2026q3-shared-ffn-e256-rel-pos-v2-final"  # 60 characters, as a team writes them


@dataclass(frozen=True)
class View:
    name: str
    query: str  # the link's query string (albert_core.share)
    theme: str  # "light" | "dark"
    pages: tuple[str, ...] = tuple(PAGE_TABS)
    tables: bool = False  # also open the table tabs to compare them with the figures of another tab (bounded time:
    # a table on the figure's own tab is compared in every view)


VIEWS = (
    View("log axes", "compare=bert-base,xlm-roberta-large&scale=log&params_scale=log", "dark",
         ("parameters", "memory", "compute"), tables=True),
    View("near-identical", "preset=bert-base&compare=c1,c2&c1.preset=bert-base&c1.name=bert-base-ffn3080"
         "&c1.intermediate_dim=3080&c2.preset=bert-base&c2.name=bert-base-ffn3088&c2.intermediate_dim=3088", "light",
         tables=True),
    View("very different sizes", "preset=electra-small-discriminator&compare=albert-xxlarge,bert-xlarge", "dark", tables=True),
    View("long name", f"preset=xlm-roberta-large&name={LONG_NAME}&compare=xlm-roberta-large,bert-base", "light",
         tables=True),
    View("six families", "compare=bert-base,roberta-base,deberta-v3-base,ModernBERT-base,electra-base-discriminator",
         "dark", tables=True),
    View("extreme", "preset=bert-large&family=bert&hidden_dim=8&num_heads=1&num_layers=192&embedding_dim=8"
         "&compare=bert-base", "light", tables=True),  # from tests/test_valid_configs.py: once crashed Parameters
)

# One problem per line, for every figure in the page: what Plotly drew against what a reader needs.
AUDIT_JS = """([minPlot, maxTicks]) => {
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
  // tick labels Plotly turned (30° or 90°): parallel strips from their anchors; they cross when the anchors lie
  // closer than the font's height across the strips and their lengths meet along them (screen boxes of turned
  // text overlap even where the glyphs do not)
  const turn = t => { const m = (t.getAttribute('transform') || '').match(/rotate\\(([-\\d.e]+)/);
                      return m ? parseFloat(m[1]) : 0; };
  const anchor = t => { const m = (t.getAttribute('transform') || '').match(/translate\\(([-\\d.e]+),\\s*([-\\d.e]+)/);
                        return (m ? parseFloat(m[1]) : 0) + parseFloat(t.getAttribute('x') || '0'); };
  const tickOverlap = (a, b) => {
    const th = turn(a);
    if (Math.abs(th) < 1 || Math.abs(turn(b) - th) > 0.5) return overlap(R(a), R(b));
    const rad = th * Math.PI / 180, d = anchor(b) - anchor(a);
    const size = parseFloat(getComputedStyle(a).fontSize) || 12;
    if (Math.abs(d * Math.sin(rad)) >= 0.8 * size) return false;
    const span = (t, s) => { const n = t.getComputedTextLength(), c = s * Math.cos(rad);
                             return t.getAttribute('text-anchor') === 'end' ? [c - n, c] : [c, c + n]; };
    const [a0, a1] = span(a, anchor(a)), [b0, b1] = span(b, anchor(b));
    return Math.min(a1, b1) - Math.max(a0, b0) > 0;
  };
  const clip = s => s.length > 40 ? s.slice(0, 39) + '…' : s;
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
      if (ax._length !== undefined && ax._length < minPlot)
        problems.push(k + ': plotting area ' + Math.round(ax._length) + ' px ' + (ax._id[0] === 'y' ? 'high' : 'wide')
                      + ' (want at least ' + minPlot + ')');
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
      }
    if (problems.length) out.push(fig + ': ' + Array.from(new Set(problems)).join('; '));
  }
  return out;
}"""

# the figures have their width from their container: wait until every one is drawn at it
SIZED_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).every(gd => gd._fullLayout
    && gd.querySelector('.main-svg') && Math.abs(gd._fullLayout.width - gd.getBoundingClientRect().width) < 3)"""


# What Plotly has drawn: a rerun (the new width's titles) redraws every figure, its ticks and texts a moment
# after its layout; read a figure once its drawing has stayed the same for three looks 250 ms apart
DRAWING_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(gd => [
    gd._fullLayout && gd._fullLayout.width, gd.querySelectorAll('text').length,
    (gd.querySelector('.gtitle') || {}).textContent, (gd.querySelector('.gtitle-subtitle') || {}).textContent,
    gd.querySelectorAll('.xtick, .ytick').length].join('|')).join('//')"""


def _settled(page, js: str, every_ms: int = 250, looks: int = 3, timeout_s: float = 30.0):
    """What `js` reads in the page once it has read the same `looks` times in a row, every_ms apart."""
    import time

    seen, same, deadline = None, 0, time.monotonic() + timeout_s
    while same < looks and time.monotonic() < deadline:
        page.wait_for_timeout(every_ms)
        now = page.evaluate(js)
        same = same + 1 if now == seen else 0
        seen = now
    return seen


def _wait_drawn(page) -> None:
    _settled(page, DRAWING_JS)


def _audit(page, where: str, width: int) -> list[str]:
    resize(page, width)  # and the run the new width starts has rewrapped the titles
    page.wait_for_function(SIZED_JS, timeout=30_000)
    _wait_drawn(page)
    return [f"{where} at {width} px: {p}" for p in page.evaluate(AUDIT_JS, [MIN_PLOT_PX, MAX_TICKS])]


def _stable_rows(page, spec):
    """The table's rows once the grid has drawn the same cells three looks in a row, 300 ms apart (a rerun, as
    after a resize, redraws the grid row by row)."""
    return _table(_settled(page, TABLES_JS, 300), *spec)


def _tabs(page) -> list[str]:
    tabs = page.locator('[data-testid="stMain"] [role="tab"]')
    return [tabs.nth(i).inner_text().strip() for i in range(tabs.count())]


# ---- a table beside a figure: the same numbers -------------------------------------------------------------
# the figure's traces as the page holds them (the plotly div's data), and the data grids' rendered cells (the
# grid draws on a canvas; its cells are also in the DOM, in a table for screen readers)
FIG_DATA_JS = """key => { const gd = document.querySelector('.st-key-' + key + ' .js-plotly-plot'); if (!gd) return null;
  const A = v => v == null ? null : Array.from(v);
  return gd.data.map(t => ({name: t.name, meta: t.meta, group: t.legendgroup, text: A(t.text), xaxis: t.xaxis || 'x',
                            x: A(t.x), y: A(t.y), ids: A(t.ids), values: A(t.values), customdata: A(t.customdata)})); }"""
TABLES_JS = """async () => {  // every row: the grid renders the rows in view, so it is scrolled through them
  const tick = () => new Promise(r => setTimeout(r, 100));
  const out = [];
  for (const df of document.querySelectorAll('[data-testid="stMain"] [data-testid="stDataFrame"]')) {
    const grid = () => df.querySelector('table[role="grid"]');
    if (!grid()) continue;
    const head = Array.from(grid().querySelectorAll('thead th')).map(e => e.textContent);
    const total = parseInt(grid().getAttribute('aria-rowcount')) - 1;
    const rows = new Map();
    const grab = () => grid().querySelectorAll('tbody tr').forEach(r => rows.set(parseInt(r.getAttribute('aria-rowindex')),
      Array.from(r.querySelectorAll('td')).map(e => e.textContent)));
    grab();
    const sc = df.querySelector('.dvn-scroller');
    const step = sc ? Math.max(40, sc.clientHeight - 80) : 0;
    for (let y = step; sc && rows.size < total && y < sc.scrollHeight + step; y += step) {
      sc.scrollTop = y;
      for (let i = 0, n = rows.size; i < 50 && rows.size === n; i++) { await tick(); grab(); }  // until it re-renders
    }
    if (sc) sc.scrollTop = 0;
    out.push({head, total, rows: Array.from(rows.keys()).sort((a, b) => a - b).map(k => rows.get(k))});
  }
  return out;
}"""
TABLE_READY_JS = """cols => Array.from(document.querySelectorAll('[data-testid="stMain"] [data-testid="stDataFrame"] table[role="grid"]'))
  .some(t => t.querySelector('tbody tr') && cols.every(c => Array.from(t.querySelectorAll('thead th')).some(e => e.textContent === c)))"""
TABLE_WIDTH = 4000  # px: the data grid renders only the cells in view


def _num(text: str) -> tuple[float, float]:
    """A cell's number and how far its printed digits let it be off (45.82% -> 45.82, 0.005)."""
    t = text.replace(",", "").replace("%", "").strip()
    decimals = len(t.split(".")[1]) if "." in t and "e" not in t.lower() else 0
    return float(t), (0.5 * 10 ** -decimals if decimals else 0.5) + 1e-9


def _table(tables: list[dict], *columns: str) -> list[dict[str, str]]:
    """The rows (column -> cell text) of the one rendered table that has these columns."""
    found = [t for t in tables if set(columns) <= set(t["head"])]
    assert len(found) == 1, f"want one table with columns {columns}, found {len(found)} in {[t['head'] for t in tables]}"
    rows = [dict(zip(found[0]["head"], r, strict=False)) for r in found[0]["rows"]]
    assert rows and len(rows) == found[0]["total"], \
        f"the table with columns {columns}: {len(rows)} rows read of its {found[0]['total']}"
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
                cfg = html.unescape(x)
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
)


# the figures on each tab (the tabs not listed hold tables only, and are not clicked): the audit waits for them
FIGURES = {("overview", "presets"): 2, ("parameters", "shares"): 2, ("parameters", "breakdown"): 1,
           ("parameters", "sweep"): 1, ("parameters", "factorization"): 1, ("parameters", "sharing"): 1,
           ("parameters", "cuts"): 1, ("memory", "activations"): 1, ("memory", "variants"): 1,
           ("memory", "training"): 2, ("fit", "chart"): 1, ("compute", "scatter"): 1, ("compute", "breakdown"): 1}
CASES = [(v, p) for v in VIEWS for p in v.pages]
SEEN: dict[str, int] = {}  # figures audited, for the count in docs/app.md (printed with -s)
COMPARED: dict[str, int] = {}  # table rows compared with a figure


@pytest.mark.parametrize(("view", "path"), CASES, ids=[f"{v.name}-{p}" for v, p in CASES])
def test_every_figure_reads_right(server, browser, view, path):
    ctx = browser.new_context(viewport={"width": DESKTOP, "height": 1000}, color_scheme=view.theme)
    page = ctx.new_page()
    try:
        page.goto(f"{server}/{'' if path == 'overview' else path}?{view.query}")
        wait_until_idle(page)
        assert error_blocks(page) == [], f"{view.name}, {path}: {error_blocks(page)}"
        problems: list[str] = []
        figures = 0
        labels = _tabs(page)
        assert len(labels) == len(PAGE_TABS[path]), f"{path}: tabs {labels}"
        drawn: dict[str, list] = {}  # the figures a table is compared with: their traces
        pairs = [p for p in PAIRS if p[0] == path]
        for i, (label, tab) in enumerate(zip(labels, PAGE_TABS[path], strict=True)):
            want = FIGURES.get((path, tab), 0)
            tables = [p for p in pairs if p[3] == tab and (p[1] == tab or view.tables)]
            if not want and not tables:
                continue
            if i:
                resize(page, DESKTOP)
                open_tab(page, label)
            where = f"[{view.name}, {view.theme}] {path} / {label}"
            if want:
                wait_for_figures(page, want)
                n = page.locator(".js-plotly-plot").count()
                assert n == want, f"{view.name}, {path} / {label}: {n} figures drawn, want {want}"
                figures += n
                for p in pairs:
                    if p[1] == tab:
                        drawn |= {k: page.evaluate(FIG_DATA_JS, k) for k in p[2]}
                for width in (DESKTOP, PHONE):
                    problems += _audit(page, where, width)
            for p in tables:  # the table, on a screen wide enough for the grid to render every column's cells
                assert all(drawn.get(k) for k in p[2]), f"{where}: figures {p[2]} not drawn before their table"
                resize(page, TABLE_WIDTH)
                page.wait_for_function(TABLE_READY_JS, arg=list(p[4]), timeout=30_000)
                rows = _stable_rows(page, p[4])
                problems += [f"{where}: {m}" for m in p[5](drawn, rows)]
                COMPARED[f"{view.name}/{path}/{tab}"] = len(rows)
        SEEN[f"{view.name}/{path}"] = figures
        print(f"audit {view.name}/{path}: {figures} figures x 2 widths, {view.theme}; tables compared: "
              f"{ {k: n for k, n in COMPARED.items() if k.startswith(view.name + '/' + path + '/')} }")
        assert not problems, "\n".join(problems)
    finally:
        ctx.close()
