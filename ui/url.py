"""Keep the browser's query string equal to the view, and show a link that reproduces it."""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from albert_core.config import ModelConfig
from albert_core.share import VERIFY_PATH, encode, verify_query
from albert_core.workload import Workload

from . import state
from .text import md

URL_WARNED = "_ae_url_warned"  # the view (its query) the opened link's warnings are about, once it was shown


def sync() -> dict[str, str]:
    """Write the current view into st.query_params (only when it changed); return it."""
    q = encode(state.view())
    if st.query_params.to_dict() != q:
        st.query_params.from_dict(q)
    if st.session_state.get(state.URL_WARNINGS) and URL_WARNED not in st.session_state:
        st.session_state[URL_WARNED] = q  # the view the link was rewritten to, which the warnings explain
    return q


def link(q: dict[str, str]) -> str:
    """The full URL of this page and view (relative when the browser's URL is unknown)."""
    base = st.context.url or ""
    return base + ("?" + urlencode(q, safe=",") if q else "")


def verify_link(cfg: ModelConfig, w: Workload) -> str:
    """A link, relative to this page (so under any base path), that opens Verify on cfg with w's batch, length,
    precision, attention, optimizer, checkpointing and fine-tuning: the planner number's step."""
    q = verify_query(state.view(), cfg, w)
    return VERIFY_PATH + ("?" + urlencode(q, safe=",") if q else "")


def measure_on_verify(cfg: ModelConfig, w: Workload) -> str:
    """The markdown link placed under a planner number."""
    return f"[measure this on Verify]({verify_link(cfg, w)})"


def show_link(where, q: dict[str, str]):
    """The "Share this view" popover with the link; returned, for the report's button. A popover's content is
    drawn in the browser only when opened: st.code's highlighter (1.5 MB of JavaScript) and the download
    button's code are then not loaded before a page's first chart (docs/benchmarks.md, "Speed in the browser")."""
    box = where.popover("Share this view", icon=":material/link:", width="stretch")
    with box:
        st.caption("Opening this link reproduces the configs and controls of this page.")
        st.code(link(q), language=None, wrap_lines=True)
    return box


def say_unknown_page(paths: list[str], shown: str) -> None:
    """Where the link named a page this app does not have, say so: Streamlit opens the default page instead without
    a word (st.navigation resolves an unknown page to its fallback, so the script sees no "page not found").
    The name asked for is Streamlit's own record of the request (PagesManager.intended_page_name)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    asked = getattr(getattr(ctx, "pages_manager", None), "intended_page_name", None)
    if asked and asked.strip("/") not in paths:
        st.warning(f"This app has no page '{md(asked)}': showing {md(shown)}. The pages: "
                   + ", ".join(f"/{p}" for p in paths if p and p not in ("overview", "home")) + ".")


def _dismiss() -> None:
    st.session_state[state.URL_WARNINGS] = []


def show_url_warnings() -> None:
    """Problems in the link that opened the session: each names its key and what was used instead. They stay (the
    width rerun, page changes) until dismissed or until the view changes, then they are about another view."""
    ss = st.session_state
    warnings = ss.get(state.URL_WARNINGS, [])
    if not warnings:
        return
    if URL_WARNED in ss and encode(state.view()) != ss[URL_WARNED]:
        ss[state.URL_WARNINGS] = []  # the user changed the view: the link's view is gone
        return
    with st.container(key="url_warnings"):
        st.warning("Some values in the link were ignored, so this view differs from the one the link asked for "
                   "(the address bar now holds the view shown):\n\n" + "\n".join(f"- {md(w)}" for w in warnings))
        st.button("Dismiss", key="url_warnings_dismiss", on_click=_dismiss)
