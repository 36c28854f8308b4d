"""The figure audit's premises, in the real app: the audit (test_figure_audit.py) draws AppTest's figure specs in
plain Chromium, so here, on `streamlit run` in Chromium at the audit's two screens, the width component reports
the audit's widths, each figure is drawn as wide as the audit draws it, and with the very spec (titles wrapped for
that width, the same traces) that AppTest collects for the same view and screen."""

from __future__ import annotations

import pytest
from figure_views import SCREENS, Screen, page_tabs, traces

from .harness import wait_for_figures, wait_until_idle

pytestmark = pytest.mark.browser

QUERY = "compare=bert-base,albert-xxlarge"  # two columns of figures on the overview, one wide figure on Memory
DRAWN_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(d => {
    const holder = d.closest('[class*="st-key-"]');
    const A = v => v == null ? null : (ArrayBuffer.isView(v) ? Array.from(v) : Array.isArray(v) ? v.map(A) : v);
    return {key: (holder.className.match(/st-key-([\\w-]+)/) || [])[1], width: d._fullLayout.width,
            title: d.layout.title.text, subtitle: d.layout.title.subtitle.text, meta: d.layout.meta,
            data: d.data.map(t => ({name: t.name, x: A(t.x), y: A(t.y), customdata: A(t.customdata)}))};
})"""


@pytest.mark.parametrize("screen", SCREENS, ids=[s.name for s in SCREENS])
@pytest.mark.parametrize(("path", "tab", "n"), [("overview", "presets", 2), ("memory", "activations", 1)])
def test_the_app_draws_what_the_audit_draws(server, browser, screen: Screen, path: str, tab: str, n: int):
    ctx = browser.new_context(viewport={"width": screen.viewport, "height": 1000})
    page = ctx.new_page()
    try:
        page.goto(f"{server}/{'' if path == 'overview' else path}?{QUERY}")
        wait_until_idle(page)  # and the figures are wrapped for the width the component reported
        wait_for_figures(page, n)
        assert page.evaluate("window.__aeView") == {"main": screen.main, "stacked": screen.stacked}
        drawn = {f["key"]: f for f in page.evaluate(DRAWN_JS)}
        sent = page_tabs(QUERY, path, screen, (tab,))[tab].figures
        assert set(drawn) == set(sent), (sorted(drawn), sorted(sent))
        for key, spec in sent.items():
            d = drawn[key]
            assert abs(d["width"] - screen.drawn_px(spec)) < 1, f"{key}: drawn {d['width']} px, audit {screen.drawn_px(spec)}"
            assert d["title"] == spec["layout"]["title"]["text"]
            assert d["subtitle"] == spec["layout"]["title"]["subtitle"]["text"]
            assert d["meta"] == spec["layout"]["meta"]
            want = [{k: t[k] for k in ("name", "x", "y", "customdata")} for t in traces(spec)]
            assert d["data"] == want, key
    finally:
        ctx.close()

