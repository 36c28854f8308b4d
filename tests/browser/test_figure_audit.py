"""The figure audit (issue 17): what Plotly drew in the real app, for every figure on every tab of every page, over
stress views, at a desktop and a 390-px phone width, in light and dark.

For each figure it reads the drawn SVG and the figure's `_fullLayout` in the page and checks:
- every cartesian axis that shows tick labels shows 2..30 of them, none overlapping another;
- no text (title, subtitle, axis titles, legend, annotations and panel titles, tick labels, text on the marks)
  overlaps another text or leaves the figure;
- every plotting area keeps a usable size (MIN_PLOT_PX);
- every value drawn on a log axis is positive and inside the axis range.
A failure names the view, the page and tab, the width, the figure and what is wrong.

Bounded time: each (view, page) is one page load; its tabs are clicked in turn, and each tab is audited at the
desktop width, then the viewport is narrowed to the phone's width and it is audited again (Streamlit redraws
the figures at the new width). The theme alternates between the views (the figures are drawn white in both,
theme=None; the dark page around them is checked all the same). The log-axes view opens only the pages that
have a log axis control.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from albert_core.share import PAGE_TABS

from .harness import error_blocks, open_tab, wait_until_idle

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


VIEWS = (
    View("log axes", "compare=bert-base,xlm-roberta-large&scale=log&params_scale=log", "dark",
         ("parameters", "memory", "compute")),
    View("near-identical", "preset=bert-base&compare=c1,c2&c1.preset=bert-base&c1.name=bert-base-ffn3080"
         "&c1.intermediate_dim=3080&c2.preset=bert-base&c2.name=bert-base-ffn3088&c2.intermediate_dim=3088", "light"),
    View("very different sizes", "preset=electra-small-discriminator&compare=albert-xxlarge,bert-xlarge", "dark"),
    View("long name", f"preset=xlm-roberta-large&name={LONG_NAME}&compare=xlm-roberta-large,bert-base", "light"),
    View("six families", "compare=bert-base,roberta-base,deberta-v3-base,ModernBERT-base,electra-base-discriminator",
         "dark"),
    View("extreme", "preset=bert-large&family=bert&hidden_dim=8&num_heads=1&num_layers=192&embedding_dim=8"
         "&compare=bert-base", "light"),  # from tests/test_valid_configs.py: once crashed Parameters
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


def _audit(page, where: str, width: int) -> list[str]:
    page.set_viewport_size({"width": width, "height": 1000})
    page.wait_for_timeout(400)
    page.wait_for_function(SIZED_JS, timeout=30_000)
    page.wait_for_timeout(300)  # the last relayout's text placement
    return [f"{where} at {width} px: {p}" for p in page.evaluate(AUDIT_JS, [MIN_PLOT_PX, MAX_TICKS])]


def _tabs(page) -> list[str]:
    tabs = page.locator('[data-testid="stMain"] [role="tab"]')
    return [tabs.nth(i).inner_text().strip() for i in range(tabs.count())]


# the figures on each tab (the tabs not listed hold tables only, and are not clicked): the audit waits for them
FIGURES = {("overview", "presets"): 2, ("parameters", "shares"): 2, ("parameters", "breakdown"): 1,
           ("parameters", "sweep"): 1, ("parameters", "factorization"): 1, ("parameters", "sharing"): 1,
           ("parameters", "cuts"): 1, ("memory", "activations"): 1, ("memory", "variants"): 1,
           ("memory", "training"): 2, ("fit", "chart"): 1, ("compute", "scatter"): 1, ("compute", "breakdown"): 1}
DRAWN_JS = """n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n
    && Array.from(document.querySelectorAll('.js-plotly-plot')).every(d => d._fullLayout && d.querySelector('.main-svg'))"""
CASES = [(v, p) for v in VIEWS for p in v.pages]
SEEN: dict[str, int] = {}  # figures audited, for the count in docs/app.md (printed with -s)


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
        for i, (label, tab) in enumerate(zip(labels, PAGE_TABS[path], strict=True)):
            want = FIGURES.get((path, tab), 0)
            if not want:
                continue
            if i:
                page.set_viewport_size({"width": DESKTOP, "height": 1000})
                open_tab(page, label)
            page.wait_for_function(DRAWN_JS, arg=want, timeout=60_000)
            n = page.locator(".js-plotly-plot").count()
            assert n == want, f"{view.name}, {path} / {label}: {n} figures drawn, want {want}"
            figures += n
            where = f"[{view.name}, {view.theme}] {path} / {label}"
            for width in (DESKTOP, PHONE):
                problems += _audit(page, where, width)
        SEEN[f"{view.name}/{path}"] = figures
        print(f"audit {view.name}/{path}: {figures} figures x 2 widths, {view.theme}")
        assert not problems, "\n".join(problems)
    finally:
        ctx.close()
