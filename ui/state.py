"""The session's configuration store: the sidebar config, the compared configs, the page controls.

Widget values live under widget keys ("preset", "f.<field>", "compare", "ctl.<name>"); Streamlit drops
the key of a widget a page does not draw, so every value is also kept under a plain key ("_ae_*") and
re-seeded from there when the widget is drawn again: controls keep their values across pages.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from albert_core.config import FIELD_NAMES, ConfigError, ModelConfig
from albert_core.presets import DEFAULT_PRESET, PRESETS
from albert_core.share import CONTROLS, MAX_COMPARE, View, decode, nearest_preset

from .text import md

INIT = "_ae_init"  # the URL was read once for this session
VALID = "_ae_valid"  # last valid sidebar config
ERROR = "_ae_error"  # ConfigError of the sidebar fields, or None
CUSTOM = "_ae_custom"  # name -> ModelConfig added to the comparison by the user
COMPARE = "_ae_compare"  # names compared side by side, in order
CONTROL_STORE = "_ae_controls"  # control name -> value
URL_WARNINGS = "_ae_url_warnings"  # what the opened link got wrong
NOTICES = "_ae_notices"  # (level, text) from callbacks, shown once
OPEN = "_ae_open"  # sidebar section -> open or not, once the user has chosen (ui/sidebar._section)


def field_key(name: str) -> str:
    return f"f.{name}"


def init() -> None:
    """Read the URL once per session; later runs keep what the user changed."""
    ss = st.session_state
    if ss.get(INIT):
        return
    qp = st.query_params
    view, warnings = decode({k: qp.get_all(k) for k in qp})  # every value of a repeated key: decode says which won
    apply_view(view)
    ss[URL_WARNINGS] = warnings
    ss[NOTICES] = []
    ss[INIT] = True


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    i = 2
    while f"{name[:70]} #{i}" in taken:
        i += 1
    return f"{name[:70]} #{i}"


def apply_view(view: View) -> None:
    """Put a decoded view into the session (widget keys included)."""
    ss = st.session_state
    ss["preset"] = view.preset
    set_fields(view.config)
    custom: dict[str, ModelConfig] = {}
    names: list[str] = []
    for cfg in view.compare[:MAX_COMPARE]:
        if cfg.name in PRESETS and PRESETS[cfg.name] == cfg:
            if cfg.name not in names:
                names.append(cfg.name)
            continue
        base = f"{cfg.name[:70]} (custom)" if cfg.name in PRESETS else cfg.name
        name = _unique(base, set(PRESETS) | set(custom))
        custom[name] = cfg.replace(name=name)
        names.append(name)
    ss[CUSTOM] = custom
    ss[COMPARE] = names
    ss["compare"] = list(names)
    ss[CONTROL_STORE] = {k: view.controls.get(k, c.default) for k, c in CONTROLS.items()}
    for k in CONTROLS:
        ss.pop(f"ctl.{k}", None)


def set_fields(cfg: ModelConfig) -> None:
    """Show cfg in the sidebar's field widgets and make it the valid config."""
    ss = st.session_state
    for f in FIELD_NAMES:
        ss[field_key(f)] = getattr(cfg, f)
    ss[VALID] = cfg
    ss[ERROR] = None


def load_config(cfg: ModelConfig) -> str:
    """An imported config (config.json, the Hub) into the sidebar, with the Preset box on its nearest preset (the
    one it differs from in the fewest fields, as its link names it), not on the preset it replaced. Returns it."""
    base = nearest_preset(cfg)
    st.session_state["preset"] = base
    set_fields(cfg)
    return base


def on_preset_change() -> None:
    set_fields(PRESETS[st.session_state["preset"]])


def read_fields() -> ModelConfig:
    """The config the field widgets describe; if invalid, remember the error and keep the last valid one."""
    ss = st.session_state
    raw = {f: ss.get(field_key(f), getattr(ss[VALID], f)) for f in FIELD_NAMES}
    try:
        cfg = ModelConfig(**raw)
    except ConfigError as e:
        ss[ERROR] = e
        return ss[VALID]
    ss[VALID] = cfg
    ss[ERROR] = None
    return cfg


def config() -> ModelConfig:
    """The sidebar config (last valid one)."""
    return st.session_state[VALID]


def preset() -> str:
    return st.session_state.get("preset", DEFAULT_PRESET)


def compare() -> list[ModelConfig]:
    """Compared configs, in the order the user chose them."""
    ss = st.session_state
    custom = ss.get(CUSTOM, {})
    return [PRESETS[n] if n in PRESETS else custom[n] for n in ss.get(COMPARE, []) if n in PRESETS or n in custom]


def shown_configs() -> list[ModelConfig]:
    """The sidebar config first, then the compared ones; names made unique for legends.

    A preset edited in the sidebar keeps its fields but shows as "<preset> (edited)"; a config given another
    preset's name (albert-base's fields named bert-base) as "<name> (custom)", as the comparison names it, not as an
    edited copy of that preset.
    """
    first = config()
    first = first.replace(name=shown_name(first))
    out = [first]
    for cfg in compare():
        if cfg == first or any(cfg == o for o in out):
            continue
        out.append(cfg.replace(name=_unique(cfg.name, {o.name for o in out})))
    return out


def shown_name(cfg: ModelConfig) -> str:
    """The name the sidebar config is shown under: its own, or "<preset> (edited)" / "<preset> (custom)" when it
    carries a preset's name with other fields (see shown_configs)."""
    if cfg.name in PRESETS and PRESETS[cfg.name] != cfg:
        return f"{cfg.name[:70]} ({'edited' if cfg.name == preset() else 'custom'})"
    return cfg.name


def add_current_to_compare() -> None:
    """Button callback: snapshot the sidebar config into the comparison, and say what happened (the charts may not
    change: the sidebar config is always shown first, and its copy only once while the two are the same)."""
    ss = st.session_state
    cfg = config()
    names = list(ss.get(COMPARE, []))
    if cfg.name in PRESETS and PRESETS[cfg.name] == cfg:
        name = cfg.name
    else:
        custom = dict(ss.get(CUSTOM, {}))
        existing = next((n for n, c in custom.items() if c.replace(name=n) == cfg.replace(name=n)), None)
        # named as the charts show the sidebar config ("albert-base (edited)"): one config, one name, and its copy
        # shown once while the two are the same
        name = existing or _unique(shown_name(cfg), set(PRESETS) | set(custom))
        custom[name] = cfg.replace(name=name)
        ss[CUSTOM] = custom
    if name in names:
        notice("info", f"'{md(name)}' is already in the comparison.")
        return
    if len(names) >= MAX_COMPARE:
        notice("warning", f"At most {MAX_COMPARE} configs can be compared; remove one first.")
        return
    names.append(name)
    ss[COMPARE] = names
    ss["compare"] = names
    notice("success", f"Added '{md(name)}' to the comparison: it stays as it is now when you change the sidebar "
                      "config (shown once while the two are the same).")


def on_compare_change() -> None:
    st.session_state[COMPARE] = list(st.session_state["compare"])


def controls() -> dict[str, Any]:
    return st.session_state[CONTROL_STORE]


def view() -> View:
    """The current view, as the URL encodes it."""
    return View(config=config(), preset=preset(), compare=tuple(compare()), controls=dict(controls()))


def notice(level: str, text: str) -> None:
    st.session_state.setdefault(NOTICES, []).append((level, text))


def section_open(name: str, default: bool) -> bool:
    """Whether a sidebar section is open: the user's choice, or `default` until they make one."""
    return st.session_state.get(OPEN, {}).get(name, default)


def set_section_open(name: str, value: bool) -> None:
    st.session_state[OPEN] = {**st.session_state.get(OPEN, {}), name: bool(value)}


def pop_notices() -> list[tuple[str, str]]:
    out = list(st.session_state.get(NOTICES, []))
    st.session_state[NOTICES] = []
    return out
