"""Lazy sections: a page's content below its first screen in tabs whose hidden tabs neither run nor reach the
browser (Streamlit's st.tabs with a rerun on change). The open tab is a page control (albert_core.share.CONTROLS,
"<page>_tab"), so it survives a page change and a link carries it like the other controls.

Why: everything that arrives while Plotly's JavaScript loads is drawn in one task with the first chart
(docs/benchmarks.md, "Speed in the browser"); a first visit now sends only the first tab.
"""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from albert_core.share import CONTROLS

from . import state


def _store(name: str, by_label: dict[str, str]) -> None:
    """on_change: the user opened another tab; keep it (as the link's value, not the label)."""
    state.controls()[name] = by_label.get(st.session_state[f"ctl.{name}"], CONTROLS[name].default)


def lazy_tabs(name: str, labels: Mapping[str, str]):
    """Draw the tabs of control `name` ({link value: label}, in CONTROLS[name].choices order); return the open
    tab's link value and its container. Only that tab's content should be drawn (the others are never sent)."""
    choices = CONTROLS[name].choices
    if tuple(labels) != choices:
        raise ValueError(f"tabs {name!r}: labels given for {', '.join(labels)}; the link allows {', '.join(choices)}")
    key = f"ctl.{name}"
    current = state.controls()[name]
    st.session_state[key] = labels[current if current in labels else CONTROLS[name].default]
    by_label = {label: value for value, label in labels.items()}
    tabs = st.tabs(list(labels.values()), key=key, on_change=_store, args=(name, by_label))
    opened = by_label.get(st.session_state[key], CONTROLS[name].default)
    state.controls()[name] = opened
    return opened, tabs[choices.index(opened)]
