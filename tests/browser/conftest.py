"""Fixtures of the browser suite: one `streamlit run` server and one headless Chromium per test worker, shared by the
modules it runs (a module that presses Verify's build starts its own server, with the warm measurement process)."""

from __future__ import annotations

import pytest

from .harness import launch_browser, require_chromium, streamlit_server


@pytest.fixture(scope="session")
def _plain_server():
    """The app without its warm measurement process: a server start imports Streamlit, pandas, Plotly and
    albert_core and warms them (serve.py), a few CPU seconds that each module and each worker paid again before."""
    require_chromium()
    with streamlit_server(warm_worker=False) as (base, _):
        yield base


@pytest.fixture(scope="module")
def server(request):
    """The app, with its warm measurement process only in a module that presses Verify's build and says so
    (`WARM_WORKER = True`), in a server of its own; elsewhere the worker's shared server, without it (it would
    import torch and transformers beside the tests for nothing). Every test opens its own tab (the `page` fixture) or
    context, so its own Streamlit session: nothing a test does reaches the next but the server's caches."""
    if getattr(request.module, "WARM_WORKER", False):
        require_chromium()
        with streamlit_server(warm_worker=True) as (base, _):
            yield base
    else:
        yield request.getfixturevalue("_plain_server")


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch_browser(p)
        yield b
        b.close()


@pytest.fixture(scope="session")
def _shared_context(browser):
    """The browser context the `page` fixture opens its tabs in. A tab is a Streamlit session of its own (its own
    websocket and session state); what the tabs share is Chromium's cache, so it does not fetch, parse and compile
    Streamlit's and Plotly's JavaScript anew for each test: measured on /parameters, four visits each, 5.6 CPU s of
    Chromium per visit in a fresh context, 3.1-4.2 s in a new tab of a used one (docs/testing.md). A test about a
    first visit, another person's browser, a phone, a theme or downloads makes its own context."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    yield ctx
    ctx.close()


@pytest.fixture
def page(_shared_context):
    """A new tab, 1400 x 1000, and so a new Streamlit session (a test needing another size resizes it)."""
    pg = _shared_context.new_page()
    yield pg
    pg.close()
