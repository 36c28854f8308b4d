"""Fixtures of the browser suite: one `streamlit run` server and one headless Chromium per test module."""

from __future__ import annotations

import pytest

from .harness import launch_browser, require_chromium, streamlit_server


@pytest.fixture(scope="module")
def server(request):
    """The app, with its warm measurement process only in a module that presses Verify's build and says so
    (`WARM_WORKER = True`): elsewhere it would import torch and transformers beside the tests for nothing."""
    require_chromium()
    with streamlit_server(warm_worker=getattr(request.module, "WARM_WORKER", False)) as (base, _):
        yield base


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch_browser(p)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A fresh browser session per test, 1400 x 1000 (a module needing more, downloads say, defines its own)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    yield pg
    ctx.close()
