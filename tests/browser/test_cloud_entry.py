"""The Community Cloud entry (cloud/streamlit_app.py, issue 56) serves the app that serve.py serves: started as Cloud
starts it (from the repository's root, with the options Cloud sets over config.toml), its server warms up, its pages
carry serve.PageBase's script, Parameters draws, and Verify measures in the warm measurement process."""

from __future__ import annotations

import urllib.request

import pytest

from .harness import (
    CLOUD_FLAGS,
    ROOT,
    WAIT_MS,
    WARMED,
    error_blocks,
    require_chromium,
    streamlit_server,
    wait_for_figures,
    wait_until_idle,
)

pytestmark = pytest.mark.browser
BUILD = "Build, count and measure"


def test_the_cloud_entry_serves_the_app_and_verify_measures(browser, tmp_path):
    require_chromium()
    lines: list[str] = []
    with streamlit_server(script=ROOT / "cloud" / "streamlit_app.py", cwd=ROOT, flags=CLOUD_FLAGS,
                          on_line=lines.append) as (base, _):
        assert WARMED[base].wait(120), "".join(lines[-30:])  # serve.warm_up ran: the lifespan is serve.py's
        with urllib.request.urlopen(f"{base}/verify", timeout=30) as r:
            assert b"BACKEND_BASE_URL" in r.read()  # serve.PageBase's script is in the page
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        page.goto(f"{base}/parameters")
        wait_for_figures(page, 1)
        assert error_blocks(page) == []
        page.goto(f"{base}/verify?preset=bert-base&verify_batch=2&verify_seq_len=64")
        wait_until_idle(page, WAIT_MS)
        page.get_by_role("button", name=BUILD).click()
        page.get_by_text("exactly the parameters albert_core counts", exact=False).wait_for(timeout=180_000)
        wait_until_idle(page, WAIT_MS)
        main = page.inner_text('[data-testid="stMain"]')
        assert "the warm measurement process, its build 1" in main and error_blocks(page) == []
        assert "CUDA build" not in main  # this machine's torch is the CPU build: nothing to say
        page.context.close()
