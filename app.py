"""ALBERT Explorer: where BERT's parameters and memory go, and how ALBERT answers it.

Run with `streamlit run app.py`. This file routes the pages and draws the shared sidebar;
every number on every page comes from albert_core.
"""

import os
import time
from pathlib import Path

import streamlit as st

from ui.legacy import after_warm_up

after_warm_up()  # a run that starts while the server's warm-up imports waits for it first (ui/legacy.py)

from ui import jobs, plots, report, sidebar, state, url  # noqa: E402

STARTED = time.perf_counter()  # benchmarks/runs.py: each run's seconds on the server (ALBERT_EXPLORER_RUN_LOG)

# the tab's icon served by this server (a :material/...: page icon is fetched from fonts.gstatic.com, offline too)
st.set_page_config(page_title="ALBERT Explorer", page_icon=str(Path(__file__).parent / "assets" / "favicon.png"),
                   layout="wide")

PAGES = [
    st.Page("pages/overview.py", title="Overview", icon=":material/home:", url_path="home", default=True),
    # the default page is served at / only; this hidden twin makes /overview open it too (not "Page not found")
    st.Page("pages/overview.py", title="Overview", icon=":material/home:", url_path="overview", visibility="hidden"),
    st.Page("pages/parameters.py", title="Parameters", icon=":material/bar_chart:", url_path="parameters"),
    st.Page("pages/memory.py", title="Memory", icon=":material/memory:", url_path="memory"),
    st.Page("pages/fit.py", title="Fit planner", icon=":material/dns:", url_path="fit"),
    st.Page("pages/compute.py", title="Compute", icon=":material/speed:", url_path="compute"),
    st.Page("pages/verify.py", title="Verify", icon=":material/fact_check:", url_path="verify"),
]

plots.narrow_screen_css()  # no Plotly toolbar over the charts on a phone
state.init()
page = st.navigation(PAGES)
# /nonexistent opened Overview without a word; /home is the default page's own name (Streamlit serves it at /)
url.say_unknown_page([p.url_path for p in PAGES] + ["home"], page.title)
side, link_slot = st.sidebar.container(), st.sidebar.container()
state.read_fields()  # the sidebar config, settled before the page reads it
url.show_url_warnings()
# the sidebar before the page: drawn after it (for an earlier first chart), a click soon after a load on a busy
# machine sent the Preset selectbox back as its first option and loaded bert-base over the link (docs/app.md)
sidebar.render(side)
sidebar.say_refused_on_narrow_screens()  # on a phone the sidebar starts closed: a refused config is said above the page
try:
    page.run()
finally:
    plots.measure_width()  # at the foot of the page: the width the next run wraps figure titles for
query = url.sync()
with url.show_link(link_slot, query):
    report.button(tuple(state.shown_configs()), url.link(query))  # the view as one HTML file, for a design document
if plots.view() is not None:  # a run at the browser's width: the first page is drawn in full
    # now the warm measurement process starts, once per server (ui/jobs.py); on Verify at once: a shared Verify link's
    # first press would otherwise wait for the process's imports (issue 52)
    jobs.prewarm(0.0 if page.url_path == "verify" else jobs.PREWARM_DELAY_S)
if os.environ.get("ALBERT_EXPLORER_RUN_LOG"):  # one line per finished run: its page and seconds on the server
    with open(os.environ["ALBERT_EXPLORER_RUN_LOG"], "a") as log:
        log.write(f"{page.url_path or 'home'} {time.perf_counter() - STARTED:.4f}\n")
