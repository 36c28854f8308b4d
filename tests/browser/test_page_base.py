"""A page opened by its own link finds the server at once (serve.PageBase): its HTML names the server's base, so
Streamlit's frontend does not first ask /<page>/_stcore/health, get a 404 and try again after a pause. Checked
at the root and under a base URL path (server.baseUrlPath, as behind a proxy), where a wrong base would leave the
page without a connection."""

from __future__ import annotations

import json

import pytest

from .harness import WAIT_MS, WARMED, streamlit_server, wait_until_idle

pytestmark = pytest.mark.browser

BASE_JS = "() => (window.__streamlit || {}).BACKEND_BASE_URL || null"


def visit(browser, url: str) -> tuple[object, list[str]]:
    """Open url in a fresh context until its first chart is drawn; (page, every URL it requested)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    page.goto(url)
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)
    wait_until_idle(page)
    return page, asked


def probes(asked: list[str], page_path: str) -> list[str]:
    return [u for u in asked if f"{page_path}/_stcore/" in u]


def warm(base: str) -> None:
    """Wait for the line the server writes once its warm_up is done (serve.WARM_LINE): from then on a page's HTML
    names Plotly's chunk (serve.preload_links)."""
    import urllib.request

    assert WARMED[base].wait(WAIT_MS / 1000), "the server did not say it finished its warm_up"
    html = urllib.request.urlopen(base + "/memory", timeout=30).read()
    assert b'rel="modulepreload" crossorigin href="./static/js/PlotlyChart.' in html


def plotly_first(asked: list[str], static: str) -> None:
    """serve.preload_links: Plotly's chunk is asked once, from the server's static/js/, before any widget's chunk
    (without the preload the frontend asks for it after the sidebar's widgets: Selectbox, NumberInput, ...)."""
    plotly = [i for i, u in enumerate(asked) if "/PlotlyChart." in u]
    assert len(plotly) == 1 and asked[plotly[0]].startswith(static + "/static/js/PlotlyChart."), plotly
    widgets = [i for i, u in enumerate(asked) if "/static/js/Selectbox." in u or "/static/js/NumberInput." in u]
    assert widgets and plotly[0] < min(widgets)


@pytest.mark.parametrize("path", ["/memory", "/fit"])
def test_a_page_asks_its_server_once(server, browser, path):
    warm(server)
    page, asked = visit(browser, server + path)
    try:
        assert page.evaluate(BASE_JS) == server + "/"
        assert probes(asked, path) == []  # without PageBase: /memory/_stcore/health and .../host-config, both 404
        assert any(u.endswith("/_stcore/health") for u in asked)
        plotly_first(asked, server)
        assert not page.locator('[data-testid="stException"]').count()
        # nothing asked of another host (the tab's icon once came from fonts.gstatic.com, and failed offline)
        assert [u for u in asked if not u.startswith((server, "data:", "blob:"))] == []
    finally:
        page.context.close()


def test_the_root_page_is_left_as_it_was(server, browser):
    page, _ = visit(browser, server + "/")
    try:
        assert page.evaluate(BASE_JS) is None  # nothing to guess at /: the frontend's own answer stands
    finally:
        page.context.close()


def test_under_a_base_url_path_every_page_still_connects(browser):
    with streamlit_server(base_path="albert", warm_worker=False) as (base, _):
        warm(base)
        page, asked = visit(browser, base + "/memory")
        try:
            assert page.evaluate(BASE_JS) == base + "/"
            assert probes(asked, "/albert/memory") == []
            plotly_first(asked, base)
            page.get_by_role("link", name="Fit planner").click()
            page.wait_for_url(base + "/fit")
            page.get_by_role("heading", name="Fit planner").wait_for(timeout=60_000)
            page.wait_for_selector('[data-testid="stMain"] .js-plotly-plot .main-svg', timeout=60_000)
        finally:
            page.context.close()
        page, _ = visit(browser, base)  # the app's root: "albert" is no page, nothing is set
        try:
            assert page.evaluate(BASE_JS) is None
        finally:
            page.context.close()


# widths on either side of the breakpoints that serve.VIEW_JS models: columns stack to 640 px, the sidebar
# beside the main area above 768 px, the main block's wider padding from 864 px
FIRST_VISIT_WIDTHS = [390, 640, 769, 863, 864, 1400]


@pytest.mark.parametrize("width", FIRST_VISIT_WIDTHS)
def test_a_first_visit_runs_the_script_once_with_its_figures_wrapped_for_its_width(server, browser, width):
    """The page's script estimates the view before the websocket opens (serve.VIEW_JS, a cookie); the first run
    wraps the figures for it, the width component measures the same view and reports nothing: one run drew the
    page (window.__aeDrawn), no width report was sent (__aeReports), and every figure is wrapped for the width
    the browser measured (wait_until_idle checks each figure's main_px against __aeView)."""
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    page = ctx.new_page()
    try:
        page.goto(server + "/parameters")
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)
        wait_until_idle(page)
        got = page.evaluate("() => [window.__aeDrawn, window.__aeReports || 0, window.__aeView, window.__aeKnown,"
                            " document.cookie]")
        assert got[:2] == [1, 0], (width, got)
        assert json.loads(got[3]) == got[2], got  # the view the run wrapped for is the one measured
        assert f"ae_view={got[2]['main']}:{int(got[2]['stacked'])}" in got[4]
    finally:
        ctx.close()
