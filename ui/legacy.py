"""Run app.py first when Streamlit ran a page file on its own.

Streamlit 1.67 treats a folder named pages/ beside the entrypoint as a legacy (v1) multipage
app until the first st.navigation call in the process (PagesManager.uses_pages_directory;
AppTest resets it on every run). In that mode a deep link such as /parameters runs
pages/parameters.py alone, without app.py's sidebar and state. Each page calls `through_app()`
first: in that mode it runs app.py in place, whose st.navigation turns the legacy mode off and
runs this page inside the frame, then stops the lone run. The same script run continues, so a
button press or an upload that started it is not lost.

How a run begins, too: `after_warm_up()`, first in app.py and in `through_app()`, holds a run that starts during the
server's warm-up until its imports are done.
"""

from __future__ import annotations

import runpy
import threading
from pathlib import Path

import streamlit as st

APP = Path(__file__).resolve().parents[1] / "app.py"

# The server's warm-up (serve.warm_up), set when it is done; serve.py's lifespan puts its event here as it starts the
# warm-up's thread. None: no warm-up running in this process (AppTest, `streamlit run app.py`).
WARM_UP: threading.Event | None = None


def after_warm_up(timeout_s: float = 120.0) -> None:
    """A script run that starts while the server's warm-up is still importing waits for it to finish before it
    imports anything of the app. Two threads importing the same packages at once can deadlock: the warm-up inside
    albert_core/__init__ (holding that package's module lock) importing albert_core.step.compare, while the run,
    importing that submodule first, holds the submodule's lock and waits for its parent; Python then raises
    _DeadlockError in one of them, and the page showed it (a deep link opened as the server started, 2026-12-05:
    tests/browser/test_browser.py::test_deep_link_is_the_first_request_after_start). The run needs those modules
    anyway, so it waits about as long either way."""
    if WARM_UP is not None:
        WARM_UP.wait(timeout_s)


def through_app() -> None:
    after_warm_up()  # before the page imports the app's modules
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        runpy.run_path(str(APP), run_name="__main__")
        st.stop()
