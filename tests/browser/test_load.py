"""Load: one `streamlit run` server, several browser sessions at once, Verify running in others.

Two sessions press Verify together: one builds, the other shows its place in the queue and then builds
by itself; both show results. Meanwhile four more sessions open the other pages: every chart is drawn,
no session shows an exception. A session closed mid-build leaves no build process behind.
"""

from __future__ import annotations

import os
import time

import pytest

from albert_core.params import count_parameters
from albert_core.presets import PRESETS

from .harness import error_blocks, launch_browser, require_chromium, streamlit_server, wait_until_idle

pytestmark = pytest.mark.browser

PRESET = "albert-base"  # measured within the default budget (about 670 MiB estimated of 700)
OTHER_PAGES = ["overview", "parameters", "memory", "fit"]
BUILD = "Build, count and measure"


def _stat(pid: int) -> tuple[str | None, int | None]:
    """(state, starttime) from /proc/<pid>/stat, (None, None) once the pid is gone: the starttime (clock ticks
    after boot) tells one process from another that got its pid later."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[19])
    except (OSError, ValueError, IndexError):
        return None, None


def worker_children(server_pid: int) -> list[int]:
    """Build processes (python -m albert_core.worker) whose parent is the server."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == server_pid and "albert_core.worker" in cmd:
            out.append(int(pid))
    return out


@pytest.fixture(scope="module")
def served():
    require_chromium()
    from playwright.sync_api import sync_playwright

    procs = []
    with streamlit_server(on_start=procs.append) as (base, _), sync_playwright() as p:
        browser = launch_browser(p)
        yield base, browser, procs[0].pid
        browser.close()


def new_page(browser):
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.ae_events = []  # what the page saw happen, for a failure's message: loads and its websocket's ends
    page.on("load", lambda: page.ae_events.append(f"load {page.url}"))
    page.on("websocket", lambda ws: ws.on("close", lambda _: page.ae_events.append(f"websocket closed: {ws.url}")))
    return page


METRICS_JS = "n => document.querySelectorAll('[data-testid=\"stMetricValue\"]').length >= n"


def shown_metrics(page, n: int, timeout_ms: int) -> list[str]:
    """The page's metric values once at least n are drawn (or, at the timeout, those there are)."""
    try:
        page.wait_for_function(METRICS_JS, arg=n, timeout=timeout_ms)
    except Exception:  # noqa: BLE001 - playwright's TimeoutError: the assertion below says what the page showed
        pass
    return [v.inner_text() for v in page.locator('[data-testid="stMetricValue"]').all()]


def open_verify(browser, base: str):
    page = new_page(browser)
    page.goto(f"{base}/verify?preset={PRESET}")
    wait_until_idle(page, 60_000)
    return page


def test_two_verifies_queue_while_other_sessions_load_every_page(served):
    base, browser, _ = served
    first, second = open_verify(browser, base), open_verify(browser, base)
    first.get_by_role("button", name=BUILD).click()
    first.get_by_text("in a separate process", exact=False).wait_for(timeout=60_000)  # the first one builds
    second.get_by_role("button", name=BUILD).click()
    second.get_by_text("place 2 in the queue", exact=False).wait_for(timeout=30_000)  # the second one waits
    assert "starts by itself" in second.inner_text('[data-testid="stMain"]')

    others = []
    for path in OTHER_PAGES:  # while a build runs and another waits
        page = new_page(browser)
        page.goto(f"{base}/{path}")
        others.append((path, page))
    for path, page in others:
        wait_until_idle(page, 90_000)
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=90_000)
        assert error_blocks(page) == [], path
        drawn = page.evaluate("() => document.querySelectorAll('.js-plotly-plot .main-svg').length")
        assert drawn >= 1, path

    total = f"{count_parameters(PRESETS[PRESET]).total:,}"
    for page in (first, second):  # the waiting one started by itself; both show their results
        page.get_by_text("exactly the parameters albert_core counts", exact=False).wait_for(timeout=180_000)
        wait_until_idle(page, 60_000)
        values = shown_metrics(page, 2, 30_000)
        assert values[:2] == [total, total], (values, page.ae_events, page.evaluate(
            "() => [window.__aeReports, window.__aeView]"), page.inner_text('[data-testid="stMain"]')[-1200:])
        assert "Measured (saved tensors)" in page.inner_text('[data-testid="stMain"]')
        assert error_blocks(page) == []
    for _, page in [("first", first), ("second", second), *others]:
        page.context.close()


def test_a_session_closed_mid_build_leaves_nothing_running(served):
    base, browser, server_pid = served
    page = open_verify(browser, base)
    page.get_by_role("button", name=BUILD).click()
    page.get_by_text("in a separate process", exact=False).wait_for(timeout=60_000)
    deadline = time.monotonic() + 30
    while not worker_children(server_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    (child,) = worker_children(server_pid)  # the build process runs
    started = _stat(child)[1]
    page.context.close()  # the user closes the tab
    deadline = time.monotonic() + 60
    while worker_children(server_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert worker_children(server_pid) == []
    # gone, a zombie, or its pid already reused by another process (pid_max is 32,768 here: seen in CI)
    state, start = _stat(child)
    assert start != started or state == "Z", (child, state, start, started)
    again = open_verify(browser, base)  # and the server still serves
    assert error_blocks(again) == []
    again.context.close()


def test_cancel_stops_the_build_and_says_so(served):
    base, browser, server_pid = served
    page = open_verify(browser, base)
    page.get_by_role("button", name=BUILD).click()
    page.get_by_text("in a separate process", exact=False).wait_for(timeout=60_000)
    page.get_by_role("button", name="Cancel").click()
    page.get_by_text("Cancelled.", exact=False).first.wait_for(timeout=60_000)
    wait_until_idle(page, 60_000)
    assert "closed" not in page.inner_text('[data-testid="stMain"]')  # said as the user did it
    assert worker_children(server_pid) == []
    assert page.locator('[data-testid="stException"]').count() == 0
    page.context.close()


def test_a_rerun_during_a_build_does_not_stop_it(served):
    """Streamlit stops a running script run on every rerun (fast reruns); the build goes on and the next run of
    the page shows its result."""
    base, browser, _ = served
    page = open_verify(browser, base)
    page.get_by_role("button", name=BUILD).click()
    page.get_by_text("in a separate process", exact=False).wait_for(timeout=60_000)
    # a rerun while the build runs (its content comes after the build: the sidebar is drawn after the page)
    page.locator('[data-testid="stSidebar"] summary').filter(has_text="Import / export").first.click()
    page.get_by_text("exactly the parameters albert_core counts", exact=False).wait_for(timeout=180_000)
    wait_until_idle(page, 60_000)
    assert "Measured (saved tensors)" in page.inner_text('[data-testid="stMain"]')
    assert error_blocks(page) == []
    page.context.close()
