"""Run the real app (`streamlit run serve.py`, as the README does) on a free port and drive it in Chromium.

Shared by the browser tests and benchmarks/bench_browser.py.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
# serve.WARM_LINE: the server's log line once its warm_up is done; WARMED[base URL] is set when the server says it
WARM_LINE = "ALBERT Explorer: warmed up"
WARMED: dict[str, threading.Event] = {}
# the options Streamlit Community Cloud sets over any config.toml (Streamlit's docs, "Status and limitations")
CLOUD_FLAGS = ("--server.runOnSave", "true", "--client.showErrorDetails", "false",
               "--server.enableXsrfProtection", "true", "--runner.fastReruns", "true")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def streamlit_server(timeout: float = 60.0, env: dict[str, str] | None = None, on_start=None,
                     script: Path = ROOT / "serve.py", base_path: str = "", on_line=None,
                     warm_worker: bool | None = None, cwd: Path | None = None, flags: tuple[str, ...] = ()):
    """Yield (base_url, started_at) for `streamlit run script` (this app by default) on 127.0.0.1, run in the
    script's folder (or cwd); stopped on exit. flags: more command-line options (Community Cloud's, test_cloud_entry).

    base_path: served under it (server.baseUrlPath, as behind a proxy), e.g. "albert": base_url ends with "/albert".

    env: extra environment variables for the server; on_start(proc): called with the Popen right after
    the start (the memory benchmark reads its pid); on_line(line): called with each line the server writes
    (stdout and stderr), on a thread of its own.

    warm_worker: False turns the app's warm measurement process off (ALBERT_EXPLORER_WARM_WORKER=0), for tests that
    never press Verify's build: it would import torch and transformers beside them for nothing (about 5 s of CPU per
    server); None leaves the app's default (on), which tests/browser/test_load.py and the benchmarks measure.
    """
    port = free_port()
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
        "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none", *(["--server.baseUrlPath", base_path] if base_path else []), *flags,
    ]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd or script.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **({"ALBERT_EXPLORER_WARM_WORKER": "0"} if warm_worker is False else {}),
                                 **(env or {})})
    if on_start is not None:
        on_start(proc)
    base = f"http://127.0.0.1:{port}" + (f"/{base_path}" if base_path else "")
    ready = threading.Event()
    said: list[str] = []
    warmed = WARMED[base] = threading.Event()

    def read() -> None:  # the server's own words: it says where to view the app once it listens
        for line in proc.stdout:
            if len(said) < 200:
                said.append(line)
            if WARM_LINE in line:
                warmed.set()
            if on_line is not None:
                on_line(line)
            if f":{port}" in line and "URL" in line:
                ready.set()
        ready.set()  # the output ended: the process exited

    threading.Thread(target=read, daemon=True).start()
    try:
        if not ready.wait(timeout) or proc.poll() is not None:
            raise RuntimeError(f"streamlit run {script.name} did not say it serves on port {port} in {timeout:.0f} s "
                               f"(exit code {proc.poll()}):\n{''.join(said)[-2000:]}")
        with urllib.request.urlopen(base + "/_stcore/health", timeout=30) as r:
            assert r.status == 200, f"/_stcore/health answered {r.status}"
        yield base, started
    finally:
        WARMED.pop(base, None)
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def launch_browser(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


# how long a wait for a signal may last: a bound, not a guess at how long the app takes (a wait ends on its signal,
# and without one fails with what the page showed); the first visit after a server start, on a 2-core machine whose
# other test worker is busy, imports the pages' modules and starts the warm measurement process beside it
WAIT_MS = 60_000
# how often a wait reads its signal: Playwright's default re-reads it on every animation frame, which keeps a
# waiting page drawing 60 frames a second; every 100 ms is soon enough for a signal and measured 6% less CPU of the
# whole machine (tests/browser/test_design_review.py alone, twice each way: 94.0 and 96.7 -> 88.3 and 90.8 CPU s)
POLL_MS = 100


def wait_until_idle(page, timeout_ms: int = WAIT_MS) -> None:
    """Wait until the app has finished drawing: no script run under way, a run of this session has drawn the whole
    page (the width component at its foot counts them: window.__aeDrawn), no width report is on its way
    (__aePending) and every figure is wrapped for the width reported (FIGURES_WRAPPED_JS). Signals the page
    sets, never a time."""
    _signal(page, IDLE_JS, None, timeout_ms, "the app to be idle with every figure wrapped")


# What the page shows of each signal the waits read: a wait that does not see its signal fails with this
STATE_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    const main = document.querySelector('[data-testid="stMain"]');
    return {
        url: location.href,
        script_state: app && app.getAttribute('data-test-script-state'),
        running_icon: !!document.querySelector('[data-testid="stStatusWidgetRunningIcon"]'),
        title: (document.querySelector('[data-testid="stMain"] h1') || {}).textContent || null,
        skeletons: document.querySelectorAll('[data-testid="stSkeleton"], [data-testid="stAppSkeleton"]').length,
        width_component: !!document.querySelector('.st-key-_figure_width'),
        drawn: window.__aeDrawn || 0, pending: window.__aePending || null,
        view: window.__aeView || null, known: window.__aeKnown || null,
        figures: Array.from(document.querySelectorAll('.js-plotly-plot')).map(d => {
            const m = d._fullLayout && d._fullLayout.meta;
            return m ? m.main_px : (d._fullLayout ? 'no meta' : 'not drawn'); }),
        errors: Array.from(document.querySelectorAll('[data-testid="stException"], [data-testid="stAlertContentError"]'))
            .map(e => e.innerText.slice(0, 300)),
        text: ((main || document.body).innerText || '').slice(0, 600),
    };
}"""


def page_state(page) -> dict:
    """Each signal's value on the page now, and the start of what it shows (for a failed wait's message)."""
    try:
        return page.evaluate(STATE_JS)
    except Exception as e:  # the page itself is gone (crashed, closed): say so
        return {"page": f"could not be read: {e}"}


def _signal(page, js: str, arg, timeout_ms: int, what: str) -> None:
    """page.wait_for_function(js, arg): the signal the app emits; without it, fail with what the page showed."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(js, arg=arg, timeout=timeout_ms, polling=POLL_MS)
    except PlaywrightTimeout:
        state = page_state(page)
        raise AssertionError(f"waited {timeout_ms / 1000:.0f} s for {what}; the page showed: {state}") from None


# The app's figure titles are wrapped for the width the browser reports (ui/plots.py): a page is settled once
# that width is reported and every titled figure has been wrapped for it (the run that follows the report has
# redrawn it; after a resize too). Pages without the width component (another app) are settled once idle.
FIGURES_WRAPPED_JS = """() => {
    if (!document.querySelector('.st-key-_figure_width')) return true;
    if (!window.__aeDrawn || window.__aePending) return false;  // no run drew it all yet; a report on its way
    if (!window.__aeView || window.__aeKnown !== JSON.stringify(window.__aeView)) return false;  // not applied yet
    const app = document.querySelector('[data-testid="stApp"]');
    if (app.getAttribute('data-test-script-state') === 'running') return false;
    return Array.from(document.querySelectorAll('.js-plotly-plot')).every(d => {
        const m = d._fullLayout && d._fullLayout.meta;
        return !m || m.pad === undefined || m.main_px === window.__aeView.main;
    });
}"""
IDLE_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') === 'running') return false;
    if (document.querySelector('[data-testid="stStatusWidgetRunningIcon"]')) return false;
    if (!document.querySelector('[data-testid="stMain"] h1')) return false;
    // an element whose code loads lazily (a metric, a chart, a data grid) shows a skeleton until it is drawn
    if (document.querySelector('[data-testid="stSkeleton"], [data-testid="stAppSkeleton"]')) return false;
    return (""" + FIGURES_WRAPPED_JS + """)();
}"""
DRAWN_RUNS_JS = "() => window.__aeDrawn || 0"


def rerun(page, action, timeout_ms: int = WAIT_MS) -> None:
    """Do action() (a key press, a click, an upload) and wait until the script run it causes has drawn the page.

    The app counts the runs that drew the whole page (window.__aeDrawn, set by the width component at the page's
    foot with each run's number): wait for one more than before the action, then for the app to be idle. (Counting
    the changes of stApp's running state missed short runs: that state can come and go within one React update.)
    """
    before = page.evaluate(DRAWN_RUNS_JS)
    action()
    _signal(page, "n => (window.__aeDrawn || 0) > n", before, timeout_ms, f"a script run to draw the page after run {before}")
    wait_until_idle(page, timeout_ms)


# two animation frames: the browser has laid the page out at its new size and delivered the ResizeObservers'
# callbacks (the width component's sets __aePending until it has reported or found the width unchanged)
FRAMES_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"


def resize(page, width: int, height: int = 1000) -> None:
    """Set the viewport and wait until the app has rewrapped its figures for it: the width component reports
    the new width once the app is idle, and the run it starts redraws them (ui/plots.py)."""
    page.set_viewport_size({"width": width, "height": height})
    page.evaluate(FRAMES_JS)
    wait_until_idle(page)


def error_blocks(page) -> list[str]:
    """Texts of exception and error blocks on the page (there must be none in a healthy view)."""
    sel = '[data-testid="stException"], [data-testid="stAlertContentError"]'
    return [e.inner_text() for e in page.query_selector_all(sel)]


def open_tab(page, label: str) -> None:
    """Click a page's tab by its label and wait for the run it starts: ui/sections.lazy_tabs draws only the open
    tab, so its content arrives with that run; then wait for its charts and data grids, if any, to be drawn (the
    grid's JavaScript may load only now)."""
    tab = page.locator('[data-testid="stMain"] [role="tab"]').filter(has_text=label).first
    try:
        rerun(page, tab.click, timeout_ms=20_000)
    except AssertionError:  # no finished run seen: accept the tab only if it is open and the app idle
        assert tab.get_attribute("aria-selected") == "true", f"tab {label!r} did not open"
        wait_until_idle(page)
    page.wait_for_function("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                           ".every(d => d.querySelector('.main-svg')) && Array.from(document.querySelectorAll("
                           "'[data-testid=\"stMain\"] [data-testid=\"stDataFrame\"]'))"
                           ".every(d => d.textContent.trim().length > 0)", timeout=30_000, polling=POLL_MS)


def open_section(page, label: str) -> None:
    """Open a sidebar section ("Model fields", "More fields", "Import / export") unless it is open: a closed
    section's widgets are not drawn at all (ui/sidebar._section). Clicking it starts the run that draws them;
    wait for that content, not for a counted run: this run is short, and its running state can come and go
    within one React update without ever reaching the DOM (seen in a fresh clone: no run counted in 30 s)."""
    summary = page.locator('[data-testid="stSidebar"] summary').filter(has_text=label).first
    details = summary.locator("xpath=..")
    if details.get_attribute("open") is None:
        summary.click()
    details.locator(':scope > [data-testid="stExpanderDetails"] [data-testid="stElementContainer"]').first.wait_for(
        timeout=30_000)
    wait_until_idle(page)


def require_chromium() -> None:
    """Fail under CI (scripts/test.sh installs Debian's chromium), skip elsewhere, when Chromium is missing."""
    import pytest

    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: scripts/test.sh installs Debian's chromium")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")


# Plotly figures drawn: plots with a layout and an SVG. Count plots, not `.main-svg`: Plotly draws two of those
# per plot (the plot and its hover layer), so ">= n main-svg" holds with half the plots drawn (CI, 2026-12-01:
# "1 figures drawn, want 2").
FIGURES_DRAWN_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .filter(d => d._fullLayout && d.querySelector('.main-svg')).length"""


def wait_for_figures(page, n: int, timeout_ms: int = 60_000) -> None:
    """Wait until at least n Plotly figures are drawn and none is half drawn. Streamlit loads its Plotly
    component lazily: in a session that opened on a tab without charts, the first chart tab's run can finish
    before any `.js-plotly-plot` exists (CI, 2026-12-01: a shared link opened on its table tab read no charts)."""
    page.wait_for_function(
        f"n => ({FIGURES_DRAWN_JS})() >= n && Array.from(document.querySelectorAll('.js-plotly-plot'))"
        ".every(d => d._fullLayout && d.querySelector('.main-svg'))", arg=n, timeout=timeout_ms, polling=POLL_MS)


def grid_text(page, grid, *wanted: str, timeout_ms: int = 30_000) -> str:
    """A data grid's text once it holds every string in `wanted` (or, at the timeout, what it holds).

    The grid draws its cells only once it is on screen (it may sit below the fold in a small viewport), so
    scroll it into view. Its accessible text is a copy of the rows drawn on its canvas, made after them: in CI
    it was read once without the grid's first row (the edited config, while the URL and the link held the
    edited view), so wait for the strings looked for (the browser checks at each frame), not just for some text."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    grid.scroll_into_view_if_needed()
    try:
        page.wait_for_function("([el, wanted]) => { const t = el.textContent || ''; "
                               "return t.trim() !== '' && wanted.every(w => t.includes(w)); }",
                               arg=[grid.element_handle(), list(wanted)], timeout=timeout_ms,
                               polling=POLL_MS)
    except PlaywrightTimeout:
        pass  # the caller's assertion says what the grid holds
    return grid.text_content() or ""
