"""Run app.py first when Streamlit ran a page file on its own.

Streamlit 1.67 treats a folder named pages/ beside the entrypoint as a legacy (v1) multipage
app until the first st.navigation call in the process (PagesManager.uses_pages_directory;
AppTest resets it on every run). In that mode a deep link such as /parameters runs
pages/parameters.py alone, without app.py's sidebar and state. Each page calls `through_app()`
first: in that mode it runs app.py in place, whose st.navigation turns the legacy mode off and
runs this page inside the frame, then stops the lone run. The same script run continues, so a
button press or an upload that started it is not lost.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import streamlit as st

APP = Path(__file__).resolve().parents[1] / "app.py"


def through_app() -> None:
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        runpy.run_path(str(APP), run_name="__main__")
        st.stop()
