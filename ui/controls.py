"""Page controls bound to the session store, so a value survives a page change and goes into the URL.

Each helper draws one widget with key "ctl.<name>" (a stable handle for tests). Before drawing, the
widget's value is set from the store (Streamlit forgets a widget's state, or keeps a stale one, when
the same key appears on another page); the widget's on_change callback writes a new value back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from albert_core.share import CONTROLS

from . import state


def _seed(name: str) -> str:
    key = f"ctl.{name}"
    st.session_state[key] = state.controls()[name]
    return key


def _store(name: str) -> None:
    """on_change: the user changed the widget; keep its value."""
    state.controls()[name] = st.session_state[f"ctl.{name}"]


def _keep(name: str, value: Any) -> Any:
    state.controls()[name] = value
    return value


def number(name: str, label: str, *, help: str | None = None, step: int = 1, where: Any = st) -> int:
    """An integer control within CONTROLS[name]'s range. No widget bounds: past them the browser kept the old value
    with only a red box and a tooltip, while the box went on showing what was typed (a new user typed batch 100,000
    and read results for 8). A value out of range is not applied; the box goes back to the value in use and a line
    under it says what was refused and what the range is."""
    ctl = CONTROLS[name]
    key = _seed(name)
    value = where.number_input(label, step=step, key=key, help=help, on_change=_store_number, args=(name,))
    refused = st.session_state.pop(_REFUSED + name, None)  # (the value typed,) or None
    if refused is not None:
        typed = "an empty box" if refused[0] is None else f"{refused[0]:,}"
        where.error(f"{label}: {typed} is out of range; it must be {ctl.lo:,} to {ctl.hi:,}. "
                    f"Still using {int(value):,}.")
    return _keep(name, int(value))


_REFUSED = "_ae_refused."  # session key prefix: a number typed out of its control's range, said once


def _store_number(name: str) -> None:
    """on_change of number(): keep a value within the control's range; note one outside it for the next run."""
    ctl, typed = CONTROLS[name], st.session_state[f"ctl.{name}"]
    if typed is not None and ctl.lo <= typed <= ctl.hi:
        state.controls()[name] = int(typed)
    else:
        st.session_state[_REFUSED + name] = (typed,)


def select(name: str, label: str, *, help: str | None = None, fmt: Callable[[str], str] = str, where: Any = st) -> str:
    ctl = CONTROLS[name]
    key = _seed(name)
    return _keep(name, where.selectbox(label, ctl.choices, key=key, help=help, format_func=fmt,
                                       on_change=_store, args=(name,)))


def radio(name: str, label: str, *, help: str | None = None, fmt: Callable[[str], str] = str, where: Any = st) -> str:
    ctl = CONTROLS[name]
    key = _seed(name)
    return _keep(name, where.radio(label, ctl.choices, key=key, help=help, format_func=fmt, horizontal=True,
                                   on_change=_store, args=(name,)))


def toggle(name: str, label: str, *, help: str | None = None, where: Any = st) -> bool:
    key = _seed(name)
    return _keep(name, bool(where.toggle(label, key=key, help=help, on_change=_store, args=(name,))))


def _flip(name: str) -> None:
    state.controls()[name] = not state.controls()[name]


def flip(name: str, labels: tuple[str, str], *, help: str | None = None, icons: tuple[str, str] | None = None,
         where: Any = st) -> bool:
    """A yes/no control drawn as a button that says what pressing it does: labels[0] while off, labels[1] while on.
    A button's code is already in the browser for the sidebar; a toggle's is a chunk of its own, which a first
    visit would load before drawing the page's first chart (docs/benchmarks.md, "Speed in the browser")."""
    value = bool(state.controls()[name])
    where.button(labels[value], key=f"ctl.{name}", help=help, icon=icons[value] if icons else None,
                 on_click=_flip, args=(name,))
    return value


def fraction(name: str, label: str, *, help: str | None = None, step: float = 0.05, where: Any = st) -> float:
    """A number from 0 up to (not including) 1 (a "probability" control)."""
    key = _seed(name)
    value = where.number_input(label, min_value=0.0, max_value=0.99, step=step, key=key, help=help, format="%.2f",
                               on_change=_store, args=(name,))
    return float(_keep(name, float(value)))


def text(name: str, label: str, *, help: str | None = None, placeholder: str | None = None, where: Any = st) -> str:
    """A line of text (a "names" control); the caller checks it (albert_core.share.parse_control) and says what is wrong."""
    key = _seed(name)
    return str(_keep(name, where.text_input(label, key=key, help=help, placeholder=placeholder, on_change=_store,
                                            args=(name,))))
